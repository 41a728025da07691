//! {{name}}: a plain WebAssembly component. Its world is `wit/world.wit`; each function it exports is a CLAT
//! tool, and any other host that runs components runs it as it is.

wit_bindgen::generate!({ path: "wit", world: "plugin" });

struct Plugin;

impl Guest for Plugin {
    fn hello(name: String) -> String {
        format!("Hello, {name}!")
    }
}

export!(Plugin);

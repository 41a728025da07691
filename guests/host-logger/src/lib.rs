//! A plain component written for another host: it imports that host's
//! `example:host/logger`, which CLAT does not link. Installing it is refused,
//! with the import named.

wit_bindgen::generate!({ path: "wit", world: "logged" });

struct Logged;

impl Guest for Logged {
    fn work(task: String) -> String {
        example::host::logger::log(&format!("working on {task}"));
        format!("did {task}")
    }
}

export!(Logged);

//! A plain WASI command: a real component that does not implement the
//! `clat-plugin` world. CLAT must refuse it with a clear reason.

fn main() {
    println!("I am a command, not a CLAT plugin");
}

//! Paths of the guests built from `guests/` for wasm32-wasip2 (see build.rs):
//! `HELLO_WASM`, `PROJECT_NOTES_WASM`, `SUMMARIZE_WASM`, `ASK_NAME_WASM`,
//! `TEST_GUESTS_WASM`, `CONTRACT_WASM` (the WASM half of the contract tests),
//! `NOT_A_PLUGIN_WASM` (a WASI command), `TRAP_ON_LOAD_WASM`, and installable
//! package directories `HELLO_PACKAGE`, `PROJECT_NOTES_PACKAGE`,
//! `SUMMARIZE_PACKAGE`, `ASK_NAME_PACKAGE`.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

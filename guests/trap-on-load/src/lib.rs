//! A plugin that traps while listing its tools. CLAT must isolate it.

use clat_guest::{Args, RawPlugin, ToolOutput, ToolSpec};

struct TrapOnLoad;

impl RawPlugin for TrapOnLoad {
    fn tools() -> Vec<ToolSpec> {
        eprintln!("about to fail; secret=hunter2hunter2");
        panic!("list-tools traps on purpose")
    }

    fn call(_name: &str, _args: Args) -> Result<ToolOutput, String> {
        Err("never listed".into())
    }
}

clat_guest::export_raw_plugin!(TrapOnLoad);

//! The plugin manifest parser (`clat-plugin.toml`): any text is refused with
//! an error naming the file, or gives a manifest whose name, version and entry
//! keep the rules, and which written out and read again is the same manifest.
#![no_main]

use std::path::{Component, Path};

use clat_host::limits::PLUGIN_NAME_MAX_CHARS;
use clat_host::supply::packages::parse_manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("pkg/clat-plugin.toml");
    match parse_manifest(path, text) {
        Err(e) => assert!(e.to_string().contains("pkg/clat-plugin.toml"), "{e}"),
        Ok(manifest) => {
            assert!(!manifest.name.is_empty() && manifest.name.len() <= PLUGIN_NAME_MAX_CHARS);
            let entry = Path::new(&manifest.entry);
            assert!(!manifest.entry.is_empty() && entry.components().all(|c| matches!(c, Component::Normal(_))));
            let written = toml::to_string(&manifest).expect("a manifest can be written");
            assert_eq!(parse_manifest(path, &written).expect("a written manifest reads back"), manifest);
        }
    }
});

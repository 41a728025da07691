//! The contract is defined once, in `wit/`; the guest SDK carries a copy of it
//! inside its crate (`guests/clat-guest/wit/`) so that a plugin author's copy
//! of the SDK builds from anywhere. The copy must be the contract, byte for
//! byte: a change to `wit/` that is not copied fails here.

use std::path::PathBuf;

#[test]
fn the_guest_sdk_carries_the_contract_unchanged() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let contract = root.join("wit");
    let copy = root.join("guests/clat-guest/wit");
    let names = |dir: &PathBuf| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&contract), names(&copy), "the same files");
    for name in names(&contract) {
        let (a, b) = (std::fs::read(contract.join(&name)).unwrap(), std::fs::read(copy.join(&name)).unwrap());
        assert!(a == b, "guests/clat-guest/wit/{name} differs from wit/{name}: copy the contract into the SDK");
    }
}

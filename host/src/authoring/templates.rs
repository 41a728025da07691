//! Project templates for `clat plugin new NAME`: a manifest, the build
//! configuration, one tool with a test case (`cases.jsonl`), a unit test in
//! the language's own runner with a mock host (JavaScript and Python
//! components) and a README of its commands, with `{{name}}` (and friends)
//! filled in; a component project also gets the guest SDK (which `sdk.rs`
//! records and updates). A plain component (`--kind component`) gets a WIT
//! world of its own (`wit/world.wit`) and no SDK. A Rust project
//! also gets the guest SDK (`vendor/clat-guest`), the very files of
//! `guests/clat-guest` this clat was built with, and the lock file the
//! repository's guests are tested with.

use std::path::{Path, PathBuf};

use super::{AuthoringError, Language, io};
use crate::names::{ExternalKind, external_tool_name};
use crate::supply::packages::{PackageKind, parse_manifest};

/// One file of a template: its path in the project and its text.
type TemplateFile = (&'static str, &'static str);

const RUST_WASM: &[TemplateFile] = &[
    ("Cargo.toml", include_str!("../../templates/rust-wasm/Cargo.toml")),
    ("Cargo.lock", include_str!("../../../guests/Cargo.lock")),
    ("src/lib.rs", include_str!("../../templates/rust-wasm/lib.rs")),
    ("clat-plugin.toml", include_str!("../../templates/rust-wasm/clat-plugin.toml")),
    ("cases.jsonl", include_str!("../../templates/rust-wasm/cases.jsonl")),
    ("README.md", include_str!("../../templates/rust-wasm/README.md")),
    (".gitignore", include_str!("../../templates/rust-wasm/gitignore")),
    ("vendor/clat-guest/Cargo.toml", include_str!("../../templates/sdk/Cargo.toml")),
    ("vendor/clat-guest/README.md", include_str!("../../../guests/clat-guest/README.md")),
    ("vendor/clat-guest/src/lib.rs", include_str!("../../../guests/clat-guest/src/lib.rs")),
    ("vendor/clat-guest/src/tool.rs", include_str!("../../../guests/clat-guest/src/tool.rs")),
    ("vendor/clat-guest/src/host.rs", include_str!("../../../guests/clat-guest/src/host.rs")),
    ("vendor/clat-guest/src/host_error_text.rs", include_str!("../../../guests/clat-guest/src/host_error_text.rs")),
    ("vendor/clat-guest/src/form.rs", include_str!("../../../guests/clat-guest/src/form.rs")),
    ("vendor/clat-guest/src/http.rs", include_str!("../../../guests/clat-guest/src/http.rs")),
    ("vendor/clat-guest/wit/clat.wit", include_str!("../../../wit/clat.wit")),
];

const JAVASCRIPT_WASM: &[TemplateFile] = &[
    ("package.json", include_str!("../../templates/javascript-wasm/package.json")),
    ("src/index.js", include_str!("../../templates/javascript-wasm/src/index.js")),
    ("src/clat.js", include_str!("../../templates/javascript-wasm/src/clat.js")),
    ("test/hello.test.js", include_str!("../../templates/javascript-wasm/test/hello.test.js")),
    ("test/mock-host.js", include_str!("../../templates/javascript-wasm/test/mock-host.js")),
    ("test/register-mock-host.js", include_str!("../../templates/javascript-wasm/test/register-mock-host.js")),
    ("wit/clat.wit", include_str!("../../../wit/clat.wit")),
    ("clat-plugin.toml", include_str!("../../templates/javascript-wasm/clat-plugin.toml")),
    ("cases.jsonl", include_str!("../../templates/javascript-wasm/cases.jsonl")),
    ("README.md", include_str!("../../templates/javascript-wasm/README.md")),
    (".gitignore", include_str!("../../templates/javascript-wasm/gitignore")),
];

const PYTHON_WASM: &[TemplateFile] = &[
    ("pyproject.toml", include_str!("../../templates/python-wasm/pyproject.toml")),
    ("app.py", include_str!("../../templates/python-wasm/app.py")),
    ("clat.py", include_str!("../../templates/python-wasm/clat.py")),
    ("clat_http.py", include_str!("../../templates/python-wasm/clat_http.py")),
    ("clat_testing.py", include_str!("../../templates/python-wasm/clat_testing.py")),
    ("test_app.py", include_str!("../../templates/python-wasm/test_app.py")),
    ("wit/clat.wit", include_str!("../../../wit/clat.wit")),
    ("wit/http.wit", include_str!("../../templates/python-wasm/wit/http.wit")),
    ("wit/deps/http/http.wit", include_str!("../../templates/python-wasm/wit/deps/http/http.wit")),
    ("wit/deps/io/io.wit", include_str!("../../templates/python-wasm/wit/deps/io/io.wit")),
    ("wit/deps/clocks/clocks.wit", include_str!("../../templates/python-wasm/wit/deps/clocks/clocks.wit")),
    ("wit/deps/random/random.wit", include_str!("../../templates/python-wasm/wit/deps/random/random.wit")),
    ("wit/deps/cli/cli.wit", include_str!("../../templates/python-wasm/wit/deps/cli/cli.wit")),
    (
        "wit/deps/filesystem/filesystem.wit",
        include_str!("../../templates/python-wasm/wit/deps/filesystem/filesystem.wit"),
    ),
    ("wit/deps/sockets/sockets.wit", include_str!("../../templates/python-wasm/wit/deps/sockets/sockets.wit")),
    ("clat-plugin.toml", include_str!("../../templates/python-wasm/clat-plugin.toml")),
    ("cases.jsonl", include_str!("../../templates/python-wasm/cases.jsonl")),
    ("README.md", include_str!("../../templates/python-wasm/README.md")),
    (".gitignore", include_str!("../../templates/python-wasm/gitignore")),
];

/// A plain component's world, the same in every language.
const COMPONENT_WIT: TemplateFile = ("wit/world.wit", include_str!("../../templates/component-wit/world.wit"));

const RUST_COMPONENT: &[TemplateFile] = &[
    ("Cargo.toml", include_str!("../../templates/rust-component/Cargo.toml")),
    ("Cargo.lock", include_str!("../../../guests/Cargo.lock")),
    ("src/lib.rs", include_str!("../../templates/rust-component/lib.rs")),
    COMPONENT_WIT,
    ("clat-plugin.toml", include_str!("../../templates/rust-component/clat-plugin.toml")),
    ("cases.jsonl", include_str!("../../templates/rust-component/cases.jsonl")),
    ("README.md", include_str!("../../templates/rust-component/README.md")),
    (".gitignore", include_str!("../../templates/rust-component/gitignore")),
];

const JAVASCRIPT_COMPONENT: &[TemplateFile] = &[
    ("package.json", include_str!("../../templates/javascript-component/package.json")),
    ("src/index.js", include_str!("../../templates/javascript-component/src/index.js")),
    ("test/hello.test.js", include_str!("../../templates/javascript-component/test/hello.test.js")),
    COMPONENT_WIT,
    ("clat-plugin.toml", include_str!("../../templates/javascript-component/clat-plugin.toml")),
    ("cases.jsonl", include_str!("../../templates/javascript-component/cases.jsonl")),
    ("README.md", include_str!("../../templates/javascript-component/README.md")),
    (".gitignore", include_str!("../../templates/javascript-component/gitignore")),
];

const PYTHON_COMPONENT: &[TemplateFile] = &[
    ("pyproject.toml", include_str!("../../templates/python-component/pyproject.toml")),
    ("app.py", include_str!("../../templates/python-component/app.py")),
    COMPONENT_WIT,
    ("clat-plugin.toml", include_str!("../../templates/python-component/clat-plugin.toml")),
    ("cases.jsonl", include_str!("../../templates/python-component/cases.jsonl")),
    ("README.md", include_str!("../../templates/python-component/README.md")),
    (".gitignore", include_str!("../../templates/python-component/gitignore")),
];

const PYTHON_MCP: &[TemplateFile] = &[
    ("pyproject.toml", include_str!("../../templates/python-mcp/pyproject.toml")),
    ("requirements.txt", include_str!("../../templates/python-mcp/requirements.txt")),
    ("server.py", include_str!("../../templates/python-mcp/server.py")),
    ("clat-plugin.toml", include_str!("../../templates/python-mcp/clat-plugin.toml")),
    ("cases.jsonl", include_str!("../../templates/python-mcp/cases.jsonl")),
    ("README.md", include_str!("../../templates/python-mcp/README.md")),
    (".gitignore", include_str!("../../templates/python-mcp/gitignore")),
];

const JAVASCRIPT_MCP: &[TemplateFile] = &[
    ("package.json", include_str!("../../templates/javascript-mcp/package.json")),
    ("src/server.js", include_str!("../../templates/javascript-mcp/src/server.js")),
    ("clat-plugin.toml", include_str!("../../templates/javascript-mcp/clat-plugin.toml")),
    ("cases.jsonl", include_str!("../../templates/javascript-mcp/cases.jsonl")),
    ("README.md", include_str!("../../templates/javascript-mcp/README.md")),
    (".gitignore", include_str!("../../templates/javascript-mcp/gitignore")),
];

/// Files written executable.
const EXECUTABLE: &[&str] = &["server.py"];

/// Files that are copied as they are (no placeholders).
const VERBATIM: &[&str] = &[
    "Cargo.lock",
    "vendor/clat-guest/src/",
    "vendor/clat-guest/wit/",
    "wit/",
    "src/clat.js",
    "clat.py",
    "clat_http.py",
];

/// The files of the template for `language` and `kind`.
pub(super) fn template(language: Language, kind: PackageKind) -> Result<&'static [TemplateFile], AuthoringError> {
    match (language, kind) {
        (Language::Rust, PackageKind::Wasm) => Ok(RUST_WASM),
        (Language::Javascript, PackageKind::Wasm) => Ok(JAVASCRIPT_WASM),
        (Language::Python, PackageKind::Wasm) => Ok(PYTHON_WASM),
        (Language::Python, PackageKind::McpStdio) => Ok(PYTHON_MCP),
        (Language::Javascript, PackageKind::McpStdio) => Ok(JAVASCRIPT_MCP),
        (Language::Rust, PackageKind::Component) => Ok(RUST_COMPONENT),
        (Language::Javascript, PackageKind::Component) => Ok(JAVASCRIPT_COMPONENT),
        (Language::Python, PackageKind::Component) => Ok(PYTHON_COMPONENT),
        (language, kind) => Err(AuthoringError::Unsupported(format!(
            "there is no {} template for kind {}: --kind wasm and --kind component have rust, javascript and python; --kind mcp-stdio has python and javascript (a Rust plugin is a WASM component)",
            language.as_str(),
            kind.as_str()
        ))),
    }
}

/// The text of one file of the `language` component template.
pub(super) fn template_file(language: Language, path: &str) -> Option<&'static str> {
    template(language, PackageKind::Wasm).ok()?.iter().find(|(p, _)| *p == path).map(|(_, text)| *text)
}

/// Write a new project `NAME` inside `parent` (it must not exist yet). Returns
/// the project directory and the files written, relative to it.
pub fn scaffold(
    parent: &Path,
    name: &str,
    language: Language,
    kind: PackageKind,
) -> Result<(PathBuf, Vec<String>), AuthoringError> {
    // The name is checked by the manifest's own rules, before anything is written.
    let manifest = format!("name = {name:?}\nversion = \"0.1.0\"\nkind = \"wasm\"\nentry = \"x.wasm\"\n");
    parse_manifest(Path::new("NAME"), &manifest).map_err(|e| {
        AuthoringError::Invalid(e.to_string().replace("NAME: ", "the plugin name: ").replace("name \"", "\""))
    })?;
    let files = template(language, kind)?;
    let dir = parent.join(name);
    if dir.symlink_metadata().is_ok() {
        return Err(AuthoringError::Exists(dir));
    }
    let (external, prefix) = match kind {
        PackageKind::Wasm | PackageKind::Component => (ExternalKind::Wasm, "wasm_"),
        PackageKind::McpStdio => (ExternalKind::Mcp, "mcp_"),
    };
    let tool_prefix = external_tool_name(external, name, "x");
    let tool_prefix = tool_prefix.strip_prefix(prefix).and_then(|p| p.strip_suffix("_x")).unwrap_or(name);
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{tool_prefix}}", tool_prefix)
            .replace("{{sdk_version}}", env!("CARGO_PKG_VERSION"))
    };
    // Written into a staging directory renamed into place: a failure leaves nothing behind.
    let staging = parent.join(format!(".{name}.new-{}", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut written = Vec::new();
        for (path, text) in files {
            let target = staging.join(path);
            std::fs::create_dir_all(target.parent().unwrap_or(&staging))
                .map_err(io(format!("cannot create {}", target.display())))?;
            let verbatim = VERBATIM.iter().any(|v| path.starts_with(v));
            let contents = if verbatim { text.to_string() } else { fill(text) };
            std::fs::write(&target, contents).map_err(io(format!("cannot write {}", target.display())))?;
            if EXECUTABLE.contains(path) {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                    .map_err(io(format!("cannot make {} executable", target.display())))?;
            }
            written.push(path.to_string());
        }
        std::fs::rename(&staging, &dir).map_err(io(format!("cannot create {}", dir.display())))?;
        Ok(written)
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    Ok((dir, written?))
}

//! The plugin author's path: `clat plugin new` writes a project from a
//! template (`templates.rs`), `clat plugin build` runs the language's
//! toolchain and assembles the package in `dist/` (`build.rs`), and `clat
//! plugin test` runs the author's cases (`cases.rs`: one JSON object per line,
//! what to call and what to expect) through the same pipeline as `clat call`;
//! `clat plugin call | test` of a JavaScript or Python project run the edit
//! loop's package instead (`dev.rs`: a runtime built once, the sources read at
//! each call); `sdk.rs` keeps the guest SDK a project carries current (`clat
//! plugin sdk update`). The CLI (`cli/author.rs`) drives them; nothing here
//! prints but the edit loop's line when it falls back to a build or builds its
//! Python runtime again.

pub mod build;
pub mod cases;
pub mod dev;
pub mod sdk;
pub mod templates;

use std::path::PathBuf;

/// The languages a plugin project can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Language {
    #[value(alias = "rs")]
    Rust,
    /// JavaScript (`js`; `ts`: TypeScript compiled to JavaScript first is JavaScript here).
    #[value(alias = "js", alias = "ts")]
    Javascript,
    #[value(alias = "py")]
    Python,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Javascript => "javascript",
            Language::Python => "python",
        }
    }
}

/// Why an authoring step failed; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum AuthoringError {
    #[error("{0} already exists; choose another name or remove it")]
    Exists(PathBuf),
    #[error("{0}")]
    Unsupported(String),
    #[error("{tool} is not installed or not on PATH: {install}")]
    MissingToolchain { tool: String, install: String },
    #[error("the build failed ({command}); its output is above")]
    BuildFailed { command: String },
    /// The language's own parser refused a source file: where and why, as it says it.
    #[error("{language} syntax error, nothing was built:\n{report}")]
    Syntax { language: &'static str, report: String },
    #[error("{0}")]
    Invalid(String),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
}

pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> AuthoringError {
    let context = context.into();
    move |source| AuthoringError::Io { context, source }
}

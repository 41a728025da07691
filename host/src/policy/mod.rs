//! Who may do what: the permission pipeline's rules, kept apart from the
//! pipeline itself (`registry/pipeline.rs`). The mode table and approvers
//! (`permissions.rs`), approvals kept by who asked (`approvals.rs`), an
//! extension's identity they are bound to (`identity.rs`), annotations to
//! effects (`effects.rs`), and server tools' definitions pinned per project
//! (`pins.rs`).

pub mod approvals;
pub mod effects;
pub mod identity;
pub mod permissions;
pub mod pins;

//! node_modules from the store: package imports, batches, dependency symlinks, hard-linked dirs.

pub mod dependency_links;
pub mod hard_link_dir;
pub mod import;
pub mod link;
pub mod link_stored;
pub mod symlink_entry;

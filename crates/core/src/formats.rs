//! The text formats pnpm writes and reads: JSON, YAML documents, manifests, JS values.

pub mod js;
pub mod json;
pub mod manifest;
pub mod value;
pub mod yaml_document;

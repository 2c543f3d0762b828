//! Reads YAML documents: `pnpm-lock.yaml` for the native frozen install, which has to know the
//! lockfile before pnpm has read it (pnpm hands its lockfile to hooks only after its up-to-date
//! check, which the native install must come before). With config dependencies the file holds
//! two documents: theirs first, then the project's.

use thiserror::Error;

use crate::error_code::ErrorCode;
pub use yaml_rust2::Yaml;
use yaml_rust2::YamlLoader;

/// A document that is not YAML, with the position the parser stopped at.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct YamlError(#[from] yaml_rust2::ScanError);

impl ErrorCode for YamlError {
    fn code(&self) -> &'static str {
        "ERR_CAS_NATIVE_YAML_SYNTAX"
    }
}

/// Every document of `text`, in order.
pub fn parse(text: &str) -> Result<Vec<Yaml>, YamlError> {
    Ok(YamlLoader::load_from_str(text)?)
}

#[cfg(test)]
mod tests;

//! Reads one YAML document: `pnpm-lock.yaml` for the native frozen install, which has to know
//! the lockfile before pnpm has read it (pnpm hands its lockfile to hooks only after its
//! up-to-date check, which the native install must come before).

use thiserror::Error;
pub use yaml_rust2::Yaml;
use yaml_rust2::YamlLoader;

/// A document that is not YAML, with the position the parser stopped at.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct YamlError(#[from] yaml_rust2::ScanError);

impl YamlError {
    pub fn code(&self) -> &'static str {
        "ERR_CAS_NATIVE_YAML_SYNTAX"
    }
}

/// The first document of `text` (`Null` for an empty one).
pub fn parse(text: &str) -> Result<Yaml, YamlError> {
    let docs = YamlLoader::load_from_str(text)?;
    Ok(docs.into_iter().next().unwrap_or(Yaml::Null))
}

#[cfg(test)]
mod tests;

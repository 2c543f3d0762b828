//! `parseYaml`: a YAML document as js-yaml's `load` (pnpm's reader) reads it, as JSON text
//! (`JSON.parse` gives the values; see `yaml_document` for what is read and what is refused).

use napi_derive::napi;

use super::error::NativeError;
use cas_native_core::yaml_document;

/// Only ever returned to JS.
#[napi(object, object_to_js = true, object_from_js = false)]
pub struct ParsedYaml {
    /// The document as JSON; absent when the text has none (js-yaml gives `undefined`).
    pub json: Option<String>,
    pub error: Option<NativeError>,
}

/// Reads the one document of a YAML text; a refusal comes back as data.
#[napi]
pub fn parse_yaml(text: String) -> ParsedYaml {
    match yaml_document::load_json(&text) {
        Ok(json) => ParsedYaml { json, error: None },
        Err(e) => ParsedYaml {
            json: None,
            error: Some(NativeError::of(&e)),
        },
    }
}

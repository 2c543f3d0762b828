//! `parseYamlDocuments`: YAML documents as plain JS values, as js-yaml (pnpm's reader) gives them:
//! mappings as objects in document order, sequences as arrays, scalars as strings, numbers,
//! booleans and `null`.

use napi::bindgen_prelude::{Env, Null, Object, Result, ToNapiValue, TypeName, ValueType};
use napi::sys;
use napi_derive::napi;

use super::error::NativeError;
use cas_native_core::json;
use cas_native_core::yaml_document::{self, Yaml};

/// One YAML node on its way to JS.
pub struct JsYaml(Yaml);

impl TypeName for JsYaml {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for JsYaml {
    unsafe fn to_napi_value(raw_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let env = Env::from(raw_env);
        match val.0 {
            Yaml::String(s) => String::to_napi_value(raw_env, s),
            Yaml::Integer(i) => f64::to_napi_value(raw_env, i as f64),
            // yaml-rust2's own reading of a float (`.inf`, `-.inf`, `.nan` too), as js-yaml's.
            real @ Yaml::Real(_) => f64::to_napi_value(raw_env, real.as_f64().unwrap_or(f64::NAN)),
            Yaml::Boolean(b) => bool::to_napi_value(raw_env, b),
            Yaml::Array(items) => {
                Vec::<JsYaml>::to_napi_value(raw_env, items.into_iter().map(JsYaml).collect())
            }
            Yaml::Hash(entries) => {
                let mut object = Object::new(&env)?;
                for (key, value) in entries {
                    object.set(scalar_key(key), JsYaml(value))?;
                }
                Object::to_napi_value(raw_env, object)
            }
            Yaml::Null | Yaml::Alias(_) | Yaml::BadValue => Null::to_napi_value(raw_env, Null),
        }
    }
}

/// A mapping key as the property name JS would give it (a float as `String(number)`).
fn scalar_key(key: Yaml) -> String {
    match key {
        real @ Yaml::Real(_) => json::number_to_string(real.as_f64().unwrap_or(f64::NAN)),
        Yaml::String(s) => s,
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        _ => "null".to_owned(),
    }
}

/// Only ever returned to JS.
#[napi(object, object_to_js = true, object_from_js = false)]
pub struct ParsedYaml {
    #[napi(ts_type = "unknown[]")]
    pub documents: Option<Vec<JsYaml>>,
    pub error: Option<NativeError>,
}

/// Parses every document of a YAML text; a syntax error comes back as data.
#[napi]
pub fn parse_yaml_documents(text: String) -> ParsedYaml {
    match yaml_document::parse(&text) {
        Ok(docs) => ParsedYaml {
            documents: Some(docs.into_iter().map(JsYaml).collect()),
            error: None,
        },
        Err(e) => ParsedYaml {
            documents: None,
            error: Some(NativeError::of(&e)),
        },
    }
}

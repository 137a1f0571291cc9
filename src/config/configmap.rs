//! The kpt ConfigMap form: `kpt fn eval --exec cutover -- mode=metallb-image-prepull waitTimeout=5m`
//! arrives as ConfigMap `function-input` whose `data` maps onto the same fields as `spec:`.
//!
//! `data` values are always strings. Each key (dots descend into nested fields, e.g.
//! `sourceRef.name`) is typed by looking its field up in the kind's JSON schema: string fields
//! keep the text as is (so `namespace=0123` stays a string), every other field parses it as YAML
//! with the engine's reader (`images=[a:1, b:2]`, `upgrade=true`, `runAsUser=65534`).

use serde_json::Value as Json;
use serde_yaml::{Mapping, Value};

use super::{FunctionConfig, Kind, decode, schema};
use crate::krm::{KrmObject, KrmResult};
use crate::modes::announcer::LoadBalancerAnnouncerSpec;
use crate::modes::capm3::Capm3OSImageSourcesSpec;
use crate::modes::prepull::MetalLBImagePrepullSpec;

/// The data key that selects the mode.
pub const MODE_KEY: &str = "mode";

/// Parses a ConfigMap function config.
pub fn parse(fc: &Value) -> Result<FunctionConfig, KrmResult> {
    let err = |message: String, path: &str| KrmResult::error(message).about(fc).field(path);
    let data = match fc.get("data") {
        None | Some(Value::Null) => Mapping::new(),
        Some(Value::Mapping(m)) => m.clone(),
        Some(_) => return Err(err("ConfigMap data is not a mapping".into(), "data")),
    };
    if data.is_empty() {
        // What kpt sends when it was given no config at all (`kpt fn eval --exec cutover`).
        return Err(err(
            format!(
                "no function config (ConfigMap {} has no data): cutover needs one to pick its mode; {}",
                fc.name(),
                super::config_help()
            ),
            "data.mode",
        ));
    }
    let mode = match data.get(MODE_KEY) {
        Some(Value::String(mode)) => mode.clone(),
        Some(other) => {
            return Err(err("mode must be a string".into(), "data.mode").current(other.clone()));
        }
        None => {
            return Err(err(
                format!(
                    "ConfigMap {} has no `mode`: add {}",
                    fc.name(),
                    Kind::ALL.map(|k| format!("mode={}", k.mode())).join(" or ")
                ),
                "data.mode",
            ));
        }
    };
    let Some(kind) = Kind::from_name(&mode) else {
        return Err(err(
            format!("unknown mode {mode:?}: expected {}", Kind::modes()),
            "data.mode",
        )
        .current(mode));
    };
    let spec_schema = schema::spec_schema(kind);
    let mut spec = Mapping::new();
    for (key, value) in data {
        let Value::String(key) = key else {
            return Err(err("ConfigMap data keys must be strings".into(), "data"));
        };
        if key == MODE_KEY {
            continue;
        }
        let Value::String(text) = value else {
            return Err(err(
                format!("data.{key} must be a string (ConfigMap data holds only strings)"),
                &format!("data.{key}"),
            )
            .current(value));
        };
        let path: Vec<&str> = key.split('.').collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(err(
                format!("data key {key:?} has an empty segment"),
                &format!("data.{key}"),
            ));
        }
        let typed = typed_value(&text, field_schema(&spec_schema, &path));
        insert_path(&mut spec, &path, typed).map_err(|m| err(m, &format!("data.{key}")))?;
    }
    let spec = Value::Mapping(spec);
    match kind {
        Kind::MetalLBImagePrepull => decode::<MetalLBImagePrepullSpec>(fc, spec, "data.")
            .map(|spec| FunctionConfig::MetalLBImagePrepull(Box::new(spec))),
        Kind::LoadBalancerAnnouncer => decode::<LoadBalancerAnnouncerSpec>(fc, spec, "data.")
            .map(FunctionConfig::LoadBalancerAnnouncer),
        Kind::Capm3OSImageSources => decode::<Capm3OSImageSourcesSpec>(fc, spec, "data.")
            .map(FunctionConfig::Capm3OSImageSources),
    }
}

/// The kind a ConfigMap function config's `mode` names, if it names one.
pub fn mode_of(fc: &Value) -> Option<Kind> {
    fc.get("data")?
        .get(MODE_KEY)?
        .as_str()
        .and_then(Kind::from_name)
}

/// Results about a ConfigMap function config name its fields as the user wrote them: a mode
/// that says `spec.waitTimeout` (the typed form's path) means `data.waitTimeout` here. Only
/// results whose `resourceRef` is the function config itself are rewritten.
pub fn user_field_paths(results: &mut [KrmResult], fc: Option<&Value>) {
    let Some(fc) = fc.filter(|fc| fc.api_version() == "v1" && fc.kind() == "ConfigMap") else {
        return;
    };
    let config = fc.resource_ref();
    for r in results {
        if r.resource_ref.as_deref() != Some(&config) {
            continue;
        }
        if let Some(field) = r.field.as_mut() {
            if field.path == "spec" {
                field.path = "data".into();
            } else if let Some(rest) = field.path.strip_prefix("spec.") {
                field.path = format!("data.{rest}");
            }
        }
    }
}

/// The schema of the field at `path` below an object schema, if the schema knows it.
fn field_schema<'a>(schema: &'a Json, path: &[&str]) -> Option<&'a Json> {
    let mut current = schema;
    for segment in path {
        current = object_properties(current)?.get(*segment)?;
    }
    Some(current)
}

fn object_properties(schema: &Json) -> Option<&serde_json::Map<String, Json>> {
    if let Some(props) = schema.get("properties").and_then(Json::as_object) {
        return Some(props);
    }
    // Optional nested structs may be wrapped in anyOf/oneOf/allOf with a null branch.
    ["anyOf", "oneOf", "allOf"].iter().find_map(|key| {
        schema
            .get(*key)?
            .as_array()?
            .iter()
            .find_map(object_properties)
    })
}

fn is_string_schema(schema: &Json) -> bool {
    match schema.get("type") {
        Some(Json::String(t)) => t == "string",
        Some(Json::Array(ts)) => {
            ts.iter().any(|t| t == "string")
                && !ts.iter().any(|t| {
                    t == "boolean"
                        || t == "integer"
                        || t == "number"
                        || t == "array"
                        || t == "object"
                })
        }
        _ => false,
    }
}

fn typed_value(text: &str, schema: Option<&Json>) -> Value {
    match schema {
        // Unknown fields keep their text; decoding then rejects the key by name.
        None => Value::String(text.to_owned()),
        Some(s) if is_string_schema(s) => Value::String(text.to_owned()),
        // The engine's reader, as for every embedded document: scalars mean what they mean in
        // the typed form; text that is not one YAML document stays a string.
        Some(_) => {
            crate::krm::yaml::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
        }
    }
}

fn insert_path(map: &mut Mapping, path: &[&str], value: Value) -> Result<(), String> {
    let (first, rest) = path.split_first().expect("path is never empty");
    if rest.is_empty() {
        if map.insert(Value::from(*first), value).is_some() {
            return Err(format!("{first} is given twice"));
        }
        return Ok(());
    }
    let child = map
        .entry(Value::from(*first))
        .or_insert_with(|| Value::Mapping(Mapping::new()));
    match child {
        Value::Mapping(m) => insert_path(m, rest, value),
        _ => Err(format!("{first} is given both as a value and as an object")),
    }
}

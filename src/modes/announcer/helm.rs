//! Reading and writing the Helm values an item carries (see [`super::install::ValuesAt`]),
//! whatever the carrier: a mapping inside the item, or YAML text.

use serde_yaml::{Mapping, Value};

use super::install::{HelmValues, ValuesAt};

/// The mapping at `keys` under `root`, created (replacing non-mappings on the way) if missing.
pub fn mapping_at<'a>(root: &'a mut Value, keys: &[String]) -> Option<&'a mut Mapping> {
    let mut cur = root.as_mapping_mut()?;
    for key in keys {
        let entry = cur
            .entry(Value::from(key.as_str()))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if !entry.is_mapping() {
            *entry = Value::Mapping(Mapping::new());
        }
        cur = entry.as_mapping_mut()?;
    }
    Some(cur)
}

/// The value at `keys` under `v`.
pub fn get_path<'a>(v: &'a Value, keys: &[String]) -> Option<&'a Value> {
    keys.iter().try_fold(v, |cur, k| cur.get(k.as_str()))
}

/// `prefix` followed by `rest`.
pub fn path(prefix: &[String], rest: &[&str]) -> Vec<String> {
    prefix
        .iter()
        .cloned()
        .chain(rest.iter().map(|s| (*s).to_owned()))
        .collect()
}

/// The item's values (an empty mapping when it has none, or when its text is not a mapping).
pub fn read(item: &Value, at: &ValuesAt) -> Value {
    let found = match at {
        ValuesAt::Tree(keys) => get_path(item, keys).filter(|v| v.is_mapping()).cloned(),
        ValuesAt::Text => item
            .get("spec")
            .and_then(|s| s.get("valuesContent"))
            .and_then(Value::as_str)
            .and_then(|t| crate::krm::yaml::from_str(t).ok())
            .filter(Value::is_mapping),
    };
    found.unwrap_or_else(|| Value::Mapping(Mapping::new()))
}

/// Replaces the item's values. Text is written with the engine's emitter, which quotes every
/// string a YAML 1.1 reader (Helm) could take for a boolean or number.
pub fn write(item: &mut Value, at: &ValuesAt, values: Value) {
    match at {
        ValuesAt::Tree(keys) => {
            if let Some((last, parents)) = keys.split_last()
                && let Some(m) = mapping_at(item, parents)
            {
                m.insert(Value::from(last.as_str()), values);
            }
        }
        ValuesAt::Text => {
            let mut text = String::new();
            crate::krm::emit::emit_document(&mut text, &values);
            if let Some(spec) = mapping_at(item, &["spec".to_owned()]) {
                spec.insert(Value::from("valuesContent"), Value::from(text));
            }
        }
    }
}

/// The upstream chart's values of `hv` in `item` (under the umbrella prefix), `Null` when absent.
pub fn scoped(item: &Value, hv: &HelmValues) -> Value {
    get_path(&read(item, &hv.at), &hv.prefix)
        .cloned()
        .unwrap_or(Value::Null)
}

/// Sets `rest` (under the umbrella prefix) to `value` in the item's values.
pub fn set(item: &mut Value, hv: &HelmValues, rest: &[&str], value: Value) {
    let mut values = read(item, &hv.at);
    let full = path(&hv.prefix, rest);
    if let Some((last, parents)) = full.split_last()
        && let Some(m) = mapping_at(&mut values, parents)
    {
        m.insert(Value::from(last.as_str()), value);
    }
    write(item, &hv.at, values);
}

/// A boolean Helm value (`true`/`"true"`).
pub fn as_bool(v: Option<&Value>) -> Option<bool> {
    match v? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

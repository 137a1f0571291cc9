//! Helpers shared by the mode's unit tests.

use serde_yaml::Value;

/// The documents of a multi-document YAML string, as items.
pub fn docs(src: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(src)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

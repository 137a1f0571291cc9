//! Helpers shared by the mode's unit tests.

use serde_yaml::Value;

use super::values::{Origin, SylvaValues};

/// The documents of a multi-document YAML string, as items.
pub fn docs(src: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(src)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

/// Sylva values given inline (as `spec.values` would be).
pub fn values(src: &str) -> SylvaValues {
    SylvaValues {
        root: serde_yaml::from_str(src).unwrap(),
        origin: Origin::Inline,
    }
}

//! Merge keys (`<<`), applied as kyaml's `DeAnchor` applies them (kustomize
//! `kyaml/yaml/rnode.go`): the values the YAML merge spec gives, the order kyaml writes.

use serde_yaml::{Mapping, Value};

use super::events::Mark;
use super::node::LoadError;

/// The mappings a merge key's value names: a mapping, or a sequence of mappings (aliases are
/// already expanded).
pub(super) fn merge_sources(value: Value, at: Mark) -> Result<Vec<Value>, LoadError> {
    match value {
        Value::Mapping(_) => Ok(vec![value]),
        Value::Sequence(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Mapping(_) => Ok(item),
                _ => Err(LoadError::content(
                    "a merge key `<<` takes a mapping or a list of mappings; this list holds \
                     something else",
                    at,
                )),
            })
            .collect(),
        _ => Err(LoadError::content(
            "a merge key `<<` takes a mapping or a list of mappings",
            at,
        )),
    }
}

/// Applies merge sources (in document order) to `map`, as kyaml's `DeAnchor` does.
pub(super) fn merge_into(map: &mut Mapping, sources: Vec<Value>) {
    // Later sources first, so earlier ones overwrite their values (the key keeps the place the
    // first source to bring it gave it); the mapping's own keys are never overwritten.
    let mut merged = Mapping::new();
    for source in sources.into_iter().rev() {
        let Value::Mapping(source) = source else {
            continue;
        };
        for (k, v) in source {
            if !map.contains_key(&k) {
                merged.insert(k, v);
            }
        }
    }
    for (k, v) in merged {
        map.insert(k, v);
    }
}

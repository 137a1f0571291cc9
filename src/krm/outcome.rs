//! What a mode returns: edits to the item list plus results. The engine decides whether to apply.

use serde_yaml::{Mapping, Value};

use super::result::KrmResult;

/// One change to the item list. Indices refer to positions in the *input* items.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Replace the input item at `index` with a new version of it.
    Replace {
        /// Position in the input items.
        index: usize,
        /// The new content.
        item: Value,
    },
    /// Change the input item at `index` in place: the engine applies `ops` in order to the item it
    /// owns, so the mode need not clone a whole item to change a few fields (for 10k rewritten
    /// Services the clones were the largest part of the mode). Everything the ops do not touch
    /// stays as parsed. The item is reported as changed (written by the emitter, not copied from
    /// the input text), like a replaced one, even if the ops happen to leave it equal.
    Patch {
        /// Position in the input items.
        index: usize,
        /// Changes, applied in order.
        ops: Vec<PatchOp>,
    },
    /// Remove the input item at `index` (the mode must report why in a result).
    Remove {
        /// Position in the input items.
        index: usize,
    },
    /// Append a newly created item (it must carry path annotations, see
    /// [`crate::krm::object::set_file`]).
    Add {
        /// The new item.
        item: Value,
    },
}

/// The result of running a mode on the items.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    /// Changes, applied only when no result is an error.
    pub edits: Vec<Edit>,
    /// Results, appended after the ones already in the input.
    pub results: Vec<KrmResult>,
}

impl Outcome {
    /// True when any result is an error.
    pub fn has_errors(&self) -> bool {
        self.results.iter().any(KrmResult::is_error)
    }
    /// Adds a result.
    pub fn push(&mut self, result: KrmResult) {
        self.results.push(result);
    }
    /// `failOnWarnings`: reports every warning as an error (see [`KrmResult::promote_warning`]).
    /// Returns how many there were.
    pub fn promote_warnings(&mut self) -> usize {
        self.results
            .iter_mut()
            .map(KrmResult::promote_warning)
            .filter(|promoted| *promoted)
            .count()
    }
}

/// One key of a [`PatchOp`] path: borrowed for the fixed keys (`metadata`, `labels`), owned for
/// the rest, so 10k patches do not allocate the same words 10k times.
pub type PathKey = std::borrow::Cow<'static, str>;

/// One change of an [`Edit::Patch`]. A path is a list of mapping keys from the item's root, e.g.
/// `["metadata", "annotations", "metallb.io/address-pool"]` (keys are strings and may contain
/// dots and slashes, hence a list rather than a dotted string). It must not be empty.
#[derive(Debug, Clone, PartialEq)]
pub enum PatchOp {
    /// Sets the key at `path` to `value`. Missing mappings on the way are created and a
    /// non-mapping on the way is replaced by an empty mapping; an existing key keeps its position,
    /// a new one goes last.
    Set {
        /// Where, from the item root.
        path: Vec<PathKey>,
        /// The new value.
        value: Value,
    },
    /// Removes the key at `path` if it is there; the other keys keep their order. Nothing
    /// happens when a step on the way is missing or not a mapping.
    Remove {
        /// Where, from the item root.
        path: Vec<PathKey>,
    },
}

impl PatchOp {
    /// Sets `metadata.annotations.<key>` to a string.
    pub fn set_annotation(key: &str, value: &str) -> PatchOp {
        PatchOp::Set {
            path: vec![
                "metadata".into(),
                "annotations".into(),
                key.to_owned().into(),
            ],
            value: Value::from(value),
        }
    }

    /// Sets `metadata.labels.<key>` to a string.
    pub fn set_label(key: &str, value: &str) -> PatchOp {
        PatchOp::Set {
            path: vec!["metadata".into(), "labels".into(), key.to_owned().into()],
            value: Value::from(value),
        }
    }

    /// Removes `metadata.annotations.<key>`.
    pub fn remove_annotation(key: &str) -> PatchOp {
        PatchOp::Remove {
            path: vec![
                "metadata".into(),
                "annotations".into(),
                key.to_owned().into(),
            ],
        }
    }

    /// The path the op changes.
    pub fn path(&self) -> &[PathKey] {
        match self {
            PatchOp::Set { path, .. } | PatchOp::Remove { path } => path,
        }
    }

    /// Applies the op to `item`. Returns false, changing nothing, when the path is empty or
    /// `item` is not a mapping (the engine checks both before it applies anything).
    pub fn apply_to(&self, item: &mut Value) -> bool {
        let Some((last, parents)) = self.path().split_last() else {
            return false;
        };
        let Some(mut map) = item.as_mapping_mut() else {
            return false;
        };
        match self {
            PatchOp::Set { value, .. } => {
                for key in parents {
                    let entry = map
                        .entry(Value::from(&**key))
                        .or_insert_with(|| Value::Mapping(Mapping::new()));
                    if !entry.is_mapping() {
                        *entry = Value::Mapping(Mapping::new());
                    }
                    let Some(next) = entry.as_mapping_mut() else {
                        return false;
                    };
                    map = next;
                }
                map.insert(Value::from(&**last), value.clone());
            }
            PatchOp::Remove { .. } => {
                for key in parents {
                    let Some(next) = map.get_mut(&**key).and_then(Value::as_mapping_mut) else {
                        return true;
                    };
                    map = next;
                }
                // `shift_remove`: `remove` would move the last key into the hole.
                map.shift_remove(&**last);
            }
        }
        true
    }
}

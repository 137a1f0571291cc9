//! What a mode returns: edits to the item list plus results. The engine decides whether to apply.

use serde_yaml::Value;

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
}

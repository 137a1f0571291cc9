//! A check's finding about one item, before it becomes a KRM result: the same finding is an
//! error (or warning) in a check-only run and an info "fixed" result with `fix: true`.

use serde_yaml::Value;

use super::check::Check;
use crate::krm::{KrmResult, Severity};

/// One problem a check found on an item, before it becomes a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The `check` tag.
    pub check: Check,
    /// Severity without the fix.
    pub severity: Severity,
    /// What is wrong and why it matters.
    pub message: String,
    /// Field path on the item.
    pub field: String,
    /// What is there (`Null`: nothing to show).
    pub current: Value,
    /// What the fix writes (`Null`: nothing to show).
    pub proposed: Value,
    /// `fix: true` corrects it.
    pub fixable: bool,
}

impl Finding {
    /// An error that `fix: true` corrects.
    pub fn fixable_error(
        check: Check,
        message: String,
        field: String,
        current: Value,
        proposed: Value,
    ) -> Self {
        Finding {
            check,
            severity: Severity::Error,
            message,
            field,
            current,
            proposed,
            fixable: true,
        }
    }
    /// The same finding as a warning.
    pub fn warning(self) -> Self {
        Finding {
            severity: Severity::Warning,
            ..self
        }
    }
    /// True for an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
    /// The result about `item`: with `fix`, a fixable finding is reported as corrected.
    pub(super) fn into_result(self, item: &Value, fix: bool) -> KrmResult {
        let (severity, message) = match (self.fixable, fix) {
            (true, true) => (Severity::Info, format!("fixed: {}", self.message)),
            (true, false) => (
                self.severity,
                format!("{} (fix: true corrects this)", self.message),
            ),
            (false, _) => (self.severity, self.message),
        };
        let mut r = KrmResult::new(severity, message)
            .about(item)
            .field(self.field)
            .tag("check", self.check);
        if !self.current.is_null() {
            r = r.current(self.current);
        }
        if !self.proposed.is_null() {
            r = r.proposed(self.proposed);
        }
        if self.fixable && fix {
            r = r.tag("fixed", "true");
        }
        r
    }
}

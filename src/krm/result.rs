//! Structured results as defined by the KRM Functions Specification v1.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use super::object::KrmObject;

mod bound;
pub use bound::{SHOWN_MESSAGE_BYTES, SHOWN_VALUE_BYTES, shorten_middle};

/// How serious a result is. `error` makes the function exit 1 and leaves all items unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational: the run succeeded; this explains what happened.
    Info,
    /// Something an operator should look at; the run still succeeded.
    Warning,
    /// The run failed; no item was changed.
    Error,
}

/// The object a result is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRef {
    /// `apiVersion` of the object.
    pub api_version: String,
    /// `kind` of the object.
    pub kind: String,
    /// `metadata.name` of the object.
    pub name: String,
    /// `metadata.namespace`, when namespaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The field a result is about, with what is there and what should be there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldRef {
    /// Field path such as `spec.template.spec.containers[0].image`.
    pub path: String,
    /// The value found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_value: Option<Value>,
    /// The value the function proposes (or wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_value: Option<Value>,
}

/// The file an item came from (from its path/index annotations).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    /// Slash-delimited path relative to the package root.
    pub path: String,
    /// Index of the document within the file.
    #[serde(default)]
    pub index: u64,
}

/// One KRM result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KrmResult {
    /// Human readable message.
    pub message: String,
    /// Severity; the spec's default is `error`.
    #[serde(default = "default_severity")]
    pub severity: Severity,
    /// The object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<Box<ResourceRef>>,
    /// The field concerned (the spec requires `resourceRef` with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<Box<FieldRef>>,
    /// The file the object lives in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileRef>,
    /// Free-form tags; cutover always sets `mode` and, where useful, `check`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

fn default_severity() -> Severity {
    Severity::Error
}

/// The tag of a warning that `failOnWarnings` reported as an error: `promotedFrom: warning`.
pub const PROMOTED_FROM: (&str, &str) = ("promotedFrom", "warning");

impl KrmResult {
    /// A result with only a message and a severity.
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        KrmResult {
            message: message.into(),
            severity,
            resource_ref: None,
            field: None,
            file: None,
            tags: BTreeMap::new(),
        }
    }
    /// An error result.
    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }
    /// A warning result.
    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }
    /// An info result.
    pub fn info(message: impl Into<String>) -> Self {
        Self::new(Severity::Info, message)
    }
    /// Names the object and its file (from the object's path/index annotations).
    pub fn about(mut self, obj: &Value) -> Self {
        self.resource_ref = Some(Box::new(obj.resource_ref()));
        self.file = obj.file_ref();
        self
    }
    /// Names an input object by its identity and file, read earlier (for objects whose tree is
    /// no longer at hand, see [`crate::krm::io::Observer`]).
    pub fn about_item(mut self, r: ResourceRef, file: Option<FileRef>) -> Self {
        self.resource_ref = Some(Box::new(r));
        self.file = file;
        self
    }
    /// Names the object by reference only (for objects not in the input, e.g. created ones).
    pub fn about_ref(mut self, r: ResourceRef) -> Self {
        self.resource_ref = Some(Box::new(r));
        self
    }
    /// Whether `other` reports the same finding: the same severity and message about the same
    /// resource, field and file, whatever the tags.
    pub fn same_finding(&self, other: &KrmResult) -> bool {
        self.severity == other.severity
            && self.message == other.message
            && self.resource_ref == other.resource_ref
            && self.field == other.field
            && self.file == other.file
    }
    /// Names the field concerned.
    pub fn field(mut self, path: impl Into<String>) -> Self {
        self.field_mut().path = path.into();
        self
    }
    /// Records the value found at the field.
    pub fn current(mut self, value: impl Into<Value>) -> Self {
        self.field_mut().current_value = Some(value.into());
        self
    }
    /// Records the value proposed for (or written to) the field.
    pub fn proposed(mut self, value: impl Into<Value>) -> Self {
        self.field_mut().proposed_value = Some(value.into());
        self
    }
    /// Adds a tag.
    pub fn tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.tags.insert(key.into(), value.into());
        self
    }
    fn field_mut(&mut self) -> &mut FieldRef {
        self.field.get_or_insert_with(|| {
            Box::new(FieldRef {
                path: String::new(),
                current_value: None,
                proposed_value: None,
            })
        })
    }
    /// True for `severity: error`.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
    /// True for `severity: warning`.
    pub fn is_warning(&self) -> bool {
        self.severity == Severity::Warning
    }
    /// `failOnWarnings`: a warning becomes an error with the same message, tagged
    /// [`PROMOTED_FROM`]. Returns whether it was a warning.
    pub fn promote_warning(&mut self) -> bool {
        if !self.is_warning() {
            return false;
        }
        self.severity = Severity::Error;
        self.tags
            .insert(PROMOTED_FROM.0.into(), PROMOTED_FROM.1.into());
        true
    }
    /// True for an error that `failOnWarnings` made of a warning.
    pub fn is_promoted(&self) -> bool {
        self.is_error()
            && self
                .tags
                .get(PROMOTED_FROM.0)
                .is_some_and(|v| v == PROMOTED_FROM.1)
    }
}

impl std::fmt::Display for KrmResult {
    /// `[error] apps/v1/DaemonSet ns/name spec.x: message`, as the Go SDK prints results.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sev = match self.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "[{sev}]")?;
        if let Some(r) = &self.resource_ref {
            write!(f, " {}/{} ", r.api_version, r.kind)?;
            if let Some(ns) = &r.namespace {
                write!(f, "{ns}/")?;
            }
            write!(f, "{}", r.name)?;
        }
        if let Some(field) = &self.field {
            write!(f, " {}", field.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_in_spec_shape() {
        let obj: Value = serde_yaml::from_str(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\n  annotations:\n    config.kubernetes.io/path: a.yaml\n",
        )
        .unwrap();
        let r = KrmResult::error("bad")
            .about(&obj)
            .field("data.x")
            .current(3)
            .proposed("4")
            .tag("mode", "test");
        let yaml = serde_yaml::to_string(&r).unwrap();
        assert_eq!(
            yaml,
            "message: bad\nseverity: error\nresourceRef:\n  apiVersion: v1\n  kind: ConfigMap\n  name: a\n  namespace: n\nfield:\n  path: data.x\n  currentValue: 3\n  proposedValue: '4'\nfile:\n  path: a.yaml\n  index: 0\ntags:\n  mode: test\n"
        );
        assert_eq!(r.to_string(), "[error] v1/ConfigMap n/a data.x: bad");
    }

    #[test]
    fn only_warnings_are_promoted_and_keep_their_message() {
        let mut w = KrmResult::warning("look").tag("check", "x");
        assert!(w.promote_warning());
        assert!(w.is_error() && w.is_promoted());
        assert_eq!(w.message, "look");
        assert_eq!(w.tags["promotedFrom"], "warning");
        assert_eq!(w.tags["check"], "x");
        assert!(!w.promote_warning(), "an error is not promoted again");
        for mut r in [KrmResult::info("i"), KrmResult::error("e")] {
            let before = r.clone();
            assert!(!r.promote_warning());
            assert_eq!(r, before);
            assert!(!r.is_promoted());
        }
    }

    #[test]
    fn severity_defaults_to_error_when_reading() {
        let r: KrmResult = serde_yaml::from_str("message: m\n").unwrap();
        assert!(r.is_error());
    }
}

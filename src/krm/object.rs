//! Read access to the identity of an item held as a pass-through `serde_yaml::Value`.

use std::collections::HashSet;
use std::sync::Arc;

use serde_yaml::{Mapping, Value};

use super::annotations;
use super::result::{FileRef, ResourceRef};

/// Group/version/kind plus name and namespace: what identifies an object in a ResourceList.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind`, e.g. `DaemonSet`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, if set.
    pub namespace: Option<String>,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{} {}/{}", self.api_version, self.kind, ns, self.name),
            None => write!(f, "{}/{} {}", self.api_version, self.kind, self.name),
        }
    }
}

/// Accessors for KRM objects kept as untyped YAML. Every accessor tolerates malformed objects
/// (missing or mistyped fields read as empty), so identity can be reported even for bad input.
pub trait KrmObject {
    /// `apiVersion`, or `""`.
    fn api_version(&self) -> &str;
    /// `kind`, or `""`.
    fn kind(&self) -> &str;
    /// `metadata.name`, or `""`.
    fn name(&self) -> &str;
    /// `metadata.namespace`, if it is a string.
    fn namespace(&self) -> Option<&str>;
    /// One annotation value, if present and a string.
    fn annotation(&self, key: &str) -> Option<&str>;
    /// One label value, if present and a string.
    fn label(&self, key: &str) -> Option<&str>;
    /// The `apiVersion` group (the part before `/`, empty for the core group).
    fn group(&self) -> &str {
        match self.api_version().split_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }
    /// True when this object has the given group (any version) and kind.
    fn is(&self, group: &str, kind: &str) -> bool {
        self.kind() == kind && self.group() == group
    }
    /// Full identity of the object.
    fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            api_version: self.api_version().to_owned(),
            kind: self.kind().to_owned(),
            name: self.name().to_owned(),
            namespace: self.namespace().map(str::to_owned),
        }
    }
    /// A result `resourceRef` naming this object.
    fn resource_ref(&self) -> ResourceRef {
        ResourceRef {
            api_version: self.api_version().to_owned(),
            kind: self.kind().to_owned(),
            name: self.name().to_owned(),
            namespace: self.namespace().map(str::to_owned),
        }
    }
    /// A result `file` from the item's path/index annotations (internal ones first).
    fn file_ref(&self) -> Option<FileRef> {
        let path = self
            .annotation(annotations::INTERNAL_PATH)
            .or_else(|| self.annotation(annotations::PATH))?;
        let index = self
            .annotation(annotations::INTERNAL_INDEX)
            .or_else(|| self.annotation(annotations::INDEX))
            .and_then(|i| i.parse().ok())
            .unwrap_or(0);
        Some(FileRef {
            path: path.to_owned(),
            index,
        })
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    field(v, key).and_then(Value::as_str)
}

fn metadata_map<'a>(v: &'a Value, key: &str) -> Option<&'a Mapping> {
    field(field(v, "metadata")?, key)?.as_mapping()
}

/// `v.get(key)`: the value under the string `key` when `v` is a mapping (tags looked through).
pub fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match untagged(v) {
        Value::Mapping(map) => entry(map, key),
        _ => None,
    }
}

/// `map.get(key)`: the value under the string `key`. A small map is scanned, as hashing the key
/// with serde_yaml's SipHash costs more than comparing it with a few keys; keys are unique, so
/// both find the same entry (only a `Value::String` key equals `key`, as for `get`).
pub fn entry<'a>(map: &'a Mapping, key: &str) -> Option<&'a Value> {
    if map.len() > SCANNED_MAP_LEN {
        return map.get(key);
    }
    map.iter()
        .find_map(|(k, v)| matches!(k, Value::String(s) if s.as_str() == key).then_some(v))
}

/// The most entries [`entry`] scans before it hashes instead.
const SCANNED_MAP_LEN: usize = 16;

impl KrmObject for Value {
    fn api_version(&self) -> &str {
        str_at(self, "apiVersion").unwrap_or("")
    }
    fn kind(&self) -> &str {
        str_at(self, "kind").unwrap_or("")
    }
    fn name(&self) -> &str {
        field(self, "metadata")
            .and_then(|m| str_at(m, "name"))
            .unwrap_or("")
    }
    fn namespace(&self) -> Option<&str> {
        field(self, "metadata").and_then(|m| str_at(m, "namespace"))
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        entry(metadata_map(self, "annotations")?, key)?.as_str()
    }
    fn label(&self, key: &str) -> Option<&str> {
        entry(metadata_map(self, "labels")?, key)?.as_str()
    }
}

/// The first field kpt's KRM check finds missing on `item` (`apiVersion`, `kind`,
/// `metadata.name`: each must be a non-empty scalar), or `None` when it passes. Kustomization
/// files are exempt, as kpt exempts them (kpt `api/kptfile/v1/validation.go`, `IsKRM`): a file
/// named `kustomization.yaml`, `kustomization.yml` or `Kustomization`, an `apiVersion` in
/// `kustomize.config.k8s.io`, or `kind: Kustomization` without `apiVersion`.
pub fn missing_krm_field(item: &Value) -> Option<&'static str> {
    let filled = |v: Option<&Value>| match v.map(untagged) {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(_) | Value::Bool(_)) => true,
        _ => false,
    };
    let file = item.file_ref();
    let base = file
        .as_ref()
        .map(|f| f.path.rsplit('/').next().unwrap_or(""));
    if matches!(
        base,
        Some("kustomization.yaml" | "kustomization.yml" | "Kustomization")
    ) || item.api_version().starts_with("kustomize.config.k8s.io")
        || (!filled(field(item, "apiVersion")) && item.kind() == "Kustomization")
    {
        return None;
    }
    if !filled(field(item, "apiVersion")) {
        Some("apiVersion")
    } else if !filled(field(item, "kind")) {
        Some("kind")
    } else if !filled(field(item, "metadata").and_then(|m| field(m, "name"))) {
        Some("metadata.name")
    } else {
        None
    }
}

fn untagged(v: &Value) -> &Value {
    match v {
        Value::Tagged(t) => untagged(&t.value),
        other => other,
    }
}

/// Sets (or replaces) one annotation on an object, creating `metadata.annotations` when absent.
/// Keeps the position of an existing key so diffs stay minimal.
pub fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    let Some(root) = obj.as_mapping_mut() else {
        return;
    };
    let meta = root
        .entry(Value::from("metadata"))
        .or_insert_with(|| Value::Mapping(Mapping::new()));
    let Some(meta) = meta.as_mapping_mut() else {
        return;
    };
    let annotations = meta
        .entry(Value::from("annotations"))
        .or_insert_with(|| Value::Mapping(Mapping::new()));
    if !annotations.is_mapping() {
        *annotations = Value::Mapping(Mapping::new());
    }
    if let Some(map) = annotations.as_mapping_mut() {
        map.insert(Value::from(key), Value::from(value));
    }
}

/// Gives a newly created object the path/index annotations that `kpt fn render` and kustomize use
/// to decide which file it is written to. `path` is relative to the package root.
pub fn set_file(obj: &mut Value, path: &str, index: usize) {
    let index = index.to_string();
    set_annotation(obj, annotations::PATH, path);
    set_annotation(obj, annotations::INDEX, &index);
    set_annotation(obj, annotations::INTERNAL_PATH, path);
    set_annotation(obj, annotations::INTERNAL_INDEX, &index);
}

/// An item's file (path and index annotations) with the path shared between the items of one
/// file: what the engine keeps of a released item and the announcer of each Service, for
/// thousands of items naming a few hundred files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFile {
    /// The file's path.
    pub path: Arc<str>,
    /// The item's index in the file.
    pub index: u64,
}

impl SharedFile {
    /// As a KRM result's `file`.
    pub fn file_ref(&self) -> FileRef {
        FileRef {
            path: self.path.to_string(),
            index: self.index,
        }
    }
}

/// Hands out [`SharedFile`]s, one path allocation per distinct file.
#[derive(Debug, Default)]
pub struct SharedPaths(HashSet<Arc<str>>);

impl SharedPaths {
    /// The file of `item`, if its annotations name one.
    pub fn file_of(&mut self, item: &Value) -> Option<SharedFile> {
        let f = item.file_ref()?;
        let path = match self.0.get(f.path.as_str()) {
            Some(p) => Arc::clone(p),
            None => {
                let p: Arc<str> = f.path.into();
                self.0.insert(Arc::clone(&p));
                p
            }
        };
        Some(SharedFile {
            path,
            index: f.index,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(src: &str) -> Value {
        serde_yaml::from_str(src).unwrap()
    }

    #[test]
    fn identity_of_a_well_formed_object() {
        let o = obj("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: a, namespace: b}\n");
        assert_eq!(o.group(), "apps");
        assert!(o.is("apps", "DaemonSet"));
        assert_eq!(o.object_ref().to_string(), "apps/v1/DaemonSet b/a");
    }

    #[test]
    fn malformed_objects_read_as_empty() {
        let o = obj("apiVersion: 3\nmetadata: [x]\n");
        assert_eq!(o.api_version(), "");
        assert_eq!(o.name(), "");
        assert_eq!(o.namespace(), None);
        assert_eq!(o.annotation("x"), None);
        assert_eq!(o.group(), "");
    }

    #[test]
    fn krm_check_is_kpts() {
        let missing = |src: &str| missing_krm_field(&obj(src));
        assert_eq!(
            missing("apiVersion: v1\nkind: A\nmetadata: {name: a}\n"),
            None
        );
        assert_eq!(
            missing("apiVersion: 1\nkind: true\nmetadata: {name: 2}\n"),
            None
        );
        assert_eq!(
            missing("kind: A\nmetadata: {name: a}\n"),
            Some("apiVersion")
        );
        assert_eq!(missing("apiVersion: ''\nkind: A\n"), Some("apiVersion"));
        assert_eq!(missing("apiVersion: v1\nkind: ~\n"), Some("kind"));
        assert_eq!(missing("apiVersion: v1\nkind: A\n"), Some("metadata.name"));
        assert_eq!(
            missing("apiVersion: v1\nkind: A\nmetadata: {name: {a: b}}\n"),
            Some("metadata.name")
        );
        // Kustomization files are exempt.
        assert_eq!(
            missing("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"),
            None
        );
        assert_eq!(missing("kind: Kustomization\nresources: [a.yaml]\n"), None);
        assert_eq!(
            missing(
                "metadata:\n  annotations:\n    internal.config.kubernetes.io/path: sub/kustomization.yaml\n"
            ),
            None
        );
    }

    /// [`entry`] and [`field`] find what serde_yaml's `get` finds, on maps scanned and hashed.
    #[test]
    fn entry_and_field_find_what_get_finds() {
        let keys = ["a", "1", "true", "!t a", "null", "b"];
        for len in [0, 1, 5, SCANNED_MAP_LEN, SCANNED_MAP_LEN + 1, 40] {
            let mut text = String::from("{1: number, true: bool, !t a: tagged, ~: null");
            for i in 0..len {
                text.push_str(&format!(", k{i}: {i}"));
            }
            text.push_str(", b: last}");
            let value = obj(&text);
            let map = value.as_mapping().unwrap();
            for key in keys.iter().copied().chain(["k0", "k16", "absent"]) {
                assert_eq!(entry(map, key), map.get(key), "{len} {key}");
                assert_eq!(field(&value, key), value.get(key), "{len} {key}");
            }
        }
        let tagged = obj("!t {a: 1}");
        assert_eq!(field(&tagged, "a"), tagged.get("a"));
        assert!(field(&tagged, "a").is_some());
        assert_eq!(field(&obj("[a]"), "a"), None);
    }

    #[test]
    fn file_ref_prefers_internal_annotations() {
        let o = obj(
            "metadata:\n  annotations:\n    config.kubernetes.io/path: old.yaml\n    internal.config.kubernetes.io/path: new.yaml\n    internal.config.kubernetes.io/index: '2'\n",
        );
        let f = o.file_ref().unwrap();
        assert_eq!((f.path.as_str(), f.index), ("new.yaml", 2));
    }

    #[test]
    fn set_file_writes_all_four_annotations_and_keeps_others() {
        let mut o = obj("kind: X\nmetadata:\n  name: a\n  annotations: {keep: me}\n");
        set_file(&mut o, "dir/x.yaml", 1);
        assert_eq!(o.annotation("keep"), Some("me"));
        assert_eq!(o.annotation(annotations::PATH), Some("dir/x.yaml"));
        assert_eq!(o.annotation(annotations::INTERNAL_INDEX), Some("1"));
        let f = o.file_ref().unwrap();
        assert_eq!((f.path.as_str(), f.index), ("dir/x.yaml", 1));
    }
}

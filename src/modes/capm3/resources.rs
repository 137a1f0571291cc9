//! Typed views of the objects the mode reads and writes: the parts of a Flux HelmRelease and a
//! Kyverno ClusterPolicy it uses (core kinds come from k8s-openapi). Unknown fields are
//! tolerated when reading; edits are made on the items themselves, so nothing is lost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use super::check::Check;
use crate::krm::KrmResult;

/// Flux's default `valuesKey` (`meta.ValuesReference.GetValuesKey`, fluxcd/pkg apis/meta).
pub const DEFAULT_VALUES_KEY: &str = "values.yaml";

/// The part of a `helm.toolkit.fluxcd.io/v2` HelmRelease the mode reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HelmRelease {
    /// `spec`.
    #[serde(default)]
    pub spec: HelmReleaseSpec,
}

/// The part of a HelmRelease `spec` the mode reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmReleaseSpec {
    /// `spec.valuesFrom`, merged in order, later entries over earlier ones.
    #[serde(default)]
    pub values_from: Vec<ValuesReference>,
    /// `spec.values`, merged over everything `valuesFrom` gives.
    #[serde(default)]
    pub values: Option<Value>,
}

/// One `spec.valuesFrom` entry (fluxcd/pkg `meta.ValuesReference`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValuesReference {
    /// `Secret` or `ConfigMap`.
    pub kind: String,
    /// Name of the object, in the HelmRelease's namespace.
    pub name: String,
    /// Data key holding the values; Flux's default is `values.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_key: Option<String>,
    /// Where a single value is merged instead of at the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_path: Option<String>,
    /// A missing object is skipped instead of failing the release.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

impl ValuesReference {
    /// A ConfigMap reference as sylva-units renders it (`{kind: ConfigMap, name}`).
    pub fn config_map(name: &str) -> Self {
        ValuesReference {
            kind: "ConfigMap".into(),
            name: name.into(),
            values_key: None,
            target_path: None,
            optional: false,
        }
    }
    /// The data key Flux reads.
    pub fn key(&self) -> &str {
        self.values_key.as_deref().unwrap_or(DEFAULT_VALUES_KEY)
    }
    /// True when the whole document at the default key is merged at the root, as sylva-units
    /// wires the OS image ConfigMaps.
    pub fn merges_document(&self) -> bool {
        self.target_path.is_none() && self.key() == DEFAULT_VALUES_KEY
    }
    /// The entry as an item value.
    pub fn to_value(&self) -> Value {
        serde_yaml::to_value(self).expect("a ValuesReference serializes")
    }
}

/// Reads the typed view of a HelmRelease, naming the field on failure.
pub fn helm_release(item: &Value) -> Result<HelmRelease, KrmResult> {
    serde_path_to_error::deserialize(item.clone()).map_err(|e| {
        KrmResult::error(format!(
            "HelmRelease does not decode: {}",
            e.inner().to_string().trim_end()
        ))
        .about(item)
        .field(e.path().to_string())
        .tag("check", Check::Input)
    })
}

/// A `kyverno.io` ClusterPolicy: the parts of its generate rules the mode checks and emits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPolicySpec {
    /// Also generate for Namespaces that existed before the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_existing: Option<bool>,
    /// The rules.
    #[serde(default)]
    pub rules: Vec<Rule>,
}

/// A policy rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// Rule name.
    #[serde(default)]
    pub name: String,
    /// Also process background (existing-resource) requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_background_requests: Option<bool>,
    /// Which requests the rule applies to.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_: Option<MatchResources>,
    /// What the rule generates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<Generation>,
}

/// `match`: any or all of the filters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MatchResources {
    /// Matches when any filter matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub any: Vec<ResourceFilter>,
    /// Matches when every filter matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub all: Vec<ResourceFilter>,
}

/// One filter of `match.any` / `match.all`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceFilter {
    /// The resource description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceDescription>,
}

/// Kinds and a label selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceDescription {
    /// Kinds matched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Label selector on the matched objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
}

/// `generate`: the object a rule creates and keeps in sync.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Generation {
    /// Kind of the generated object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// apiVersion of the generated object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Name of the generated object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the generated object (a Kyverno variable for per-Namespace copies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Keep the copy in sync with its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronize: Option<bool>,
    /// Per-rule `generateExisting`: when set, it wins over the policy's `spec.generateExisting`
    /// (kyverno pkg/policy/generate.go, `handleGenerateForExisting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_existing: Option<bool>,
    /// The object copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone: Option<CloneFrom>,
}

/// `generate.clone`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloneFrom {
    /// Name of the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Reads the typed `spec` of a ClusterPolicy, naming the field on failure.
pub fn cluster_policy_spec(item: &Value) -> Result<ClusterPolicySpec, KrmResult> {
    let spec = item.get("spec").cloned().unwrap_or(Value::Null);
    let spec = if spec.is_null() {
        Value::Mapping(Default::default())
    } else {
        spec
    };
    serde_path_to_error::deserialize(spec).map_err(|e| {
        KrmResult::error(format!(
            "ClusterPolicy does not decode: {}",
            e.inner().to_string().trim_end()
        ))
        .about(item)
        .field(format!("spec.{}", e.path()))
        .tag("check", Check::Input)
    })
}

/// The `data` of a ConfigMap or Secret item as text, typed the way k8s-openapi types the field
/// (`BTreeMap<String, String>` for a ConfigMap; `BTreeMap<String, ByteString>`, base64, for a
/// Secret, plus its `stringData`). Only these fields are decoded: decoding whole objects through
/// k8s-openapi would bring its `ObjectMeta` decoder (timestamps, managed fields, about 0.5 MB of
/// code) into the binary for fields the mode never reads.
pub fn data_text(item: &Value, secret: bool) -> Result<BTreeMap<String, String>, KrmResult> {
    fn field<T: serde::de::DeserializeOwned>(
        item: &Value,
        name: &str,
    ) -> Result<BTreeMap<String, T>, KrmResult> {
        match item.get(name) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(v) => serde_path_to_error::deserialize(v.clone()).map_err(|e| {
                let path = e.path().to_string();
                KrmResult::error(format!("{name} does not decode: {}", e.inner()))
                    .about(item)
                    .field(if path == "." {
                        name.to_owned()
                    } else {
                        format!("{name}.{path}")
                    })
                    .tag("check", Check::Input)
            }),
        }
    }
    if !secret {
        return field::<String>(item, "data");
    }
    let mut out = BTreeMap::new();
    for (key, bytes) in field::<k8s_openapi::ByteString>(item, "data")? {
        let text = String::from_utf8(bytes.0).map_err(|_| {
            KrmResult::error("decoded value is not UTF-8")
                .about(item)
                .field(format!("data.{key}"))
                .tag("check", Check::Input)
        })?;
        out.insert(key, text);
    }
    for (key, text) in field::<String>(item, "stringData")? {
        out.entry(key).or_insert(text);
    }
    Ok(out)
}

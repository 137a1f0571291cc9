//! `Capm3OSImageSources` configuration (`spec:` of the typed form, `data:` of the ConfigMap form).
//!
//! The defaults are the names sylva-units uses (charts/sylva-units/values.yaml, the `cluster`,
//! `os-images-info` and `os-image-server` units; workload-cluster.values.yaml; the Kyverno policy
//! of the `mgmt-cluster-state-values` unit's capm3 component).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// ConfigMap the `os-images-info` unit writes in the release namespace: (A), the cluster's own
/// OS image facts (`values.yaml` → `os_images`).
pub const DEFAULT_OS_IMAGES_INFO: &str = "os-images-info";
/// Kyverno's copy of the os-image-server output in every workload-cluster namespace: (B) of a
/// workload cluster (`_internal.os_image_server_images_configmap` in workload-cluster.values.yaml).
pub const DEFAULT_SERVED_IMAGES: &str = "kyverno-cloned-os-image-server-images";
/// The os-image-server unit's output ConfigMap (`outputConfigMap.name`): (B) of the management
/// cluster and the source the Kyverno policy clones.
pub const DEFAULT_SERVER_OUTPUT: &str = "capm3-os-image-server-os-images";
/// Namespace of the os-image-server output and of the management cluster's units.
pub const DEFAULT_MANAGEMENT_NAMESPACE: &str = "sylva-system";
/// Name of sylva-units' Kyverno ClusterPolicy that clones the output into workload namespaces.
pub const DEFAULT_CLONE_POLICY: &str = "clone-os-images-info-capm3";

/// Configuration of the capm3 OS-image sources mode. Every field is optional.
/// `failOnWarnings` makes every warning an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Capm3OSImageSourcesSpec {
    /// The `cluster` unit's HelmRelease to check. Default: every HelmRelease labelled
    /// `sylva-units.unit: cluster` among the items.
    pub cluster: Option<ClusterRef>,
    /// Whose `cluster` unit it is: `auto` (default) says management when the HelmRelease is in
    /// `serverOutput.namespace` (sylva-system), workload otherwise.
    pub context: ClusterContext,
    /// (A) ConfigMap written by the cluster's own `os-images-info` unit, in the HelmRelease's
    /// namespace: the authoritative `os_images`.
    pub os_images_info: String,
    /// (B) of a workload cluster: the Kyverno clone of the os-image-server output in the
    /// workload cluster's namespace (`capm3_os_image_server_images`).
    pub served_images: String,
    /// The os-image-server output ConfigMap: (B) of the management cluster, and what the Kyverno
    /// policy clones into every workload-cluster namespace.
    pub server_output: ConfigMapRef,
    /// Name of the Kyverno ClusterPolicy that clones `serverOutput` as `servedImages` (a policy
    /// among the items is checked when it has this name or a rule that clones `serverOutput`).
    pub clone_policy: String,
    /// `false` (default): check and report only. `true`: rewire the `cluster` HelmRelease's
    /// `valuesFrom`, label the workload Namespace, and correct the clone policy when it is among
    /// the items (a missing policy is not emitted: sylva-units' `mgmt-cluster-state-values` unit
    /// owns it). A rewiring that adds (B) is refused unless (B) is among the items or
    /// `managementServesClonedImages` is `true`.
    pub fix: bool,
    /// `true`: the management cluster has already been upgraded, so its os-image-server writes
    /// `serverOutput` and its Kyverno policy clones it into every workload-cluster namespace as
    /// `servedImages`. Lets `fix: true` add (B) to a `cluster` HelmRelease although (B) is not
    /// among the items. Default `false`: (B)'s `valuesFrom` entry is not optional, so
    /// helm-controller fails the HelmRelease while the ConfigMap does not exist.
    pub management_serves_cloned_images: bool,
    /// `true`: every warning is reported as an error (same message, tagged
    /// `promotedFrom: warning`), so the run exits 1 and nothing is written, not even what
    /// `fix: true` corrects; for pipelines where nobody reads warnings (they also go to stderr).
    pub fail_on_warnings: bool,
}

impl Default for Capm3OSImageSourcesSpec {
    fn default() -> Self {
        Capm3OSImageSourcesSpec {
            cluster: None,
            context: ClusterContext::Auto,
            os_images_info: DEFAULT_OS_IMAGES_INFO.into(),
            served_images: DEFAULT_SERVED_IMAGES.into(),
            server_output: ConfigMapRef::default(),
            clone_policy: DEFAULT_CLONE_POLICY.into(),
            fix: false,
            management_serves_cloned_images: false,
            fail_on_warnings: false,
        }
    }
}

/// The `cluster` unit's HelmRelease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterRef {
    /// Name of the HelmRelease (sylva-units names it `cluster`).
    pub name: String,
    /// Namespace of the HelmRelease (`sylva-system` for the management cluster, the workload
    /// cluster's namespace otherwise); needed when several share the name.
    pub namespace: Option<String>,
}

/// A namespaced ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ConfigMapRef {
    /// Name of the ConfigMap.
    pub name: String,
    /// Namespace of the ConfigMap.
    pub namespace: String,
}

impl Default for ConfigMapRef {
    fn default() -> Self {
        ConfigMapRef {
            name: DEFAULT_SERVER_OUTPUT.into(),
            namespace: DEFAULT_MANAGEMENT_NAMESPACE.into(),
        }
    }
}

/// Which cluster the `cluster` unit belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClusterContext {
    /// From the HelmRelease's namespace.
    Auto,
    /// The management cluster: (B) is the os-image-server output itself.
    Management,
    /// A workload cluster: (B) is the Kyverno clone in its namespace.
    Workload,
}

//! `MetalLBImagePrepull` configuration (`spec:` of the typed form, `data:` of the ConfigMap form).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::image::ImageRef;
use crate::config::types::Duration;

/// Default frr-k8s image of Sylva 1.7 (frr-k8s v0.0.25).
pub const DEFAULT_FRR_K8S_IMAGE: &str = "quay.io/metallb/frr-k8s:v0.0.25";
/// Default FRR image of Sylva 1.7 (frr 10.4.3).
pub const DEFAULT_FRR_IMAGE: &str = "quay.io/frrouting/frr:10.4.3";
/// Default waiter image: Sylva's own `kube-job` image (kubectl + POSIX shell), which every Sylva
/// deployment already mirrors for its kube-job units.
pub const DEFAULT_WAITER_IMAGE: &str =
    "registry.gitlab.com/sylva-projects/sylva-elements/container-images/kube-job:v1.2.1";

/// Configuration of the MetalLB image prepull mode. Every field is optional.
/// `failOnWarnings` makes every warning an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MetalLBImagePrepullSpec {
    /// Whether this render is an upgrade: `auto` (default) reads `_internal.state.is_upgrade` from
    /// the values, else looks for a reconciled `sylva-units-status`; `true`/`false` force it.
    pub upgrade: UpgradeMode,
    /// Inline sylva values (highest precedence).
    #[schemars(with = "Option<serde_json::Value>", extend("x-kubernetes-preserve-unknown-fields" = true))]
    pub values: Option<serde_yaml::Value>,
    /// Item holding the sylva values (Secret `sylva-units-values`, a ConfigMap or HelmRelease
    /// `sylva-units`). Without it (and without `values`) those items are discovered.
    pub values_from: Option<ValuesSource>,
    /// Name of the gated Flux Kustomization.
    pub kustomization: String,
    /// Images to pre-pull, replacing the defaults and any chart-value overrides. Each must be
    /// pinned (tag other than `latest`, or digest); the MetalLB speaker image is refused.
    pub images: Option<Vec<ImageRef>>,
    /// Command each pre-pull init container runs in its image: a no-op that exits 0. The
    /// default needs `/bin/sh`, which the frr-k8s and frr images (Alpine based) have.
    pub noop_command: Vec<String>,
    /// For images without a shell: an image with a *static* busybox at `/bin/busybox` (e.g.
    /// the official `busybox:<version>-musl`). Its binary is copied into an emptyDir and run as
    /// `true` in every pre-pull container, replacing `noopCommand`.
    pub noop_image: Option<ImageRef>,
    /// Image of the long-running container of the prepull DaemonSet.
    pub pause_image: ImageRef,
    /// Image of the waiter Job: needs `/bin/sh` and `kubectl` (default: Sylva's kube-job image).
    pub waiter_image: ImageRef,
    /// Namespace of the DaemonSet and waiter objects: a namespace name (a DNS-1123 label).
    pub namespace: String,
    /// How long the waiter Job waits for the DaemonSet rollout.
    pub wait_timeout: Duration,
    /// What the waiter does when the rollout is not complete after `waitTimeout`.
    pub on_timeout: OnTimeout,
    /// Where the payload is published for Flux. Required when the gate opens: the unit's Flux
    /// Kustomization reconciles `source.path` of this source, so the payload must be there.
    pub source: Option<PayloadSource>,
    /// Package directory the payload files (DaemonSet, waiter, `kustomization.yaml`) are written
    /// to; publish it so that it is `source.path` in `source.sourceRef`. A relative path of at
    /// most 4096 bytes, with names of at most 255.
    pub payload_dir: String,
    /// `rendered` adds the unit to the rendered Flux Kustomizations; `sylva-values` adds it to the
    /// sylva-units values document it read (sylva-units then renders it).
    pub output: Output,
    /// priorityClassName of the pre-pull and waiter pods.
    pub priority_class_name: Option<String>,
    /// Names of image pull secrets (in `namespace`) for the pre-pull and waiter pods (copies of
    /// the secrets the metallb chart uses, for a private mirror).
    pub image_pull_secrets: Vec<String>,
    /// Tolerations of the pre-pull pods; default tolerates every taint, which covers every node
    /// frr-k8s runs on (it tolerates control-plane taints).
    pub tolerations: Option<Vec<Toleration>>,
    /// Non-root uid the prepull and waiter containers run as (the frr and frr-k8s images
    /// default to root, so Pod Security "restricted" needs an explicit uid).
    #[schemars(range(min = 1))]
    pub run_as_user: i64,
    /// Removed field `sourceRef` (replaced by `source.sourceRef`): kept only to name it in the
    /// error instead of a bare "unknown field".
    #[serde(rename = "sourceRef", skip_serializing)]
    #[schemars(skip)]
    pub removed_source_ref: Option<serde::de::IgnoredAny>,
    /// Removed field `path` (replaced by `source.path` and `payloadDir`), see `removed_source_ref`.
    #[serde(rename = "path", skip_serializing)]
    #[schemars(skip)]
    pub removed_path: Option<serde::de::IgnoredAny>,
    /// Upstream MetalLB chart (no sylva values among the items): the chart version MetalLB runs
    /// now, used when the items carry no live status of the installing HelmRelease
    /// (`status.history[0].chartVersion`, `status.lastAttemptedRevision`). Without either the
    /// gate stays closed (fresh install or unknown).
    pub from_chart_version: Option<String>,
    /// Upstream MetalLB chart: the chart version being installed, when the installation does not
    /// state an exact one (a semver range, a chart from a Git path, cozystack's umbrella chart,
    /// whose version is cozystack's). An exact version in the installation wins.
    pub to_chart_version: Option<String>,
    /// Upstream MetalLB chart: after the switch, a second unit `metallb-bgp-sessions` (depending
    /// on `kustomization`) runs a Job that fails unless every frr-k8s `BGPSessionState` in
    /// `namespace` (the bundled frr-k8s lives in MetalLB's release namespace) reports
    /// `Established` within `timeout`, so the Flux Kustomization shows the outage instead of
    /// hiding it (the speaker and frr-k8s report Ready without BGP).
    pub bgp_session_check: Option<BgpSessionCheck>,
    /// `output: rendered` with a `sylva-units` HelmRelease among the items: `true` accepts a
    /// one-off edit of what that release renders (its next upgrade, or helm-controller's drift
    /// correction, puts metallb's `dependsOn` back without the unit). Without it such a run is an
    /// error pointing at `output: sylva-values`.
    pub accept_edits_to_sylva_units_release: bool,
    /// `true`: every warning is reported as an error (same message, tagged
    /// `promotedFrom: warning`), so the run exits 1 and no item is changed; for pipelines where
    /// nobody reads warnings (they also go to stderr).
    pub fail_on_warnings: bool,
}

/// `bgpSessionCheck`: evidence after the switch that frr-k8s' BGP sessions came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct BgpSessionCheck {
    /// How long the sessions may take to reach `Established` after MetalLB's Kustomization is
    /// Ready.
    pub timeout: Duration,
}

impl Default for BgpSessionCheck {
    fn default() -> Self {
        BgpSessionCheck {
            timeout: Duration::parse("10m").expect("valid default"),
        }
    }
}

impl Default for MetalLBImagePrepullSpec {
    fn default() -> Self {
        MetalLBImagePrepullSpec {
            upgrade: UpgradeMode::Auto,
            values: None,
            values_from: None,
            kustomization: "metallb".into(),
            images: None,
            noop_command: default_noop_command(),
            noop_image: None,
            pause_image: ImageRef::parse("registry.k8s.io/pause:3.10").expect("valid default"),
            waiter_image: ImageRef::parse(DEFAULT_WAITER_IMAGE).expect("valid default"),
            namespace: "metallb-system".into(),
            wait_timeout: Duration::parse("10m").expect("valid default"),
            on_timeout: OnTimeout::Proceed,
            source: None,
            payload_dir: "metallb-image-prepull".into(),
            output: Output::Rendered,
            priority_class_name: None,
            image_pull_secrets: Vec::new(),
            tolerations: None,
            run_as_user: 65534,
            removed_source_ref: None,
            removed_path: None,
            fail_on_warnings: false,
            accept_edits_to_sylva_units_release: false,
            from_chart_version: None,
            to_chart_version: None,
            bgp_session_check: None,
        }
    }
}

/// `["/bin/sh", "-c", "exit 0"]`: the no-op for images with a shell.
pub fn default_noop_command() -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), "exit 0".into()]
}

/// `upgrade: auto | true | false` (booleans accepted too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UpgradeMode {
    /// Detect from the values and the items.
    Auto,
    /// Treat the render as an upgrade.
    True,
    /// Treat the render as a fresh install.
    False,
}

impl<'de> Deserialize<'de> for UpgradeMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bool(bool),
            Text(String),
        }
        match Raw::deserialize(d)
            .map_err(|_| serde::de::Error::custom("expected auto, true or false"))?
        {
            Raw::Bool(true) => Ok(UpgradeMode::True),
            Raw::Bool(false) => Ok(UpgradeMode::False),
            Raw::Text(t) => match t.as_str() {
                "auto" => Ok(UpgradeMode::Auto),
                "true" => Ok(UpgradeMode::True),
                "false" => Ok(UpgradeMode::False),
                other => Err(serde::de::Error::custom(format!(
                    "unknown upgrade mode {other:?}: expected auto, true or false"
                ))),
            },
        }
    }
}

/// `onTimeout: proceed | fail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnTimeout {
    /// The waiter succeeds after the timeout and logs the nodes not covered.
    Proceed,
    /// The waiter fails, which keeps the metallb unit from reconciling.
    Fail,
}

/// Where the sylva values come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValuesSource {
    /// `Secret`, `ConfigMap` or `HelmRelease`.
    pub kind: ValuesKind,
    /// Name of the item.
    pub name: String,
    /// Namespace of the item, when several share the name.
    pub namespace: Option<String>,
    /// Data key holding the values (Secret default `values`; ConfigMap `values.yaml` then `values`).
    pub key: Option<String>,
}

/// Kinds that can hold the sylva values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ValuesKind {
    /// A Secret with base64 YAML values (as sylva-units writes `sylva-units-values`).
    Secret,
    /// A ConfigMap with YAML values.
    ConfigMap,
    /// A HelmRelease whose `spec.values` are the values.
    HelmRelease,
}

/// Which objects carry the unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Output {
    /// Edit the rendered sylva-units output: add the unit's Flux Kustomization and make the
    /// `metallb` Kustomization depend on it (for operators who apply rendered output).
    Rendered,
    /// Edit the sylva-units values document (`units.metallb-image-prepull`,
    /// `units.metallb.depends_on`): sylva-units renders the unit in the cluster.
    SylvaValues,
}

/// Where the payload is published (`spec.source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PayloadSource {
    /// Flux source holding the published payload (`output: rendered`: required; it becomes the
    /// unit's `spec.sourceRef`).
    pub source_ref: Option<SourceRef>,
    /// Path of the payload directory inside that source (the unit's `spec.path`), e.g.
    /// `./platform/metallb-image-prepull`.
    pub path: Option<String>,
    /// `output: sylva-values`: name of the `source_templates` entry holding the payload (the
    /// unit's `repo`; sylva-units derives the sourceRef from it).
    pub repo: Option<String>,
}

/// Kinds of Flux source a Kustomization can reconcile the payload from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SourceKind {
    /// `source.toolkit.fluxcd.io` GitRepository (commit the payload directory).
    GitRepository,
    /// `source.toolkit.fluxcd.io` OCIRepository (`flux push artifact`).
    OCIRepository,
    /// `source.toolkit.fluxcd.io` Bucket (upload the directory).
    Bucket,
}

impl SourceKind {
    /// The `kind:` value.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::GitRepository => "GitRepository",
            SourceKind::OCIRepository => "OCIRepository",
            SourceKind::Bucket => "Bucket",
        }
    }
}

/// A Flux source reference (`spec.sourceRef` of a Kustomization).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceRef {
    /// `GitRepository`, `OCIRepository` or `Bucket`.
    pub kind: SourceKind,
    /// Name of the source.
    pub name: String,
    /// Namespace of the source (default: the unit's namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A pod toleration (core/v1 `Toleration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    /// Taint key; empty with `Exists` matches every taint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `Exists` or `Equal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Taint value for `Equal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty matches all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// How long a NoExecute taint is tolerated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

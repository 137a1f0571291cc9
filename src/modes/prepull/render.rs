//! Builds the unit: the pre-pull DaemonSet, the waiter (ServiceAccount, Role, RoleBinding, Job),
//! the `kustomization.yaml` Flux builds, and the Flux `Kustomization` that gates `metallb`.
//! Core kinds are k8s-openapi types; the Flux and kustomize kinds are small serde structs.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, LocalObjectReference,
    PodSecurityContext, PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile,
    SecurityContext, ServiceAccount, Toleration as CoreToleration, Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;
use serde_yaml::Value;

use super::config::{MetalLBImagePrepullSpec, OnTimeout, SourceRef};
use super::images::PrepullImage;
use super::inputs::{GENERATED_BY, UNIT};
use crate::krm::annotations::LOCAL_CONFIG;
use crate::krm::object::{set_annotation, set_file};

/// Label every generated object carries (with [`GENERATED_BY`]) so a later run recognises it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "cutover");
/// Selector label of the pre-pull pods.
const NAME_LABEL: &str = "app.kubernetes.io/name";
/// Extra seconds the Job may live beyond the rollout wait (waiter image pull, logging).
const DEADLINE_MARGIN_SECS: u64 = 120;
/// Extra seconds Flux health-checks beyond the Job deadline.
const FLUX_MARGIN_SECS: u64 = 60;
/// How long a finished waiter Job is kept for `kubectl logs`.
const JOB_TTL_SECS: i32 = 86_400;

/// What the unit copies from its siblings and from the function config.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitSettings {
    /// Namespace of the gated Kustomization (the new one goes next to it).
    pub flux_namespace: Option<String>,
    /// Labels for the Flux Kustomization (sibling unit labels).
    pub flux_labels: BTreeMap<String, String>,
    /// `spec.interval` like the siblings.
    pub interval: String,
    /// `spec.retryInterval` like the siblings.
    pub retry_interval: Option<String>,
    /// Flux source of the payload.
    pub source_ref: SourceRef,
    /// Ordering roots the siblings depend on (e.g. `root-dependency-<rev>`).
    pub depends_on: Vec<Value>,
    /// `spec.kubeConfig` of the gated Kustomization (workload clusters).
    pub kube_config: Option<Value>,
    /// Package-relative directory of the payload (`spec.path` without `./`).
    pub payload_dir: String,
    /// File (and index) of the Flux Kustomization in the package.
    pub flux_file: (String, usize),
}

/// Flux `Kustomization` (`kustomize.toolkit.fluxcd.io/v1`), only the fields the unit sets.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct FluxKustomization {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    spec: FluxKustomizationSpec,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct FluxKustomizationSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<Value>,
    interval: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_interval: Option<String>,
    timeout: String,
    prune: bool,
    wait: bool,
    path: String,
    source_ref: SourceRef,
    health_checks: Vec<HealthCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kube_config: Option<Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct HealthCheck {
    api_version: &'static str,
    kind: &'static str,
    name: String,
    namespace: String,
}

/// kustomize `Kustomization` (`kustomize.config.k8s.io/v1beta1`) listing the payload files.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct KustomizeFile {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    resources: Vec<String>,
}

/// The generated objects, each with its file annotations, in output order.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// Flux Kustomization, DaemonSet, waiter objects, kustomization.yaml.
    pub objects: Vec<Value>,
    /// Name of the waiter Job (changes with the image list).
    pub job_name: String,
    /// Flux `spec.timeout` of the unit.
    pub flux_timeout: String,
}

fn labels(component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_string(), UNIT.to_string()),
        (
            "app.kubernetes.io/component".to_string(),
            component.to_string(),
        ),
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
    ])
}

fn meta(name: &str, namespace: &str, component: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels(component)),
        ..Default::default()
    }
}

fn quantity(s: &str) -> Quantity {
    Quantity(s.to_owned())
}

fn resources(requests: (&str, &str), limits: (&str, &str)) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_string(), quantity(requests.0)),
            ("memory".to_string(), quantity(requests.1)),
        ])),
        limits: Some(BTreeMap::from([
            ("cpu".to_string(), quantity(limits.0)),
            ("memory".to_string(), quantity(limits.1)),
        ])),
        ..Default::default()
    }
}

/// Pod Security "restricted" at container level; `uid` is explicit because the frr and
/// frr-k8s images default to root and kubelet refuses runAsNonRoot with a root image user.
fn restricted_container(uid: i64) -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Default::default()
        }),
        privileged: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        run_as_user: Some(uid),
        run_as_group: Some(uid),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn restricted_pod(uid: i64) -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(uid),
        run_as_group: Some(uid),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A DNS-1123 label for an init container: `pull-<n>-<image short name>`.
fn container_name(index: usize, image: &PrepullImage) -> String {
    let mut name = format!("pull-{index}-");
    for c in image.image.short_name().chars() {
        name.push(if c.is_ascii_alphanumeric() { c } else { '-' });
    }
    name.truncate(63);
    name.trim_end_matches('-').to_owned()
}

fn daemonset(spec: &MetalLBImagePrepullSpec, images: &[PrepullImage]) -> DaemonSet {
    let uid = spec.run_as_user;
    let init_containers = images
        .iter()
        .enumerate()
        .map(|(i, image)| Container {
            name: container_name(i, image),
            image: Some(image.image.to_string()),
            image_pull_policy: Some("IfNotPresent".into()),
            command: Some(spec.noop_command.clone()),
            resources: Some(resources(("1m", "8Mi"), ("50m", "32Mi"))),
            security_context: Some(restricted_container(uid)),
            ..Default::default()
        })
        .collect();
    let tolerations = match &spec.tolerations {
        Some(list) => list
            .iter()
            .map(|t| CoreToleration {
                key: t.key.clone(),
                operator: t.operator.clone(),
                value: t.value.clone(),
                effect: t.effect.clone(),
                toleration_seconds: t.toleration_seconds,
            })
            .collect(),
        // frr-k8s runs on every Linux node including control planes: tolerate every taint.
        None => vec![CoreToleration {
            operator: Some("Exists".into()),
            ..Default::default()
        }],
    };
    let selector = BTreeMap::from([(NAME_LABEL.to_string(), UNIT.to_string())]);
    DaemonSet {
        metadata: meta(UNIT, &spec.namespace, "image-prepull"),
        spec: Some(DaemonSetSpec {
            selector: LabelSelector {
                match_labels: Some(selector),
                ..Default::default()
            },
            // Pause pods serve nobody: replace them all at once when the image list changes.
            update_strategy: Some(DaemonSetUpdateStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDaemonSet {
                    max_unavailable: Some(IntOrString::String("100%".into())),
                    ..Default::default()
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels("image-prepull")),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    image_pull_secrets: (!spec.image_pull_secrets.is_empty()).then(|| {
                        spec.image_pull_secrets
                            .iter()
                            .map(|n| LocalObjectReference { name: n.clone() })
                            .collect()
                    }),
                    init_containers: Some(init_containers),
                    containers: vec![Container {
                        name: "pause".into(),
                        image: Some(spec.pause_image.to_string()),
                        image_pull_policy: Some("IfNotPresent".into()),
                        resources: Some(resources(("1m", "8Mi"), ("10m", "16Mi"))),
                        security_context: Some(restricted_container(uid)),
                        ..Default::default()
                    }],
                    node_selector: Some(BTreeMap::from([(
                        "kubernetes.io/os".to_string(),
                        "linux".to_string(),
                    )])),
                    priority_class_name: spec.priority_class_name.clone(),
                    security_context: Some(restricted_pod(uid)),
                    termination_grace_period_seconds: Some(0),
                    tolerations: Some(tolerations),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The waiter's script. `kubectl rollout status` semantics (updated and available equal
/// desired, generation observed); on timeout it names the nodes whose pod is not Ready and then
/// proceeds or fails as configured. Any other failure (RBAC, missing DaemonSet) fails.
const WAIT_SCRIPT: &str = r#"set -u
ds="daemonset/${DAEMONSET}"
echo "waiting up to ${TIMEOUT} for ${NAMESPACE}/${ds} to pull its images on every node"
kubectl -n "${NAMESPACE}" get "${ds}" -o name || exit 1
if kubectl -n "${NAMESPACE}" rollout status "${ds}" --timeout="${TIMEOUT}"; then
  echo "images pre-pulled on every node"
  exit 0
fi
echo "rollout of ${ds} not complete after ${TIMEOUT}:"
kubectl -n "${NAMESPACE}" get "${ds}" -o jsonpath='desired={.status.desiredNumberScheduled} updated={.status.updatedNumberScheduled} available={.status.numberAvailable}{"\n"}' || true
echo "nodes not covered (node, pod, phase):"
kubectl -n "${NAMESPACE}" get pods -l "${SELECTOR}" -o go-template="${NOT_READY}" || true
if [ "${ON_TIMEOUT}" = proceed ]; then
  echo "onTimeout=proceed: releasing the metallb unit; the nodes above pull the frr-k8s images when frr-k8s starts there"
  exit 0
fi
echo "onTimeout=fail: the metallb unit stays blocked until the nodes above are fixed"
exit 1
"#;

/// go-template listing pods that are not Ready: node (or the node it waits for), pod, phase.
const NOT_READY_TEMPLATE: &str = r#"{{range .items}}{{$ready := false}}{{range .status.conditions}}{{if and (eq .type "Ready") (eq .status "True")}}{{$ready = true}}{{end}}{{end}}{{if not $ready}}{{if .spec.nodeName}}{{.spec.nodeName}}{{else}}{{with .spec.affinity}}{{range .nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms}}{{range .matchFields}}{{range .values}}{{.}}{{end}}{{end}}{{end}}{{end}}(not scheduled){{end}} {{.metadata.name}} {{.status.phase}}{{"\n"}}{{end}}{{end}}"#;

fn waiter_name() -> String {
    format!("{UNIT}-waiter")
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

fn job_spec(spec: &MetalLBImagePrepullSpec) -> JobSpec {
    let uid = spec.run_as_user;
    let wait_secs = spec.wait_timeout.as_secs_ceil();
    let on_timeout = match spec.on_timeout {
        OnTimeout::Proceed => "proceed",
        OnTimeout::Fail => "fail",
    };
    JobSpec {
        active_deadline_seconds: Some(
            i64::try_from(wait_secs + DEADLINE_MARGIN_SECS).unwrap_or(i64::MAX),
        ),
        backoff_limit: Some(1),
        ttl_seconds_after_finished: Some(JOB_TTL_SECS),
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels("waiter")),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                restart_policy: Some("Never".into()),
                service_account_name: Some(waiter_name()),
                // kubectl authenticates with the projected service account token.
                automount_service_account_token: Some(true),
                enable_service_links: Some(false),
                security_context: Some(restricted_pod(uid)),
                containers: vec![Container {
                    name: "wait".into(),
                    image: Some(spec.waiter_image.to_string()),
                    image_pull_policy: Some("IfNotPresent".into()),
                    command: Some(vec!["/bin/sh".into(), "-c".into(), WAIT_SCRIPT.into()]),
                    env: Some(vec![
                        env("NAMESPACE", &spec.namespace),
                        env("DAEMONSET", UNIT),
                        env(
                            "SELECTOR",
                            &format!(
                                "{NAME_LABEL}={UNIT},app.kubernetes.io/component=image-prepull"
                            ),
                        ),
                        env("TIMEOUT", &format!("{wait_secs}s")),
                        env("ON_TIMEOUT", on_timeout),
                        env("NOT_READY", NOT_READY_TEMPLATE),
                        // kubectl caches discovery under $HOME; the root filesystem is read-only.
                        env("HOME", "/tmp"),
                    ]),
                    // kubectl needs a few tens of MiB; still small next to anything else on the node.
                    resources: Some(resources(("10m", "64Mi"), ("200m", "128Mi"))),
                    security_context: Some(restricted_container(uid)),
                    volume_mounts: Some(vec![VolumeMount {
                        name: "tmp".into(),
                        mount_path: "/tmp".into(),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }],
                image_pull_secrets: (!spec.image_pull_secrets.is_empty()).then(|| {
                    spec.image_pull_secrets
                        .iter()
                        .map(|n| LocalObjectReference { name: n.clone() })
                        .collect()
                }),
                priority_class_name: spec.priority_class_name.clone(),
                volumes: Some(vec![Volume {
                    name: "tmp".into(),
                    empty_dir: Some(EmptyDirVolumeSource {
                        size_limit: Some(quantity("16Mi")),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        },
        ..Default::default()
    }
}

/// 64-bit FNV-1a: tiny, dependency-free and stable across platforms and releases.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// Formats seconds the way Flux writes durations (`13m`, `90s`).
fn flux_duration(secs: u64) -> String {
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

fn to_value<T: Serialize>(obj: &T) -> Value {
    serde_yaml::to_value(obj).expect("k8s objects serialize to YAML")
}

fn mark(mut obj: Value, path: &str, index: usize) -> Value {
    set_annotation(&mut obj, GENERATED_BY, UNIT);
    set_file(&mut obj, path, index);
    obj
}

/// Renders every object of the unit.
pub fn render(
    spec: &MetalLBImagePrepullSpec,
    images: &[PrepullImage],
    unit: &UnitSettings,
) -> Rendered {
    let ns = spec.namespace.as_str();
    let ds = daemonset(spec, images);
    let mut job_spec = job_spec(spec);
    // Jobs are immutable: a content hash in the name makes any change (image list, timeout,
    // waiter image) a new Job, which Flux creates while pruning the old one.
    let ds_text = serde_yaml::to_string(&ds.spec).unwrap_or_default();
    let job_text = serde_yaml::to_string(&job_spec).unwrap_or_default();
    let hash = fnv1a(&[&ds_text, &job_text, ns]);
    let job_name = format!("{UNIT}-wait-{:08x}", hash >> 32);
    job_spec
        .template
        .metadata
        .get_or_insert_with(Default::default);
    let job = Job {
        metadata: meta(&job_name, ns, "waiter"),
        spec: Some(job_spec),
        ..Default::default()
    };
    let service_account = ServiceAccount {
        metadata: meta(&waiter_name(), ns, "waiter"),
        automount_service_account_token: Some(false),
        ..Default::default()
    };
    let role = Role {
        metadata: meta(&waiter_name(), ns, "waiter"),
        rules: Some(vec![
            // kubectl rollout status: get, then list+watch with a name field selector.
            PolicyRule {
                api_groups: Some(vec!["apps".into()]),
                resources: Some(vec!["daemonsets".into()]),
                verbs: vec!["get".into(), "list".into(), "watch".into()],
                ..Default::default()
            },
            // Only to name the nodes whose pod is not Ready when the wait times out.
            PolicyRule {
                api_groups: Some(vec!["".into()]),
                resources: Some(vec!["pods".into()]),
                verbs: vec!["list".into()],
                ..Default::default()
            },
        ]),
    };
    let binding = RoleBinding {
        metadata: meta(&waiter_name(), ns, "waiter"),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: waiter_name(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: waiter_name(),
            namespace: Some(ns.into()),
            ..Default::default()
        }]),
    };
    let dir = &unit.payload_dir;
    let kustomize_file = KustomizeFile {
        api_version: "kustomize.config.k8s.io/v1beta1",
        kind: "Kustomization",
        metadata: ObjectMeta {
            name: Some(UNIT.into()),
            labels: Some(BTreeMap::from([(
                MANAGED_BY.0.to_string(),
                MANAGED_BY.1.to_string(),
            )])),
            // Build input for Flux's kustomize, never an object to apply.
            annotations: Some(BTreeMap::from([(
                LOCAL_CONFIG.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        resources: vec!["daemonset.yaml".into(), "waiter.yaml".into()],
    };
    let wait_secs = spec.wait_timeout.as_secs_ceil();
    let flux_timeout = flux_duration(wait_secs + DEADLINE_MARGIN_SECS + FLUX_MARGIN_SECS);
    let mut flux_labels = unit.flux_labels.clone();
    flux_labels.insert(MANAGED_BY.0.into(), MANAGED_BY.1.into());
    let flux = FluxKustomization {
        api_version: "kustomize.toolkit.fluxcd.io/v1",
        kind: "Kustomization",
        metadata: ObjectMeta {
            name: Some(UNIT.into()),
            namespace: unit.flux_namespace.clone(),
            labels: Some(flux_labels),
            ..Default::default()
        },
        spec: FluxKustomizationSpec {
            depends_on: unit.depends_on.clone(),
            interval: unit.interval.clone(),
            retry_interval: unit.retry_interval.clone(),
            timeout: flux_timeout.clone(),
            prune: true,
            // Health is the waiter Job only: a DaemonSet check would block on a NotReady node
            // even with onTimeout=proceed.
            wait: false,
            path: format!("./{dir}"),
            source_ref: unit.source_ref.clone(),
            health_checks: vec![HealthCheck {
                api_version: "batch/v1",
                kind: "Job",
                name: job_name.clone(),
                namespace: ns.into(),
            }],
            kube_config: unit.kube_config.clone(),
        },
    };
    let objects = vec![
        mark(to_value(&flux), &unit.flux_file.0, unit.flux_file.1),
        mark(to_value(&ds), &format!("{dir}/daemonset.yaml"), 0),
        mark(to_value(&service_account), &format!("{dir}/waiter.yaml"), 0),
        mark(to_value(&role), &format!("{dir}/waiter.yaml"), 1),
        mark(to_value(&binding), &format!("{dir}/waiter.yaml"), 2),
        mark(to_value(&job), &format!("{dir}/waiter.yaml"), 3),
        mark(
            to_value(&kustomize_file),
            &format!("{dir}/kustomization.yaml"),
            0,
        ),
    ];
    Rendered {
        objects,
        job_name,
        flux_timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_hash_are_stable() {
        assert_eq!(flux_duration(780), "13m");
        assert_eq!(flux_duration(7200), "2h");
        assert_eq!(flux_duration(95), "95s");
        // FNV-1a 64 of "a" followed by the separator byte: fixed forever.
        assert_eq!(fnv1a(&["a"]), fnv1a(&["a"]));
        assert_ne!(fnv1a(&["a", "b"]), fnv1a(&["ab"]));
    }

    #[test]
    fn container_names_are_dns_labels() {
        let image = PrepullImage {
            image: super::super::image::ImageRef::parse("quay.io/metallb/frr-k8s:v0.0.25").unwrap(),
            source: String::new(),
        };
        assert_eq!(container_name(0, &image), "pull-0-frr-k8s");
    }
}

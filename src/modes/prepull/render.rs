//! Builds the unit: the pre-pull DaemonSet, the waiter (ServiceAccount, Role, RoleBinding, Job),
//! the `kustomization.yaml` Flux builds, and the Flux `Kustomization` that gates `metallb`.
//! Core kinds are k8s-openapi types; the Flux and kustomize kinds are small serde structs.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_yaml::Value;

use super::config::{MetalLBImagePrepullSpec, SourceRef};
use super::daemonset::daemonset;
use super::images::PrepullImage;
use super::inputs::{GENERATED_BY, UNIT};
use super::pod::{MANAGED_BY, meta};
use super::siblings::UnitIdentity;
use super::waiter::{DEADLINE_MARGIN_SECS, job_spec, rbac};
use crate::krm::object::{set_annotation, set_file};
use crate::modes::flux::{JobHealthCheck, KustomizeFile};

/// Extra seconds Flux health-checks beyond the Job deadline.
const FLUX_MARGIN_SECS: u64 = 60;

/// What the unit copies from its siblings and from the function config.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitSettings {
    /// Namespace of the gated Kustomization (the new one goes next to it).
    pub flux_namespace: Option<String>,
    /// Labels and annotations sylva-units would give the unit (see [`super::siblings`]).
    pub identity: UnitIdentity,
    /// `spec.interval` like the siblings.
    pub interval: String,
    /// `spec.retryInterval` like the siblings.
    pub retry_interval: Option<String>,
    /// `spec.force` like the gated unit (sylva's default `false`).
    pub force: bool,
    /// Flux source of the payload.
    pub source_ref: SourceRef,
    /// Flux `spec.path` of the payload in that source.
    pub path: String,
    /// Ordering roots the siblings depend on (e.g. `root-dependency-<rev>`).
    pub depends_on: Vec<Value>,
    /// `spec.kubeConfig` for a workload cluster, and where it was read.
    pub kube_config: Option<(Value, String)>,
    /// Package-relative directory of the payload (`spec.payloadDir` without `./`).
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

/// Fields in the order sylva-units writes them (its `toYaml` sorts keys).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct FluxKustomizationSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<Value>,
    force: bool,
    health_checks: Vec<JobHealthCheck>,
    interval: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    kube_config: Option<Value>,
    path: String,
    prune: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_interval: Option<String>,
    source_ref: SourceRef,
    target_namespace: String,
    timeout: String,
    wait: bool,
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

/// 64-bit FNV-1a: tiny, dependency-free and stable across platforms and releases.
pub(crate) fn fnv1a(parts: &[&str]) -> u64 {
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
pub(crate) fn flux_duration(secs: u64) -> String {
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

/// Renders the payload (DaemonSet, waiter objects, `kustomization.yaml`) written to `dir`.
pub fn payload(spec: &MetalLBImagePrepullSpec, images: &[PrepullImage], dir: &str) -> Rendered {
    let ns = spec.namespace.as_str();
    let ds = daemonset(spec, images);
    let job_spec = job_spec(spec);
    // Jobs are immutable: a content hash in the name makes any change (image list, timeout,
    // waiter image) a new Job, which Flux creates while pruning the old one. The text hashed is
    // that of the objects as `Value`s, the same as the typed objects' text (a test checks it), so
    // no second serializer is compiled for every Kubernetes type in the pod spec.
    let ds_text = serde_yaml::to_string(&to_value(&ds.spec)).unwrap_or_default();
    let job_text = serde_yaml::to_string(&to_value(&job_spec)).unwrap_or_default();
    let hash = fnv1a(&[&ds_text, &job_text, ns]);
    let job_name = format!("{UNIT}-wait-{:08x}", hash >> 32);
    let job = Job {
        metadata: meta(&job_name, ns, "waiter"),
        spec: Some(job_spec),
        ..Default::default()
    };
    let (service_account, role, binding) = rbac(ns);
    let kustomize_file =
        payload_kustomize_file(UNIT, vec!["daemonset.yaml".into(), "waiter.yaml".into()]);
    let wait_secs = spec.wait_timeout.as_secs_ceil();
    let flux_timeout = flux_duration(wait_secs + DEADLINE_MARGIN_SECS + FLUX_MARGIN_SECS);
    let objects = vec![
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

/// The kustomize file of a payload directory, labelled as cutover's.
fn payload_kustomize_file(name: &str, resources: Vec<String>) -> KustomizeFile {
    let metadata = ObjectMeta {
        name: Some(name.into()),
        labels: Some(BTreeMap::from([(
            MANAGED_BY.0.to_string(),
            MANAGED_BY.1.to_string(),
        )])),
        ..Default::default()
    };
    KustomizeFile::new(metadata, resources)
}

/// The waiter Job as a Flux health check (`healthChecks` entry of the unit).
pub fn health_check(spec: &MetalLBImagePrepullSpec, job_name: &str) -> Value {
    to_value(&JobHealthCheck::new(job_name, &spec.namespace))
}

/// Renders every object of the unit: the Flux Kustomization first, then the payload.
pub fn render(
    spec: &MetalLBImagePrepullSpec,
    images: &[PrepullImage],
    unit: &UnitSettings,
) -> Rendered {
    let ns = spec.namespace.as_str();
    let Rendered {
        objects: payload_objects,
        job_name,
        flux_timeout,
    } = payload(spec, images, &unit.payload_dir);
    let mut flux_labels = unit.identity.labels.clone();
    // Outside a sylva bundle (no chart labels to copy) say who made it.
    flux_labels
        .entry(MANAGED_BY.0.into())
        .or_insert_with(|| MANAGED_BY.1.into());
    let flux = FluxKustomization {
        api_version: "kustomize.toolkit.fluxcd.io/v1",
        kind: "Kustomization",
        metadata: ObjectMeta {
            name: Some(UNIT.into()),
            namespace: unit.flux_namespace.clone(),
            labels: Some(flux_labels),
            annotations: (!unit.identity.annotations.is_empty())
                .then(|| unit.identity.annotations.clone()),
            ..Default::default()
        },
        spec: FluxKustomizationSpec {
            depends_on: unit.depends_on.clone(),
            force: unit.force,
            // Health is the waiter Job only: a DaemonSet check would block on a NotReady node
            // even with onTimeout=proceed.
            health_checks: vec![JobHealthCheck::new(&job_name, ns)],
            interval: unit.interval.clone(),
            kube_config: unit.kube_config.as_ref().map(|(k, _)| k.clone()),
            path: unit.path.clone(),
            prune: true,
            retry_interval: unit.retry_interval.clone(),
            source_ref: unit.source_ref.clone(),
            // Every payload object already names this namespace; saying it again keeps a
            // workload cluster's default targetNamespace (sylva-system) from moving them.
            target_namespace: ns.into(),
            timeout: flux_timeout.clone(),
            wait: false,
        },
    };
    let mut objects = Vec::with_capacity(payload_objects.len() + 1);
    objects.push(mark(to_value(&flux), &unit.flux_file.0, unit.flux_file.1));
    objects.extend(payload_objects);
    Rendered {
        objects,
        job_name,
        flux_timeout,
    }
}

/// The optional BGP session check (`bgpSessionCheck`): a second Flux Kustomization
/// `metallb-bgp-sessions` that depends on the gated one (`gated`, in the unit's namespace) and
/// health-checks a Job reading frr-k8s' BGPSessionStates (see [`super::sessions`]); its payload
/// goes to `<payloadDir>/bgp-sessions/` and is reconciled from `<source.path>/bgp-sessions`.
pub fn sessions_unit(
    spec: &MetalLBImagePrepullSpec,
    check: &super::config::BgpSessionCheck,
    unit: &UnitSettings,
    gated: &str,
) -> Rendered {
    use super::sessions::{self, SESSIONS_MARGIN_SECS, SESSIONS_UNIT};
    let ns = spec.namespace.as_str();
    let dir = format!("{}/bgp-sessions", unit.payload_dir);
    let job_spec = sessions::job_spec(spec, check);
    let job_text = serde_yaml::to_string(&to_value(&job_spec)).unwrap_or_default();
    let job_name = format!(
        "{SESSIONS_UNIT}-check-{:08x}",
        fnv1a(&[&job_text, ns]) >> 32
    );
    let job = Job {
        metadata: meta(&job_name, ns, "bgp-session-check"),
        spec: Some(job_spec),
        ..Default::default()
    };
    let (service_account, role, binding) = sessions::rbac(ns);
    let kustomize_file = payload_kustomize_file(SESSIONS_UNIT, vec!["check.yaml".into()]);
    let flux_timeout =
        flux_duration(check.timeout.as_secs_ceil() + SESSIONS_MARGIN_SECS + FLUX_MARGIN_SECS);
    let mut flux_labels = unit.identity.labels.clone();
    flux_labels
        .entry(MANAGED_BY.0.into())
        .or_insert_with(|| MANAGED_BY.1.into());
    let mut depends = serde_yaml::Mapping::new();
    depends.insert("name".into(), gated.into());
    let flux = FluxKustomization {
        api_version: "kustomize.toolkit.fluxcd.io/v1",
        kind: "Kustomization",
        metadata: ObjectMeta {
            name: Some(SESSIONS_UNIT.into()),
            namespace: unit.flux_namespace.clone(),
            labels: Some(flux_labels),
            ..Default::default()
        },
        spec: FluxKustomizationSpec {
            depends_on: vec![Value::Mapping(depends)],
            force: unit.force,
            health_checks: vec![JobHealthCheck::new(&job_name, ns)],
            interval: unit.interval.clone(),
            kube_config: unit.kube_config.as_ref().map(|(k, _)| k.clone()),
            path: format!("{}/bgp-sessions", unit.path.trim_end_matches('/')),
            prune: true,
            retry_interval: unit.retry_interval.clone(),
            source_ref: unit.source_ref.clone(),
            target_namespace: ns.into(),
            timeout: flux_timeout.clone(),
            wait: false,
        },
    };
    let flux_path = match unit.flux_file.0.rsplit_once('/') {
        Some((d, _)) => format!("{d}/{SESSIONS_UNIT}.yaml"),
        None => format!("{SESSIONS_UNIT}.yaml"),
    };
    let check_file = format!("{dir}/check.yaml");
    let objects = vec![
        mark(to_value(&flux), &flux_path, 0),
        mark(to_value(&service_account), &check_file, 0),
        mark(to_value(&role), &check_file, 1),
        mark(to_value(&binding), &check_file, 2),
        mark(to_value(&job), &check_file, 3),
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

    /// The Job name hashes the specs' text through `Value`: the text must be the typed specs'
    /// own, or units rendered by an earlier release would get a new waiter Job for nothing.
    #[test]
    fn hashed_text_is_the_typed_specs_text() {
        use crate::modes::prepull::{ImageRef, Toleration};

        let spec = MetalLBImagePrepullSpec {
            noop_image: Some(ImageRef::parse("docker.io/library/busybox:1.36.1-musl").unwrap()),
            priority_class_name: Some("system-node-critical".into()),
            image_pull_secrets: vec!["registry-creds".into()],
            tolerations: Some(vec![Toleration {
                key: Some("node-role.kubernetes.io/control-plane".into()),
                operator: Some("Exists".into()),
                value: None,
                effect: Some("NoSchedule".into()),
                toleration_seconds: Some(300),
            }]),
            ..Default::default()
        };
        let images: Vec<PrepullImage> = [
            "quay.io/metallb/speaker:v0.14.9",
            "quay.io/frrouting/frr:9.1.0",
        ]
        .into_iter()
        .map(|image| PrepullImage {
            image: ImageRef::parse(image).unwrap(),
            source: String::new(),
        })
        .collect();
        let ds_spec = daemonset(&spec, &images).spec;
        let job_spec = job_spec(&spec);
        let typed = serde_yaml::to_string(&ds_spec).unwrap();
        assert!(
            typed.contains("image: quay.io/frrouting/frr:9.1.0"),
            "{typed}"
        );
        assert!(typed.contains("tolerationSeconds: 300"), "{typed}");
        assert_eq!(typed, serde_yaml::to_string(&to_value(&ds_spec)).unwrap());
        let typed = serde_yaml::to_string(&job_spec).unwrap();
        assert_eq!(typed, serde_yaml::to_string(&to_value(&job_spec)).unwrap());
    }
}

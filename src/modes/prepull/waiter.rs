//! The waiter: ServiceAccount, Role, RoleBinding and a Job that waits for the pre-pull
//! DaemonSet rollout, bounded, and then proceeds or fails as configured.

use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, PodSpec, PodTemplateSpec, ServiceAccount, Volume,
    VolumeMount,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::config::{MetalLBImagePrepullSpec, OnTimeout};
use super::daemonset::pull_secrets;
use super::inputs::UNIT;
use super::pod::{
    NAME_LABEL, labels, meta, quantity, resources, restricted_container, restricted_pod,
};

/// Extra seconds the Job may live beyond the rollout wait: the waiter image pull (a slow mirror)
/// and the logging must fit, or a `proceed` Job would fail on its deadline and block metallb.
pub const DEADLINE_MARGIN_SECS: u64 = 300;

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

pub(super) fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

/// Spec of the waiter Job (its name is derived from a hash of this and the DaemonSet).
///
/// No `ttlSecondsAfterFinished`: a deleted Job would be recreated by Flux on its next
/// reconciliation and wait again (every interval). The completed Job stays, immutable, as the
/// unit's health evidence and log; a new image list or timeout gives a new name (Flux creates
/// it and prunes the old one), and closing the gate prunes it with the unit.
pub fn job_spec(spec: &MetalLBImagePrepullSpec) -> JobSpec {
    let wait_secs = spec.wait_timeout.as_secs_ceil();
    let on_timeout = match spec.on_timeout {
        OnTimeout::Proceed => "proceed",
        OnTimeout::Fail => "fail",
    };
    let env = vec![
        env("NAMESPACE", &spec.namespace),
        env("DAEMONSET", UNIT),
        env(
            "SELECTOR",
            &format!("{NAME_LABEL}={UNIT},app.kubernetes.io/component=image-prepull"),
        ),
        env("TIMEOUT", &format!("{wait_secs}s")),
        env("ON_TIMEOUT", on_timeout),
        env("NOT_READY", NOT_READY_TEMPLATE),
    ];
    kubectl_job(
        spec,
        KubectlJob {
            component: "waiter",
            service_account: waiter_name(),
            container: "wait",
            script: WAIT_SCRIPT,
            env,
            deadline_secs: wait_secs + DEADLINE_MARGIN_SECS,
            backoff_limit: 1,
        },
    )
}

/// What differs between the Jobs that run a kubectl script (the waiter, the BGP session check).
pub(super) struct KubectlJob {
    /// `app.kubernetes.io/component` of the pod.
    pub component: &'static str,
    /// Its ServiceAccount (see each Job's `rbac`).
    pub service_account: String,
    /// Container name.
    pub container: &'static str,
    /// The `/bin/sh -c` script.
    pub script: &'static str,
    /// The script's environment (`HOME=/tmp` is added).
    pub env: Vec<EnvVar>,
    /// `activeDeadlineSeconds`.
    pub deadline_secs: u64,
    /// `backoffLimit`.
    pub backoff_limit: i32,
}

/// A Job whose one container runs a kubectl script in `spec.waiterImage`: Pod Security
/// restricted, read-only root filesystem with a small `/tmp`, bounded in time.
pub(super) fn kubectl_job(spec: &MetalLBImagePrepullSpec, job: KubectlJob) -> JobSpec {
    let uid = spec.run_as_user;
    let mut env = job.env;
    // kubectl caches discovery under $HOME; the root filesystem is read-only.
    env.push(self::env("HOME", "/tmp"));
    JobSpec {
        active_deadline_seconds: Some(i64::try_from(job.deadline_secs).unwrap_or(i64::MAX)),
        backoff_limit: Some(job.backoff_limit),
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels(job.component)),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                restart_policy: Some("Never".into()),
                service_account_name: Some(job.service_account),
                // kubectl authenticates with the projected service account token.
                automount_service_account_token: Some(true),
                enable_service_links: Some(false),
                security_context: Some(restricted_pod(uid)),
                containers: vec![Container {
                    name: job.container.into(),
                    image: Some(spec.waiter_image.to_string()),
                    image_pull_policy: Some("IfNotPresent".into()),
                    command: Some(vec!["/bin/sh".into(), "-c".into(), job.script.into()]),
                    env: Some(env),
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
                image_pull_secrets: pull_secrets(spec),
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

/// ServiceAccount, Role and RoleBinding of the waiter, in `ns`.
pub fn rbac(ns: &str) -> (ServiceAccount, Role, RoleBinding) {
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
    (service_account, role, binding)
}

//! The gate Job of each phase: `cutover verify GATE` on the live objects, repeated until it
//! passes or the Job's deadline ends. kubectl (with a shell) is the main container's image; the
//! cutover binary comes from the cutover image (a scratch image: no `cp`), which copies itself
//! into an emptyDir with `cutover install-self` in an init container.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EnvVar, PodSpec, PodTemplateSpec,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::super::config::Phase;
use super::flux::Unit;
use super::rbac::{GATE_ACCOUNT, PLAN_CONFIGMAP, PLAN_KEY, meta};
use super::settings::Settings;
use crate::modes::prepull::{fnv1a, quantity, resources, restricted_container, restricted_pod};

/// What `kubectl get` reads for every gate: `cutover verify`'s USAGE, without MetalLB's pools
/// and advertisements: the chain leaves them (inert, the controller stopped) to the cleanup
/// commits, and only the cleanup gate judges them ([`METALLB_RESOURCES`]).
pub const LIVE_RESOURCES: &str = "services,nodes,pods,leases.coordination.k8s.io,\
ciliumloadbalancerippools.cilium.io,ciliuml2announcementpolicies.cilium.io";

/// What the cleanup gate reads besides [`LIVE_RESOURCES`], each while the API server serves
/// it: uninstalling MetalLB's chart deletes its CRDs (they are templates of its `crds`
/// subchart, metallb/metallb `charts/metallb/charts/crds/templates/crds.yaml`), and with them
/// every pool and advertisement; `kubectl get` of a resource no longer served fails.
pub const METALLB_RESOURCES: &str = "ipaddresspools.metallb.io l2advertisements.metallb.io";

/// Seconds a finished Job stays: a day, far past Flux's health check (which counts a Job with
/// a TTL that is gone as passed: fluxcd/pkg `ssa/manager_wait.go`, `JobsWithTTL`), so its log
/// can be read; Flux recreates it on a later reconciliation and the gate runs once more.
pub const TTL_SECONDS: i32 = 86_400;

/// The gate's script: read the live objects, verify, retry every 10 s. `ALSO` is a later gate
/// whose pass also counts (the Job reruns after its TTL, when the chain may be further on).
/// `OPTIONAL` resources are read while served; one that is not ("the server doesn't have a
/// resource type") has no objects; any other error fails this round.
const SCRIPT: &str = r#"set -u
live() {
  res="${RESOURCES}"
  for r in ${OPTIONAL}; do
    if kubectl get "$r" -A -o name >/dev/null 2>/tmp/optional.err; then
      res="$res,$r"
    elif ! grep -q "doesn't have a resource type" /tmp/optional.err; then
      cat /tmp/optional.err >&2
      return 1
    fi
  done
  kubectl get "$res" -A -o yaml
}
verify() { /gate/cutover verify "$1" --plan /plan/plan.yaml --cilium-namespace "${CILIUM_NAMESPACE}"; }
while :; do
  if live | verify "${GATE}"; then exit 0; fi
  if [ -n "${ALSO}" ] && live | verify "${ALSO}" >/dev/null; then
    echo "gate ${GATE}: the cluster is already past it (gate ${ALSO} passes)"
    exit 0
  fi
  sleep 10
done
"#;

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..Default::default()
    }
}

fn empty_dir(name: &str, size: &str) -> Volume {
    Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource {
            size_limit: Some(quantity(size)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The later gate that also counts for `phase` (see [`SCRIPT`]).
fn also(phase: Unit) -> &'static str {
    match phase {
        Unit::Phase(Phase::Prepare) => "cutover",
        _ => "",
    }
}

/// The resources `phase`'s gate reads while served (see [`SCRIPT`]).
fn optional(phase: Unit) -> &'static str {
    match phase {
        Unit::Cleanup => METALLB_RESOURCES,
        Unit::Phase(_) => "",
    }
}

/// The gate Job of `phase`; its name carries a hash of its spec and the plan, since a Job is
/// immutable: a new plan or image gives a new Job, and Flux prunes the old one.
pub fn job(settings: &Settings, phase: Unit, plan_text: &str) -> Job {
    let uid = settings.run_as_user;
    let deadline = settings.timeout(phase);
    let spec = JobSpec {
        active_deadline_seconds: Some(i64::try_from(deadline).unwrap_or(i64::MAX)),
        // The script retries by itself; one more pod covers an evicted or lost node.
        backoff_limit: Some(1),
        ttl_seconds_after_finished: Some(TTL_SECONDS),
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::from([(
                    "app.kubernetes.io/component".to_string(),
                    format!("gate-{}", phase.as_str()),
                )])),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                restart_policy: Some("Never".into()),
                service_account_name: Some(GATE_ACCOUNT.into()),
                automount_service_account_token: Some(true),
                enable_service_links: Some(false),
                security_context: Some(restricted_pod(uid)),
                init_containers: Some(vec![Container {
                    name: "install-cutover".into(),
                    image: Some(settings.cutover_image.clone()),
                    image_pull_policy: Some("IfNotPresent".into()),
                    command: Some(vec![
                        "/cutover".into(),
                        "install-self".into(),
                        "/gate/cutover".into(),
                    ]),
                    resources: Some(resources(("10m", "16Mi"), ("200m", "64Mi"))),
                    security_context: Some(restricted_container(uid)),
                    volume_mounts: Some(vec![mount("gate", "/gate", false)]),
                    ..Default::default()
                }]),
                containers: vec![Container {
                    name: "verify".into(),
                    image: Some(settings.kubectl_image.clone()),
                    image_pull_policy: Some("IfNotPresent".into()),
                    command: Some(vec!["/bin/sh".into(), "-c".into(), SCRIPT.into()]),
                    env: Some(vec![
                        env("GATE", phase.as_str()),
                        env("ALSO", also(phase)),
                        env("RESOURCES", LIVE_RESOURCES),
                        env("OPTIONAL", optional(phase)),
                        env("CILIUM_NAMESPACE", &settings.cilium_namespace),
                        // kubectl caches discovery under $HOME; the root filesystem is read-only.
                        env("HOME", "/tmp"),
                    ]),
                    // kubectl's YAML of every Service, Node and Pod: size it for large clusters.
                    resources: Some(resources(("50m", "128Mi"), ("1", "1Gi"))),
                    security_context: Some(restricted_container(uid)),
                    volume_mounts: Some(vec![
                        mount("gate", "/gate", true),
                        mount("plan", "/plan", true),
                        mount("tmp", "/tmp", false),
                    ]),
                    ..Default::default()
                }],
                volumes: Some(vec![
                    empty_dir("gate", "64Mi"),
                    empty_dir("tmp", "64Mi"),
                    Volume {
                        name: "plan".into(),
                        config_map: Some(ConfigMapVolumeSource {
                            name: PLAN_CONFIGMAP.into(),
                            items: Some(vec![k8s_openapi::api::core::v1::KeyToPath {
                                key: PLAN_KEY.into(),
                                path: "plan.yaml".into(),
                                ..Default::default()
                            }]),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
        },
        ..Default::default()
    };
    let text = serde_yaml::to_string(&spec).unwrap_or_default();
    let hash = fnv1a(&[&text, plan_text, &settings.gate_namespace]) >> 32;
    let name = format!("{}-gate-{}-{hash:08x}", super::NAME_PREFIX, phase.as_str());
    Job {
        metadata: meta(&name, Some(&settings.gate_namespace)),
        spec: Some(spec),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_prepare_accepts_a_later_gate_and_only_cleanup_reads_metallb() {
        assert_eq!(also(Phase::Prepare.into()), "cutover");
        assert_eq!(also(Phase::StopSpeaker.into()), "");
        assert_eq!(also(Phase::Cutover.into()), "");
        assert_eq!(also(Unit::Cleanup), "");
        assert_eq!(optional(Unit::Cleanup), METALLB_RESOURCES);
        assert_eq!(optional(Phase::Cutover.into()), "");
    }
}

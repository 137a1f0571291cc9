//! The optional BGP session check after the switch (`bgpSessionCheck`): a Job that waits until
//! every frr-k8s `BGPSessionState` reports `Established`, bounded, and fails otherwise, so the
//! Flux Kustomization that health-checks it turns not Ready and shows the outage.
//!
//! Which object reports session state, read in metallb/frr-k8s:
//! - `BGPSessionState` (`frrk8s.metallb.io/v1beta1`, namespaced): one per node, peer and VRF,
//!   written by the frr-k8s status controller in frr-k8s' namespace with `generateName:
//!   <node>-` and labels `frrk8s.metallb.io/{node,peer,vrf}`; `status.bgpStatus` is FRR's neighbor
//!   state (`Established` when up), `status.bfdStatus` BFD's (`cmd/status/controller/
//!   bgpsessionstate_controller.go` and `config/crd/bases/frrk8s.metallb.io_bgpsessionstates.yaml`
//!   at v0.0.25). The CRD first ships in frr-k8s v0.0.18 (added 2025-02-17, commit f13d730; absent
//!   at v0.0.17); metallb 0.16.x vendors frr-k8s 0.0.25, so every supported target has it.
//! - `FRRNodeState` (since 2023-09, commit 1318375) reports the running FRR configuration and the
//!   last reload result per node, not session state: not used.
//!
//! The Job cannot know how many sessions there should be (nodes × peers after node selectors);
//! it requires at least one, and every one `Established`.

use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};

use super::config::{BgpSessionCheck, MetalLBImagePrepullSpec};
use super::pod::meta;
use super::waiter::{KubectlJob, env, kubectl_job};

/// Name of the check's Flux Kustomization and of its ServiceAccount, Role and RoleBinding.
pub const SESSIONS_UNIT: &str = "metallb-bgp-sessions";

/// Seconds the Job may live beyond the session wait (image pull, logging).
pub const SESSIONS_MARGIN_SECS: u64 = 120;

/// The check's script: polls every 10 s; prints the sessions not Established on failure.
const CHECK_SCRIPT: &str = r#"set -u
echo "waiting up to ${TIMEOUT}s for every frr-k8s BGPSessionState in ${NAMESPACE} to be Established"
deadline=$(( $(date +%s) + TIMEOUT ))
while :; do
  states=$(kubectl -n "${NAMESPACE}" get bgpsessionstates.frrk8s.metallb.io -o jsonpath='{range .items[*]}{.status.node} {.status.peer} {.status.vrf} {.status.bgpStatus}{"\n"}{end}') || states=""
  total=$(printf '%s\n' "$states" | grep -c . || true)
  down=$(printf '%s\n' "$states" | grep . | grep -v ' Established$' || true)
  if [ "$total" -gt 0 ] && [ -z "$down" ]; then
    echo "all ${total} BGP sessions Established"
    exit 0
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "BGP sessions not back after ${TIMEOUT}s (${total} known); not Established (node peer vrf state):"
    printf '%s\n' "$down"
    exit 1
  fi
  sleep 10
done
"#;

/// Name of the check's ServiceAccount, Role and RoleBinding.
fn checker_name() -> String {
    format!("{SESSIONS_UNIT}-check")
}

/// Spec of the check Job (its name is derived from a hash of it).
pub fn job_spec(spec: &MetalLBImagePrepullSpec, check: &BgpSessionCheck) -> JobSpec {
    let secs = check.timeout.as_secs_ceil();
    kubectl_job(
        spec,
        KubectlJob {
            component: "bgp-session-check",
            service_account: checker_name(),
            container: "check",
            script: CHECK_SCRIPT,
            env: vec![
                env("NAMESPACE", &spec.namespace),
                env("TIMEOUT", &secs.to_string()),
            ],
            deadline_secs: secs + SESSIONS_MARGIN_SECS,
            backoff_limit: 0,
        },
    )
}

/// ServiceAccount, Role (read-only on BGPSessionStates) and RoleBinding in `ns`: the unit's
/// `targetNamespace` puts every object there, and there frr-k8s writes its session states.
pub fn rbac(ns: &str) -> (ServiceAccount, Role, RoleBinding) {
    let service_account = ServiceAccount {
        metadata: meta(&checker_name(), ns, "bgp-session-check"),
        automount_service_account_token: Some(false),
        ..Default::default()
    };
    let role = Role {
        metadata: meta(&checker_name(), ns, "bgp-session-check"),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["frrk8s.metallb.io".into()]),
            resources: Some(vec!["bgpsessionstates".into()]),
            verbs: vec!["get".into(), "list".into()],
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta(&checker_name(), ns, "bgp-session-check"),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: checker_name(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: checker_name(),
            namespace: Some(ns.into()),
            ..Default::default()
        }]),
    };
    (service_account, role, binding)
}

//! What the gate Jobs share, applied by the first payload (prepare) so each object has one
//! owner: their Namespace (Pod Security `restricted` enforced), ServiceAccount, the read-only
//! ClusterRole and its binding, and the plan ConfigMap `cutover verify --plan` reads.
//!
//! A ClusterRole, not a Role: `cutover verify` reads Nodes and Cilium's pools and policies,
//! which are cluster-scoped, Services in every namespace, MetalLB's pods wherever MetalLB runs,
//! and Cilium's Leases; one `kubectl get -A` lists them. Only `get` and `list`, on exactly the
//! resources of [`super::gate::LIVE_RESOURCES`] and [`super::gate::METALLB_RESOURCES`]; no
//! Secrets, no writes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::settings::Settings;

/// ServiceAccount (and ClusterRole, binding) of the gate Jobs.
pub const GATE_ACCOUNT: &str = "cilium-l2-cutover-gate";
/// The plan ConfigMap.
pub const PLAN_CONFIGMAP: &str = "cilium-l2-cutover-plan";
/// Its key holding the `ObservedState` item.
pub const PLAN_KEY: &str = "plan.yaml";

/// Metadata of a generated object (labelled `app.kubernetes.io/managed-by: cutover`).
pub fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(BTreeMap::from([
            (
                "app.kubernetes.io/name".to_string(),
                super::NAME_PREFIX.to_string(),
            ),
            (
                "app.kubernetes.io/managed-by".to_string(),
                "cutover".to_string(),
            ),
        ])),
        ..Default::default()
    }
}

fn rule(group: &str, resources: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        verbs: vec!["get".into(), "list".into()],
        ..Default::default()
    }
}

/// The shared objects, in apply order.
pub struct Access {
    /// The gate namespace.
    pub namespace: Namespace,
    /// The gates' ServiceAccount.
    pub account: ServiceAccount,
    /// Read-only access to what `verify` reads.
    pub role: ClusterRole,
    /// Binds it to the account.
    pub binding: ClusterRoleBinding,
    /// The plan.
    pub plan: ConfigMap,
}

/// Builds the shared objects; `plan_text` is the `ObservedState` item's YAML.
pub fn access(settings: &Settings, plan_text: &str) -> Access {
    let ns = settings.gate_namespace.as_str();
    let mut ns_meta = meta(ns, None);
    let labels = ns_meta.labels.get_or_insert_with(BTreeMap::new);
    for mode in ["enforce", "audit", "warn"] {
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}"),
            "restricted".into(),
        );
    }
    Access {
        namespace: Namespace {
            metadata: ns_meta,
            ..Default::default()
        },
        account: ServiceAccount {
            metadata: meta(GATE_ACCOUNT, Some(ns)),
            ..Default::default()
        },
        role: ClusterRole {
            metadata: meta(GATE_ACCOUNT, None),
            rules: Some(vec![
                rule("", &["services", "nodes", "pods"]),
                rule("coordination.k8s.io", &["leases"]),
                rule(
                    "cilium.io",
                    &["ciliumloadbalancerippools", "ciliuml2announcementpolicies"],
                ),
                // The cleanup gate proves MetalLB's pools and advertisements are gone.
                rule("metallb.io", &["ipaddresspools", "l2advertisements"]),
            ]),
            ..Default::default()
        },
        binding: ClusterRoleBinding {
            metadata: meta(GATE_ACCOUNT, None),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: GATE_ACCOUNT.into(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: GATE_ACCOUNT.into(),
                namespace: Some(ns.into()),
                ..Default::default()
            }]),
        },
        plan: ConfigMap {
            metadata: meta(PLAN_CONFIGMAP, Some(ns)),
            data: Some(BTreeMap::from([(
                PLAN_KEY.to_string(),
                plan_text.to_owned(),
            )])),
            ..Default::default()
        },
    }
}

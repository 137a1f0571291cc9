//! Pieces every generated pod shares: labels, metadata, tiny resources and the Pod Security
//! "restricted" security contexts.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, PodSecurityContext, ResourceRequirements, SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::inputs::UNIT;

/// Label every generated object carries (with the `fn.cutover.dev/generated-by` annotation) so
/// a later run recognises it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "cutover");
/// Selector label of the generated pods.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";

/// Labels of every generated object: unit name, component, managed-by.
pub fn labels(component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_string(), UNIT.to_string()),
        (
            "app.kubernetes.io/component".to_string(),
            component.to_string(),
        ),
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
    ])
}

/// Metadata of a generated namespaced object.
pub fn meta(name: &str, namespace: &str, component: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels(component)),
        ..Default::default()
    }
}

/// A resource quantity.
pub fn quantity(s: &str) -> Quantity {
    Quantity(s.to_owned())
}

/// Requests and limits as `(cpu, memory)` pairs.
pub fn resources(requests: (&str, &str), limits: (&str, &str)) -> ResourceRequirements {
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
pub fn restricted_container(uid: i64) -> SecurityContext {
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

/// Pod Security "restricted" at pod level (same uid as the containers).
pub fn restricted_pod(uid: i64) -> PodSecurityContext {
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

//! Annotation keys that orchestrators (kpt, kustomize) use to track items across a function call.

/// Legacy path annotation, still written by kpt and kustomize.
pub const PATH: &str = "config.kubernetes.io/path";
/// Legacy index annotation (position of the document in its file).
pub const INDEX: &str = "config.kubernetes.io/index";
/// Current path annotation.
pub const INTERNAL_PATH: &str = "internal.config.kubernetes.io/path";
/// Current index annotation.
pub const INTERNAL_INDEX: &str = "internal.config.kubernetes.io/index";
/// Marks resources that are local configuration and never applied to a cluster.
pub const LOCAL_CONFIG: &str = "config.kubernetes.io/local-config";

/// Prefixes and keys that identify an item to its orchestrator. Modes must never drop them:
/// kpt and kustomize restore comments and field order (and kustomize matches resources) by them.
pub const IDENTITY_KEYS: &[&str] = &[
    "config.kubernetes.io/path",
    "config.kubernetes.io/index",
    "config.k8s.io/id",
    "kustomize.config.k8s.io/id",
];

/// Prefix of annotations reserved for orchestrators.
pub const INTERNAL_PREFIX: &str = "internal.config.kubernetes.io/";

/// True for every annotation an orchestrator relies on (see [`IDENTITY_KEYS`], [`INTERNAL_PREFIX`]).
pub fn is_orchestrator_annotation(key: &str) -> bool {
    key.starts_with(INTERNAL_PREFIX) || IDENTITY_KEYS.contains(&key)
}

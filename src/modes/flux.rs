//! The Flux and kustomize objects the modes write: small serde structs holding the fields
//! written, shared by the prepull's unit and the announcer's chain.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use crate::krm::annotations::LOCAL_CONFIG;

/// A `healthChecks` entry of a Flux Kustomization naming a Job: Flux's Job status reader counts
/// it healthy once the Job is Complete, failed once it is Failed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobHealthCheck {
    api_version: &'static str,
    kind: &'static str,
    name: String,
    namespace: String,
}

impl JobHealthCheck {
    /// The health check of Job `name` in `namespace`.
    pub fn new(name: &str, namespace: &str) -> Self {
        JobHealthCheck {
            api_version: "batch/v1",
            kind: "Job",
            name: name.to_owned(),
            namespace: namespace.to_owned(),
        }
    }
}

/// kustomize `Kustomization` (`kustomize.config.k8s.io/v1beta1`) listing a payload directory's
/// files.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KustomizeFile {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    resources: Vec<String>,
}

impl KustomizeFile {
    /// The kustomize file with `metadata` (name and labels) listing `resources`. It is marked
    /// local config: a build input of Flux's kustomize (and kpt's), never an object to apply.
    pub fn new(mut metadata: ObjectMeta, resources: Vec<String>) -> Self {
        metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(LOCAL_CONFIG.to_string(), "true".to_string());
        KustomizeFile {
            api_version: "kustomize.config.k8s.io/v1beta1",
            kind: "Kustomization",
            metadata,
            resources,
        }
    }
}

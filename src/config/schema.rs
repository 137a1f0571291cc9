//! JSON schemas of the function configuration, generated from the typed structs.
//!
//! The same schemas are printed by `cutover schema [KIND]`, embedded in `function.yaml` (each
//! kind's `KRMFunctionDefinition` carries [`kind_schema`], checked by a test) and used to type the
//! values of the ConfigMap form. Schemas are OpenAPI v3 flavoured with every subschema inlined (no `$ref`),
//! as CRD-style `openAPIV3Schema`s require.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value as Json, json};

use super::{API_VERSION, Kind};
use crate::modes::announcer::LoadBalancerAnnouncerSpec;
use crate::modes::capm3::Capm3OSImageSourcesSpec;
use crate::modes::prepull::MetalLBImagePrepullSpec;

fn generate<T: JsonSchema>() -> Json {
    let mut settings = SchemaSettings::openapi3();
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    value
}

/// Schema of a kind's `spec`.
pub fn spec_schema(kind: Kind) -> Json {
    match kind {
        Kind::MetalLBImagePrepull => generate::<MetalLBImagePrepullSpec>(),
        Kind::LoadBalancerAnnouncer => generate::<LoadBalancerAnnouncerSpec>(),
        Kind::Capm3OSImageSources => generate::<Capm3OSImageSourcesSpec>(),
    }
}

fn description(kind: Kind) -> &'static str {
    match kind {
        Kind::MetalLBImagePrepull => {
            "Adds a gated metallb-image-prepull Flux unit that pre-pulls the frr-k8s and frr images on \
             every node before the metallb unit reconciles (Sylva 1.6 -> 1.7 upgrade)."
        }
        Kind::LoadBalancerAnnouncer => {
            "Plans or performs the cutover from MetalLB L2 to Cilium LB-IPAM and L2 announcements, \
             proving every LoadBalancer Service keeps its IP and announcing nodes."
        }
        Kind::Capm3OSImageSources => {
            "Checks (and with fix: true rewires) where a Sylva capm3 cluster's `cluster` unit reads \
             its OS image facts (its own os-images-info) and the list of images the management \
             cluster's os-image-server serves, and that every selected image is served."
        }
    }
}

/// Schema of a whole configuration object of one kind.
pub fn kind_schema(kind: Kind) -> Json {
    json!({
        "type": "object",
        "description": description(kind),
        "required": ["apiVersion", "kind"],
        "properties": {
            "apiVersion": {"type": "string", "enum": [API_VERSION]},
            "kind": {"type": "string", "enum": [kind.name()]},
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "spec": spec_schema(kind),
        },
    })
}

/// Schema accepting any configuration kind (`cutover schema`).
pub fn function_config_schema() -> Json {
    json!({
        "type": "object",
        "description": "cutover function configuration: one of the kinds below (the kpt ConfigMap \
                        form with `mode=<kind's mode>` maps its data keys onto the same spec fields).",
        "required": ["apiVersion", "kind"],
        "properties": {
            "apiVersion": {"type": "string", "enum": [API_VERSION]},
            "kind": {"type": "string", "enum": Kind::ALL.map(Kind::name)},
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        },
        "oneOf": Kind::ALL.map(kind_schema),
    })
}

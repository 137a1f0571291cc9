//! Function configuration: the typed `fn.cutover.dev/v1alpha1` kinds and the kpt ConfigMap form,
//! validated strictly so a typo is an error that names the field, never a silent default.

pub mod configmap;
pub mod schema;
pub mod types;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_yaml::Value;

use crate::krm::{KrmObject, KrmResult};
use crate::modes::announcer::LoadBalancerAnnouncerSpec;
use crate::modes::capm3::Capm3OSImageSourcesSpec;
use crate::modes::prepull::MetalLBImagePrepullSpec;

/// API group of cutover's function configuration kinds.
pub const GROUP: &str = "fn.cutover.dev";
/// The only served version.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of the typed configuration kinds.
pub const API_VERSION: &str = "fn.cutover.dev/v1alpha1";

/// The configuration kinds cutover understands, one per mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `MetalLBImagePrepull`: the Sylva 1.6 → 1.7 frr-k8s image prepull unit.
    MetalLBImagePrepull,
    /// `LoadBalancerAnnouncer`: the MetalLB L2 → Cilium LB-IPAM/L2 cutover.
    LoadBalancerAnnouncer,
    /// `Capm3OSImageSources`: the capm3 OS-image sources of a Sylva cluster's `cluster` unit.
    Capm3OSImageSources,
}

impl Kind {
    /// Every kind, in documentation order.
    pub const ALL: [Kind; 3] = [
        Kind::MetalLBImagePrepull,
        Kind::LoadBalancerAnnouncer,
        Kind::Capm3OSImageSources,
    ];

    /// The `kind:` value.
    pub fn name(self) -> &'static str {
        match self {
            Kind::MetalLBImagePrepull => "MetalLBImagePrepull",
            Kind::LoadBalancerAnnouncer => "LoadBalancerAnnouncer",
            Kind::Capm3OSImageSources => "Capm3OSImageSources",
        }
    }
    /// The `mode=` value of the ConfigMap form (also used as the `mode` result tag).
    pub fn mode(self) -> &'static str {
        match self {
            Kind::MetalLBImagePrepull => "metallb-image-prepull",
            Kind::LoadBalancerAnnouncer => "load-balancer-announcer",
            Kind::Capm3OSImageSources => "capm3-os-image-sources",
        }
    }
    /// Every `kind:` name, for messages: `A, B or C`.
    pub fn names() -> String {
        join_or(Kind::ALL.map(Kind::name))
    }
    /// Every mode name, for messages: `a, b or c`.
    pub fn modes() -> String {
        join_or(Kind::ALL.map(Kind::mode))
    }
    /// Looks a kind up by its `kind:` name or its mode name.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == name || k.mode() == name)
    }
}

/// A validated function configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionConfig {
    /// Run the MetalLB image prepull mode.
    MetalLBImagePrepull(Box<MetalLBImagePrepullSpec>),
    /// Run the load-balancer announcer cutover mode.
    LoadBalancerAnnouncer(LoadBalancerAnnouncerSpec),
    /// Run the capm3 OS-image sources mode.
    Capm3OSImageSources(Capm3OSImageSourcesSpec),
}

impl FunctionConfig {
    /// Which kind this is.
    pub fn kind(&self) -> Kind {
        match self {
            FunctionConfig::MetalLBImagePrepull(_) => Kind::MetalLBImagePrepull,
            FunctionConfig::LoadBalancerAnnouncer(_) => Kind::LoadBalancerAnnouncer,
            FunctionConfig::Capm3OSImageSources(_) => Kind::Capm3OSImageSources,
        }
    }
}

/// Envelope of the typed form; unknown top-level fields are rejected.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // apiVersion, kind and metadata are checked before decoding
struct Typed<S> {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    spec: Option<S>,
}

/// The `check` tag of every result about the function config itself.
pub const CHECK: &str = "config";

/// Reads and validates the function configuration. Every failure is one error result that names
/// the configuration object and the offending field, tagged `check: config` (and `mode` once the
/// config names a mode).
pub fn parse(function_config: Option<&Value>) -> Result<FunctionConfig, KrmResult> {
    parse_untagged(function_config).map_err(|r| r.tag("check", CHECK))
}

fn parse_untagged(function_config: Option<&Value>) -> Result<FunctionConfig, KrmResult> {
    let Some(fc) = function_config else {
        return Err(KrmResult::error(format!(
            "no function config: cutover needs one to pick its mode; {}",
            config_help()
        ))
        .field("functionConfig"));
    };
    let err = |message: String, path: &str| KrmResult::error(message).about(fc).field(path);
    match (fc.api_version(), fc.kind()) {
        ("v1", "ConfigMap") => configmap::parse(fc).map_err(|r| match configmap::mode_of(fc) {
            Some(kind) => r.tag("mode", kind.mode()),
            None => r,
        }),
        (API_VERSION, kind) => match Kind::from_name(kind).filter(|k| k.name() == kind) {
            Some(kind) => decode_typed(fc, kind).map_err(|r| r.tag("mode", kind.mode())),
            None => Err(err(
                format!(
                    "unknown kind {kind:?} for {API_VERSION}: expected {}",
                    Kind::names()
                ),
                "kind",
            )
            .current(kind)),
        },
        (api_version, _) if api_version.starts_with(GROUP) => Err(err(
            format!("unsupported apiVersion {api_version:?}: cutover serves {API_VERSION}"),
            "apiVersion",
        )
        .current(api_version)
        .proposed(API_VERSION)),
        (api_version, kind) => Err(err(
            format!(
                "unsupported functionConfig {api_version}/{kind}: expected {API_VERSION} {}, \
                 or a v1 ConfigMap with a `mode` key",
                Kind::names()
            ),
            "apiVersion",
        )
        .current(api_version)),
    }
}

/// What a function config looks like: one short example of each kind and of the ConfigMap
/// form, for the error a run without one gets. The example field of each kind is the first
/// `spec` field whose schema offers a value (a default or an enum), so every kind gets one
/// without a list to keep in step.
pub fn config_help() -> String {
    let mut out = String::from(
        "give kpt `--fn-config FILE` (or `configPath:` in the Kptfile pipeline) with one of\n",
    );
    for kind in Kind::ALL {
        out.push_str(&format!(
            "\n  apiVersion: {API_VERSION}\n  kind: {}\n  metadata: {{name: {}}}\n",
            kind.name(),
            kind.mode()
        ));
        if let Some((field, value)) = example_field(kind) {
            out.push_str(&format!("  spec: {{{field}: {value}}}\n"));
        }
    }
    let (mode, example) = Kind::ALL
        .last()
        .map(|k| (k.mode(), example_field(*k)))
        .unwrap_or_default();
    let example = example.map_or(String::new(), |(f, v)| format!(" {f}={v}"));
    out.push_str(&format!(
        "\nor kpt's ConfigMap form: kpt fn eval PKG --exec cutover -- mode={mode}{example}\n\
         (every field: `cutover schema KIND`, README \"Configuration reference\")"
    ));
    out
}

fn example_field(kind: Kind) -> Option<(String, String)> {
    let spec = schema::spec_schema(kind);
    let props = spec.get("properties")?.as_object()?;
    props.iter().find_map(|(name, s)| {
        let value = s
            .get("default")
            .filter(|d| d.is_string())
            .or_else(|| s.get("enum")?.as_array()?.iter().find(|v| v.is_string()))?;
        Some((name.clone(), value.as_str()?.to_owned()))
    })
}

fn decode_typed(fc: &Value, kind: Kind) -> Result<FunctionConfig, KrmResult> {
    match kind {
        Kind::MetalLBImagePrepull => decode::<Typed<MetalLBImagePrepullSpec>>(fc, fc.clone(), "")
            .map(|t| FunctionConfig::MetalLBImagePrepull(Box::new(t.spec.unwrap_or_default()))),
        Kind::LoadBalancerAnnouncer => {
            decode::<Typed<LoadBalancerAnnouncerSpec>>(fc, fc.clone(), "")
                .map(|t| FunctionConfig::LoadBalancerAnnouncer(t.spec.unwrap_or_default()))
        }
        Kind::Capm3OSImageSources => decode::<Typed<Capm3OSImageSourcesSpec>>(fc, fc.clone(), "")
            .map(|t| FunctionConfig::Capm3OSImageSources(t.spec.unwrap_or_default())),
    }
}

/// `a, b or c`.
fn join_or<const N: usize>(names: [&str; N]) -> String {
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Decodes `value` into `T`, turning a failure into an error result about `fc` whose field path
/// is `prefix` followed by the path serde reached (e.g. `spec.waitTimeout`, `data.images[1]`).
pub(crate) fn decode<T: DeserializeOwned>(
    fc: &Value,
    value: Value,
    prefix: &str,
) -> Result<T, KrmResult> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = match (prefix.is_empty(), path.as_str()) {
            (_, ".") | (_, "") => prefix.trim_end_matches('.').to_owned(),
            (true, p) => p.to_owned(),
            (false, p) => format!("{prefix}{p}"),
        };
        let path = if path.is_empty() {
            "spec".to_owned()
        } else {
            path
        };
        // The path is the result's field (printed before the message): not again in the text.
        KrmResult::error(format!("invalid function config: {}", e.into_inner()))
            .about(fc)
            .field(path)
    })
}

#[cfg(test)]
mod tests;

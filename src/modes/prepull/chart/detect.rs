//! Where the upstream MetalLB chart is installed, read with the installation readers the
//! announcer uses ([`crate::modes::install`]): a Flux HelmRelease of the `metallb` chart (`chart`
//! from any source, or `chartRef` to an OCIRepository or HelmChart), a cozystack Package (or the
//! umbrella HelmRelease cozystack's operator generates), or a kustomize `helmCharts` entry. Live
//! objects exported into the package (local config, or a HelmRelease that carries `status`) give
//! the running chart version.

use serde_yaml::Value;

use super::super::inputs::GENERATED_BY;
use crate::krm::annotations::LOCAL_CONFIG;
use crate::krm::{KrmObject, KrmResult};
use crate::modes::install::{self, COZYSTACK_GROUP, FLUX_SOURCE_GROUP, Sources, ValuesAt};

/// kustomize's Kustomization group (a `kustomization.yaml` with `helmCharts`).
const KUSTOMIZE_GROUP: &str = "kustomize.config.k8s.io";
/// Flux HelmRelease group.
const FLUX_HELM_GROUP: &str = "helm.toolkit.fluxcd.io";

/// How MetalLB is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A Flux HelmRelease of the upstream `metallb` chart (or an umbrella nesting its values under
    /// `metallb:`).
    HelmRelease,
    /// A cozystack Package (`cozystack.metallb`) or the HelmRelease its operator generates.
    Cozystack,
    /// A kustomize `helmCharts` entry.
    HelmCharts,
}

impl Form {
    /// Short name for result tags.
    pub fn tag(self) -> &'static str {
        match self {
            Form::HelmRelease => "helmrelease",
            Form::Cozystack => "cozystack",
            Form::HelmCharts => "kustomize-helmcharts",
        }
    }
}

/// One MetalLB installation among the items.
#[derive(Debug, Clone, PartialEq)]
pub struct Installation {
    /// Item index.
    pub index: usize,
    /// Its form.
    pub form: Form,
    /// The target chart version as written (exact or a range) and the field it was read from.
    pub target: Option<(String, String)>,
    /// Keys from the item's root to the upstream chart's values.
    pub values_path: Vec<String>,
    /// Why MetalLB is not being installed by it (suspended, component disabled).
    pub disabled: Option<String>,
    /// The HelmRelease merges values from ConfigMaps or Secrets this mode does not read.
    pub values_from: bool,
    /// The item's chart versions are MetalLB's (the upstream chart itself, not cozystack's or
    /// another umbrella or repackaging): only then does its live status tell the running one.
    pub upstream: bool,
}

impl Installation {
    /// The upstream chart's values, when the item carries any.
    pub fn values<'a>(&self, items: &'a [Value]) -> Option<&'a Value> {
        if self.values_path.is_empty() {
            return None;
        }
        lookup(&items[self.index], &self.values_path).filter(|v| v.is_mapping())
    }

    /// Dotted field path of the upstream values.
    pub fn values_field(&self) -> String {
        self.values_path.join(".")
    }
}

/// `Kind namespace/name` (or `Kind name`), for results.
pub fn describe(item: &Value) -> String {
    match item.namespace() {
        Some(ns) => format!("{} {ns}/{}", item.kind(), item.name()),
        None => format!("{} {}", item.kind(), item.name()),
    }
}

fn is_local(item: &Value) -> bool {
    item.annotation(LOCAL_CONFIG) == Some("true")
}

fn tree_path(at: &ValuesAt, prefix: &[String]) -> Vec<String> {
    let mut path = match at {
        ValuesAt::Tree(keys) => keys.clone(),
        ValuesAt::Text => vec!["spec".into(), "valuesContent".into()],
    };
    path.extend(prefix.iter().cloned());
    path
}

/// Finds the MetalLB installations among the items (local config and generated items are
/// never installations). A HelmRelease cozystack generated is left out when its Package is
/// among the items: the Package carries the values.
pub fn find(items: &[Value]) -> Vec<Installation> {
    let mut sources = Sources::default();
    for item in items {
        if item.group() == FLUX_SOURCE_GROUP {
            sources.observe(item);
        }
    }
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        if is_local(item) && !item.is(KUSTOMIZE_GROUP, "Kustomization") {
            continue;
        }
        if item.annotation(GENERATED_BY).is_some() {
            continue;
        }
        match (item.group(), item.kind()) {
            (FLUX_HELM_GROUP, "HelmRelease") => out.extend(helm_release(index, item, &sources)),
            (COZYSTACK_GROUP, "Package") => out.extend(package(index, item)),
            (KUSTOMIZE_GROUP, "Kustomization") => helm_charts(index, item, &mut out),
            _ => {}
        }
    }
    // The Package carries the values of the HelmRelease its operator generated.
    let packages: Vec<String> = out
        .iter()
        .filter(|i| items[i.index].is(COZYSTACK_GROUP, "Package"))
        .map(|i| items[i.index].name().to_owned())
        .collect();
    out.retain(|i| {
        let item = &items[i.index];
        !(item.is(FLUX_HELM_GROUP, "HelmRelease")
            && item
                .label(install::COZYSTACK_PACKAGE_LABEL)
                .is_some_and(|p| packages.iter().any(|n| n == p)))
    });
    out
}

/// A Flux HelmRelease of the MetalLB chart (upstream or cozystack's).
fn helm_release(index: usize, item: &Value, sources: &Sources) -> Option<Installation> {
    let facts = install::read_release(index, item)?;
    let chart = facts.chart(sources);
    if chart.project() != Some("metallb") {
        return None;
    }
    let values = facts.values(&chart, "metallb");
    let spec = item.get("spec");
    let target = chart.is_upstream().then_some(()).and_then(|()| {
        let chart_ref = spec.and_then(|s| s.get("chartRef"));
        let field = match chart_ref {
            Some(r) => format!(
                "the version of chartRef {} {}",
                r.get("kind").and_then(Value::as_str).unwrap_or_default(),
                r.get("name").and_then(Value::as_str).unwrap_or_default()
            ),
            None => "spec.chart.spec.version".to_owned(),
        };
        chart.version.clone().map(|v| (v, field))
    });
    let suspended = spec.and_then(|s| s.get("suspend")).and_then(Value::as_bool) == Some(true);
    let form = if chart.cozystack {
        Form::Cozystack
    } else {
        Form::HelmRelease
    };
    Some(Installation {
        index,
        form,
        target,
        values_path: tree_path(&values.at, &values.prefix),
        disabled: suspended.then(|| {
            format!(
                "{} is suspended (spec.suspend: true): Flux does not upgrade it",
                describe(item)
            )
        }),
        values_from: spec
            .and_then(|s| s.get("valuesFrom"))
            .and_then(Value::as_sequence)
            .is_some_and(|s| !s.is_empty()),
        upstream: chart.is_upstream(),
    })
}

/// A cozystack Package that installs MetalLB, or names it and disables it.
fn package(index: usize, item: &Value) -> Option<Installation> {
    let named = item.name() == "cozystack.metallb";
    match install::read_package(item) {
        Some(p) if p.project == "metallb" => Some(Installation {
            index,
            form: Form::Cozystack,
            target: None,
            values_path: tree_path(&p.values.at, &p.values.prefix),
            disabled: None,
            values_from: false,
            upstream: false,
        }),
        None if named => Some(Installation {
            index,
            form: Form::Cozystack,
            target: None,
            values_path: Vec::new(),
            disabled: Some(format!(
                "Package {} disables its metallb component (spec.components.metallb.enabled: false)",
                item.name()
            )),
            values_from: false,
            upstream: false,
        }),
        _ => None,
    }
}

/// The `helmCharts` entries of the MetalLB chart in a kustomize Kustomization.
fn helm_charts(index: usize, item: &Value, out: &mut Vec<Installation>) {
    let Some(charts) = item.get("helmCharts").and_then(Value::as_sequence) else {
        return;
    };
    for (i, c) in charts.iter().enumerate() {
        if c.get("name").and_then(Value::as_str) != Some("metallb") {
            continue;
        }
        out.push(Installation {
            index,
            form: Form::HelmCharts,
            target: c
                .get("version")
                .and_then(Value::as_str)
                .map(|v| (v.to_owned(), format!("helmCharts[{i}].version"))),
            values_path: vec!["helmCharts".into(), i.to_string(), "valuesInline".into()],
            disabled: None,
            values_from: false,
            upstream: true,
        });
    }
}

/// `helmCharts` keys are list indices: walk them as such.
fn lookup<'a>(root: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(root, |v, k| match v {
        Value::Sequence(s) => k.parse::<usize>().ok().and_then(|i| s.get(i)),
        _ => v.get(k.as_str()),
    })
}

/// The chart version MetalLB runs, from a HelmRelease's live status: the newest entry of
/// `status.history` (helm-controller `api/v2/snapshot_types.go`: `chartVersion`; the list is
/// newest first), else `status.lastAttemptedRevision` (the chart version, `@digest` for OCI).
/// Read from the installing HelmRelease itself or from a local-config copy of it (an exported
/// live object) with the same namespace and name.
pub fn running_version(items: &[Value], install: &Installation) -> Option<(String, String, usize)> {
    let me = &items[install.index];
    if !install.upstream || !me.is(FLUX_HELM_GROUP, "HelmRelease") {
        return None;
    }
    let same = |item: &Value| {
        item.is(FLUX_HELM_GROUP, "HelmRelease")
            && item.name() == me.name()
            && item.namespace() == me.namespace()
    };
    let candidates = std::iter::once(install.index).chain(
        items
            .iter()
            .enumerate()
            .filter(|(i, item)| *i != install.index && is_local(item) && same(item))
            .map(|(i, _)| i),
    );
    for i in candidates {
        let Some(status) = items[i].get("status") else {
            continue;
        };
        let from_history = status
            .get("history")
            .and_then(Value::as_sequence)
            .and_then(|h| h.first())
            .and_then(|s| s.get("chartVersion"))
            .and_then(Value::as_str);
        if let Some(v) = from_history {
            return Some((
                v.to_owned(),
                format!("status.history[0].chartVersion of {}", describe(&items[i])),
                i,
            ));
        }
        if let Some(v) = status.get("lastAttemptedRevision").and_then(Value::as_str) {
            let v = v.split('@').next().unwrap_or(v);
            return Some((
                v.to_owned(),
                format!("status.lastAttemptedRevision of {}", describe(&items[i])),
                i,
            ));
        }
    }
    None
}

/// Evidence that BGP is in use: MetalLB BGPPeer objects among the items, or BGPPeer manifests
/// inside the chart values (umbrella charts and `extraObjects`-style values carry them).
pub fn bgp_in_values(values: &Value) -> usize {
    match values {
        Value::Mapping(m) => {
            let own = usize::from(
                m.get("kind").and_then(Value::as_str) == Some("BGPPeer")
                    && m.get("apiVersion")
                        .and_then(Value::as_str)
                        .is_some_and(|a| a.starts_with("metallb.io/")),
            );
            own + m.values().map(bgp_in_values).sum::<usize>()
        }
        Value::Sequence(s) => s.iter().map(bgp_in_values).sum(),
        _ => 0,
    }
}

/// An error about several installations.
pub fn ambiguous(items: &[Value], found: &[Installation]) -> KrmResult {
    let names: Vec<String> = found.iter().map(|i| describe(&items[i.index])).collect();
    KrmResult::error(format!(
        "MetalLB is installed by {} items ({}): cannot tell which one the upgrade is; run the function on a package holding one",
        found.len(),
        names.join(", ")
    ))
    .about(&items[found[1].index])
}

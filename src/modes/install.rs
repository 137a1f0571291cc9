//! How MetalLB and Cilium are installed, in the forms cozystack and plain Flux setups use (shared
//! by the announcer and the prepull mode):
//!
//! - a Flux `HelmRelease` (`helm.toolkit.fluxcd.io/v2`) with `spec.chart` (a chart from a
//!   HelmRepository, or a path in a GitRepository or Bucket) or `spec.chartRef` (an
//!   OCIRepository, a Flux HelmChart, or an ExternalArtifact — what cozystack's operator
//!   references, `<packagesource>-<variant>-<component>`);
//! - a cozystack `Package` (`cozystack.io/v1alpha1`, cluster-scoped, named after its
//!   PackageSource): `spec.components.<component>.values` are the values the cozystack operator
//!   copies into the HelmRelease it generates (it rewrites that HelmRelease's spec on every
//!   reconcile, so the Package is the object that carries the values);
//! - a k3s/RKE2 `HelmChart` (`helm.cattle.io/v1`), values as YAML text in `spec.valuesContent`.
//!
//! Umbrella charts (cozystack's `cozy-metallb`, `cozy-cilium`) nest the upstream chart's values
//! under `metallb:` / `cilium:`. Read from cozystack/cozystack (`internal/operator/
//! package_reconciler.go`, `packagesource_reconciler.go`, `api/v1alpha1/package_types.go`,
//! `packages/core/platform/templates/bundles/system.yaml`, `packages/system/{metallb,cilium}`) at
//! v0.41.11, v1.4.6 and v1.6.2.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_yaml::Value;

use crate::krm::KrmObject;

/// Flux source API group.
pub const FLUX_SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";
/// cozystack API group.
pub const COZYSTACK_GROUP: &str = "cozystack.io";
/// Label the cozystack operator puts on the HelmReleases it generates: the Package's name.
pub const COZYSTACK_PACKAGE_LABEL: &str = "cozystack.io/package";
/// Annotation the cozystack operator puts on a generated HelmRelease: the values files merged
/// into its chart artifact.
pub const COZYSTACK_VALUES_FILES: &str = "cozyhr.cozystack.io/values-files";
/// cozystack's `values-kubeovn.yaml` for its Cilium package sets `cilium.devices` to these
/// (packages/system/cilium/values-kubeovn.yaml, identical at v0.41.11, v1.4.6 and v1.6.2).
pub const COZYSTACK_KUBEOVN_DEVICES: &str = "ovn0 genev_sys_6081";

/// `spec` of a Flux HelmRelease, the fields the mode reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HelmReleaseSpec {
    /// The chart template.
    pub chart: Option<HelmChartTemplate>,
    /// A reference to a chart source (exclusive with `chart`).
    pub chart_ref: Option<SourceRef>,
    /// Release name.
    pub release_name: Option<String>,
}

/// `spec.chart` of a HelmRelease.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HelmChartTemplate {
    /// The template's spec.
    pub spec: HelmChartTemplateSpec,
}

/// `spec.chart.spec` of a HelmRelease.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HelmChartTemplateSpec {
    /// Chart name (HelmRepository) or path (GitRepository, Bucket).
    pub chart: String,
    /// Version or semver range.
    pub version: Option<String>,
    /// The source.
    pub source_ref: SourceRef,
    /// Values files of the chart to merge, in order.
    pub values_files: Vec<String>,
}

/// A reference to a Flux source object.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SourceRef {
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace (the referring object's when unset).
    pub namespace: Option<String>,
}

/// `spec` of a Flux OCIRepository.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct OciRepositorySpec {
    /// `oci://registry/path/chart`.
    pub url: String,
    /// Which artifact.
    #[serde(rename = "ref")]
    pub reference: Option<OciReference>,
}

/// `spec.ref` of an OCIRepository.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct OciReference {
    /// Tag (the chart version).
    pub tag: Option<String>,
    /// Semver range.
    pub semver: Option<String>,
}

/// `spec` of a Flux HelmChart (`source.toolkit.fluxcd.io`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FluxHelmChartSpec {
    /// Chart name or path.
    pub chart: String,
    /// Version or semver range.
    pub version: Option<String>,
    /// Values files.
    pub values_files: Vec<String>,
}

/// `spec` of a cozystack Package.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PackageSpec {
    /// Variant of the PackageSource (`default` when unset).
    pub variant: Option<String>,
    /// Overrides per component.
    pub components: BTreeMap<String, PackageComponent>,
}

/// One component override of a Package.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PackageComponent {
    /// False disables the component.
    pub enabled: Option<bool>,
    /// Helm values, merged over the PackageSource's values files.
    pub values: Option<Value>,
}

/// Where an item keeps its Helm values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValuesAt {
    /// A mapping under these keys (`spec.values`, `spec.components.<c>.values`).
    Tree(Vec<String>),
    /// YAML text in `spec.valuesContent` (k3s/RKE2 HelmChart).
    Text,
}

impl ValuesAt {
    /// The field path of the values, for results.
    pub fn field(&self) -> String {
        match self {
            ValuesAt::Tree(keys) => keys.join("."),
            ValuesAt::Text => "spec.valuesContent".into(),
        }
    }
}

/// Where the upstream chart's values are: the item's values location and the umbrella prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmValues {
    /// The item's values.
    pub at: ValuesAt,
    /// Keys the upstream chart's values nest under (`metallb`, `cilium` for cozystack).
    pub prefix: Vec<String>,
}

impl HelmValues {
    /// Field path of `rest` (dotted) inside the upstream chart's values.
    pub fn field(&self, rest: &str) -> String {
        match self.at {
            ValuesAt::Text => self.at.field(),
            ValuesAt::Tree(_) => {
                let mut parts = vec![self.at.field()];
                parts.extend(self.prefix.iter().cloned());
                parts.push(rest.to_owned());
                parts.join(".")
            }
        }
    }
}

/// Which chart a HelmRelease installs, as far as the items tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    /// Chart name: the last segment of a name, path or OCI URL (`metallb`, `cozy-cilium`).
    pub name: String,
    /// Exact version or range, when given.
    pub version: Option<String>,
    /// Built by cozystack (a `cozy-*` chart, or an artifact of cozystack's operator): an
    /// umbrella chart whose version is cozystack's, never the upstream one.
    pub cozystack: bool,
}

impl Chart {
    /// `metallb` or `cilium` for the charts of those projects (upstream, cozystack's umbrella
    /// or RKE2's packaging), else `None`.
    pub fn project(&self) -> Option<&'static str> {
        let base = self
            .name
            .strip_prefix("cozy-")
            .or_else(|| self.name.strip_prefix("rke2-"))
            .unwrap_or(&self.name);
        match base {
            "metallb" => Some("metallb"),
            "cilium" => Some("cilium"),
            _ => None,
        }
    }
    /// The upstream chart itself, whose version is the project's.
    pub fn is_upstream(&self) -> bool {
        !self.cozystack && (self.name == "metallb" || self.name == "cilium")
    }
}

/// The last segment of a chart name, path or URL.
fn last_segment(text: &str) -> String {
    text.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(text)
        .to_owned()
}

/// Chart sources among the items: OCIRepositories and Flux HelmCharts by (namespace, name).
#[derive(Debug, Default)]
pub struct Sources {
    oci: BTreeMap<(String, String), Chart>,
    helm_charts: BTreeMap<(String, String), Chart>,
}

impl Sources {
    /// Reads a Flux source item, if it is one the mode resolves chart references against.
    pub fn observe(&mut self, item: &Value) {
        if item.group() != FLUX_SOURCE_GROUP {
            return;
        }
        let key = (
            item.namespace().unwrap_or("default").to_owned(),
            item.name().to_owned(),
        );
        let spec = spec_of(item);
        match item.kind() {
            "OCIRepository" => {
                if let Ok(s) = OciRepositorySpec::deserialize(spec) {
                    let version = s
                        .reference
                        .and_then(|r| r.tag.or(r.semver))
                        .filter(|v| !v.is_empty());
                    self.oci.insert(
                        key,
                        Chart {
                            name: last_segment(&s.url),
                            version,
                            cozystack: false,
                        },
                    );
                }
            }
            "HelmChart" => {
                if let Ok(s) = FluxHelmChartSpec::deserialize(spec) {
                    self.helm_charts.insert(
                        key,
                        Chart {
                            name: last_segment(&s.chart),
                            version: s.version,
                            cozystack: false,
                        },
                    );
                }
            }
            _ => {}
        }
    }
}

/// What a HelmRelease says about its chart before the sources are known.
#[derive(Debug, Clone)]
pub struct ReleaseFacts {
    /// Item index.
    pub index: usize,
    namespace: String,
    spec: HelmReleaseSpec,
    name: String,
    /// The cozystack Package the operator generated it from.
    pub generated_by: Option<String>,
    /// The values files merged into the chart (`spec.chart.spec.valuesFiles`, or cozystack's
    /// annotation on generated releases).
    pub values_files: Vec<String>,
    /// Top-level keys of `spec.values` that hold a mapping (to recognise umbrella values).
    mapping_keys: Vec<String>,
}

/// An item's `spec`, null when it has none. Specs are decoded from the item's tree by reference:
/// only the fields a struct keeps are copied, not a release's values.
fn spec_of(item: &Value) -> &Value {
    static NULL: Value = Value::Null;
    item.get("spec").unwrap_or(&NULL)
}

/// Reads a HelmRelease; `None` when its spec does not decode (then it is no installation the
/// mode can act on).
pub fn read_release(index: usize, item: &Value) -> Option<ReleaseFacts> {
    let spec = HelmReleaseSpec::deserialize(spec_of(item)).ok()?;
    let mut values_files = spec
        .chart
        .as_ref()
        .map(|c| c.spec.values_files.clone())
        .unwrap_or_default();
    if let Some(files) = item.annotation(COZYSTACK_VALUES_FILES) {
        values_files.extend(files.split(',').map(|f| f.trim().to_owned()));
    }
    let mapping_keys = item
        .get("spec")
        .and_then(|s| s.get("values"))
        .and_then(Value::as_mapping)
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.is_mapping())
        .filter_map(|(k, _)| k.as_str().map(str::to_owned))
        .collect();
    Some(ReleaseFacts {
        index,
        namespace: item.namespace().unwrap_or("default").to_owned(),
        name: item.name().to_owned(),
        generated_by: item.label(COZYSTACK_PACKAGE_LABEL).map(str::to_owned),
        spec,
        values_files,
        mapping_keys,
    })
}

impl ReleaseFacts {
    /// The chart, resolved against the sources among the items. A `chartRef` whose source is
    /// not among the items falls back to the source's name; a release without chart to its
    /// release name.
    pub fn chart(&self, sources: &Sources) -> Chart {
        if let Some(c) = &self.spec.chart {
            let name = last_segment(&c.spec.chart);
            return Chart {
                cozystack: name.starts_with("cozy-"),
                name,
                version: c.spec.version.clone(),
            };
        }
        if let Some(r) = &self.spec.chart_ref {
            let key = (
                r.namespace
                    .clone()
                    .unwrap_or_else(|| self.namespace.clone()),
                r.name.clone(),
            );
            let found = match r.kind.as_str() {
                "OCIRepository" => sources.oci.get(&key).cloned(),
                "HelmChart" => sources.helm_charts.get(&key).cloned(),
                // cozystack names its artifacts `<packagesource>-<variant>-<component>`.
                "ExternalArtifact" => Some(Chart {
                    name: r.name.rsplit('-').next().unwrap_or(&r.name).to_owned(),
                    version: None,
                    cozystack: self.generated_by.is_some() || r.name.starts_with("cozystack-"),
                }),
                _ => None,
            };
            return found.unwrap_or_else(|| Chart {
                name: r.name.clone(),
                version: None,
                cozystack: false,
            });
        }
        Chart {
            name: self
                .spec
                .release_name
                .clone()
                .unwrap_or_else(|| self.name.clone()),
            version: None,
            cozystack: false,
        }
    }

    /// Where the upstream chart's values of `project` are in this release: under `project` for
    /// cozystack's charts, and wherever the values nest a mapping under that key (neither
    /// upstream chart has a top-level `metallb` or `cilium` value).
    pub fn values(&self, chart: &Chart, project: &str) -> HelmValues {
        let umbrella = chart.cozystack || self.mapping_keys.iter().any(|k| k == project);
        HelmValues {
            at: ValuesAt::Tree(vec!["spec".into(), "values".into()]),
            prefix: if umbrella {
                vec![project.to_owned()]
            } else {
                Vec::new()
            },
        }
    }

    /// True when cozystack's `values-kubeovn.yaml` is merged into the chart.
    pub fn kubeovn_values(&self) -> bool {
        self.values_files.iter().any(|f| f == "values-kubeovn.yaml")
    }
}

/// A cozystack Package that installs MetalLB or Cilium: the component and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageInstall {
    /// `metallb` or `cilium`.
    pub project: &'static str,
    /// Where the component's upstream values are.
    pub values: HelmValues,
    /// The variant merges cozystack's `values-kubeovn.yaml` (variants `kubeovn-cilium*`, read
    /// from packages/core/platform/sources/networking.yaml).
    pub kubeovn: bool,
}

/// The MetalLB or Cilium component of a cozystack Package: `cozystack.metallb` (component
/// `metallb`), `cozystack.networking` with a Cilium variant (component `cilium`), or any Package
/// that overrides a component of that name.
pub fn read_package(item: &Value) -> Option<PackageInstall> {
    let spec = PackageSpec::deserialize(spec_of(item)).ok()?;
    let variant = spec.variant.as_deref().unwrap_or("default");
    let project = if item.name() == "cozystack.metallb" || spec.components.contains_key("metallb") {
        "metallb"
    } else if (item.name() == "cozystack.networking" && variant.contains("cilium"))
        || spec.components.contains_key("cilium")
    {
        "cilium"
    } else {
        return None;
    };
    if spec
        .components
        .get(project)
        .is_some_and(|c| c.enabled == Some(false))
    {
        return None;
    }
    Some(PackageInstall {
        project,
        values: HelmValues {
            at: ValuesAt::Tree(vec![
                "spec".into(),
                "components".into(),
                project.into(),
                "values".into(),
            ]),
            prefix: vec![project.to_owned()],
        },
        kubeovn: variant.starts_with("kubeovn-cilium"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(text: &str) -> Value {
        serde_yaml::from_str(text).unwrap()
    }

    #[test]
    fn charts_from_every_source_kind() {
        let mut sources = Sources::default();
        sources.observe(&item(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: metallb, namespace: flux-system}\nspec: {url: oci://quay.io/metallb/chart/metallb, ref: {tag: 0.15.3}}\n",
        ));
        sources.observe(&item(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmChart\nmetadata: {name: kube-system-cilium, namespace: kube-system}\nspec: {chart: cilium, version: 1.18.4, sourceRef: {kind: HelmRepository, name: cilium}}\n",
        ));
        let chart = |text: &str| read_release(0, &item(text)).unwrap().chart(&sources);
        let c = chart(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: lb, namespace: metallb-system}\nspec: {chartRef: {kind: OCIRepository, name: metallb, namespace: flux-system}}\n",
        );
        assert_eq!(
            (c.name.as_str(), c.version.as_deref()),
            ("metallb", Some("0.15.3"))
        );
        let c = chart(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: cilium, namespace: kube-system}\nspec: {chartRef: {kind: HelmChart, name: kube-system-cilium}}\n",
        );
        assert!(c.is_upstream() && c.version.as_deref() == Some("1.18.4"));
        let c = chart(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: metallb, namespace: metallb-system}\nspec: {chart: {spec: {chart: ./charts/metallb, sourceRef: {kind: GitRepository, name: platform}}}}\n",
        );
        assert!(c.is_upstream() && c.version.is_none());
        let c = chart(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: metallb, namespace: cozy-metallb, labels: {cozystack.io/package: cozystack.metallb}}\nspec: {chartRef: {kind: ExternalArtifact, name: cozystack-metallb-default-metallb, namespace: cozy-system}}\n",
        );
        assert_eq!(c.project(), Some("metallb"));
        assert!(c.cozystack && !c.is_upstream());
    }

    #[test]
    fn umbrella_values_are_recognised_by_chart_or_shape() {
        let facts = read_release(
            0,
            &item(
                "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: cilium}\nspec:\n  chart: {spec: {chart: platform-cilium, sourceRef: {kind: GitRepository, name: p}}}\n  values: {cilium: {kubeProxyReplacement: true}}\n",
            ),
        )
        .unwrap();
        let chart = facts.chart(&Sources::default());
        assert_eq!(facts.values(&chart, "cilium").prefix, ["cilium"]);
        assert_eq!(
            facts.values(&chart, "cilium").field("devices"),
            "spec.values.cilium.devices"
        );
    }

    #[test]
    fn packages_carry_the_component_values() {
        let p = read_package(&item(
            "apiVersion: cozystack.io/v1alpha1\nkind: Package\nmetadata: {name: cozystack.networking}\nspec: {variant: kubeovn-cilium}\n",
        ))
        .unwrap();
        assert_eq!(p.project, "cilium");
        assert!(p.kubeovn);
        assert_eq!(
            p.values.field("l2announcements.enabled"),
            "spec.components.cilium.values.cilium.l2announcements.enabled"
        );
        assert!(
            read_package(&item(
                "apiVersion: cozystack.io/v1alpha1\nkind: Package\nmetadata: {name: cozystack.networking}\nspec: {variant: noop}\n",
            ))
            .is_none()
        );
        let m = read_package(&item(
            "apiVersion: cozystack.io/v1alpha1\nkind: Package\nmetadata: {name: cozystack.metallb}\nspec: {variant: default}\n",
        ))
        .unwrap();
        assert_eq!(m.project, "metallb");
    }
}

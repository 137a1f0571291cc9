//! Reading the items into the [`Inventory`], item by item as the engine parses them: each kind
//! the announcer cares about is decoded into its typed form (errors name the item and field);
//! HelmReleases are classified once every chart source among the items is known.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_yaml::Value;

use super::install::{self, Chart, HelmValues, ReleaseFacts, Sources, ValuesAt};
use super::inventory::{
    Advertisement, BGP_KINDS, CILIUM_GROUP, Carrier, CiliumRelease, Install, InstallKind,
    Inventory, IpAddressPoolSpec, MAX_LABEL_VALUE, METALLB_GROUP, Pool,
};
use super::ipam::parse_metallb_address;
use super::observed;
use super::selector::labels_of;
use super::service::{LbService, Store};
use crate::krm::annotations::LOCAL_CONFIG;
use crate::krm::io::Reads;
use crate::krm::names::{NAMESPACE_RULE, OBJECT_NAME_RULE, is_namespace_name, is_object_name};
use crate::krm::object::SharedPaths;
use crate::krm::{KrmObject, KrmResult};

/// The error for a MetalLB object whose name the API server would refuse. Its name is written
/// into the Cilium objects it translates to (and their results), so it is checked before: a
/// name of megabytes would be copied into each.
fn not_an_object_name(item: &Value) -> KrmResult {
    KrmResult::error(format!(
        "not an object name: a MetalLB object's name is {OBJECT_NAME_RULE}"
    ))
    .about(item)
    .field("metadata.name")
}

/// Decodes `value` into `T`; failures become an error result naming the item and field.
pub fn decode<T: DeserializeOwned>(
    item: &Value,
    value: &Value,
    prefix: &str,
) -> Result<T, KrmResult> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() {
            prefix.to_owned()
        } else if prefix.is_empty() {
            path
        } else {
            format!("{prefix}.{path}")
        };
        KrmResult::error(format!(
            "cannot read {} {}: {}",
            item.kind(),
            item.name(),
            e.into_inner()
        ))
        .about(item)
        .field(field)
    })
}

/// Reads a nested value by path segments.
pub fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, key| cur.get(*key))
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

/// Whether the announcer neither reads nor edits `item`, told from its `apiVersion`, `kind` and
/// `metadata` alone: the items [`Reader::observe`] lets go in its last arm (a Deployment, a
/// Secret, another chart's resources). The engine then skips building the rest of it.
pub fn passes_through(item: &Value) -> bool {
    if item.is(crate::config::GROUP, observed::KIND) || is_local_config(item) {
        return false;
    }
    match (item.group(), item.kind()) {
        (METALLB_GROUP, _)
        | (install::FLUX_SOURCE_GROUP, _)
        | ("", "Service" | "Namespace" | "ConfigMap")
        | (CILIUM_GROUP, "CiliumLoadBalancerIPPool" | "CiliumL2AnnouncementPolicy")
        | ("helm.toolkit.fluxcd.io", "HelmRelease")
        | (install::COZYSTACK_GROUP, "Package")
        | ("helm.cattle.io", "HelmChart")
        | ("kustomize.toolkit.fluxcd.io", "Kustomization")
        | ("apiextensions.k8s.io", "CustomResourceDefinition") => false,
        _ => !metallb_app(&labels_of(item)),
    }
}

/// What the announcer reads of `item` past its `apiVersion`, `kind` and `metadata`: nothing for
/// the items [`passes_through`] names; `spec.group` alone of a CustomResourceDefinition (its
/// schema is most of it; [`Reader::observe`] asks only whether it is MetalLB's), save one named
/// `<plural>.metallb.io`, the only name the API server takes for a MetalLB CRD (kubernetes
/// `apiextensions/validation/validation.go` `ValidateCustomResourceDefinition`): part of the
/// MetalLB installation the mode may remove, it is read whole, as is the rest.
pub fn reads(head: &Value) -> Reads {
    if passes_through(head) {
        Reads::Head
    } else if head.is("apiextensions.k8s.io", "CustomResourceDefinition")
        && !head.name().ends_with(".metallb.io")
    {
        Reads::SpecKeys(&["group"])
    } else {
        Reads::Everything
    }
}

/// Labelled as a part of MetalLB (its manifests' `app` or `app.kubernetes.io/name`).
fn metallb_app(labels: &std::collections::BTreeMap<String, String>) -> bool {
    labels.get("app").map(String::as_str) == Some("metallb")
        || labels.get("app.kubernetes.io/name").map(String::as_str) == Some("metallb")
}

fn is_local_config(item: &Value) -> bool {
    item.annotation(LOCAL_CONFIG) == Some("true")
}

/// Scans the items once (for callers that hold every item; the function reads them with a
/// [`Reader`] while they are parsed).
pub fn read(items: &[Value]) -> (Inventory, Vec<KrmResult>) {
    let mut reader = Reader::default();
    for (index, item) in items.iter().enumerate() {
        reader.observe(index, item);
    }
    reader.finish()
}

/// Builds the `Inventory` item by item, as the engine parses them
/// ([`crate::krm::io::Observer`]). Services are read into `LbService` and their trees
/// released: they are most of a large platform, and the mode patches them without their tree.
#[derive(Debug, Default)]
pub struct Reader {
    inv: Inventory,
    errors: Vec<KrmResult>,
    /// File paths of the Services read so far, shared between them.
    paths: SharedPaths,
    /// The strings of the Services read so far.
    store: Store,
    /// The empty store Services point at until [`Reader::finish`].
    detached: Arc<Store>,
    /// HelmReleases, classified once every chart source is known.
    releases: Vec<ReleaseFacts>,
    /// OCIRepositories and Flux HelmCharts, for `spec.chartRef`.
    sources: Sources,
    /// Names of the cozystack Packages that install MetalLB or Cilium.
    packages: std::collections::BTreeSet<String>,
}

impl crate::krm::io::Observer for Reader {
    fn observe(&mut self, index: usize, item: &Value) -> bool {
        Reader::observe(self, index, item)
    }
}

impl Reader {
    /// The inventory and the errors found reading it, in item order.
    pub fn finish(mut self) -> (Inventory, Vec<KrmResult>) {
        for facts in std::mem::take(&mut self.releases) {
            self.classify_release(&facts);
        }
        self.inv.install.sort_by_key(|i| i.index);
        self.inv.cilium.sort_by_key(|r| r.index);
        // Grown by doubling while the items streamed in: give back the unused half.
        self.inv.services.shrink_to_fit();
        self.store.shrink_to_fit();
        let store = Arc::new(self.store);
        for svc in &mut self.inv.services {
            svc.attach(&store);
        }
        (self.inv, self.errors)
    }

    /// Reads one item; false for Services and for items the mode neither reads nor edits (the
    /// engine may release their trees).
    pub fn observe(&mut self, index: usize, item: &Value) -> bool {
        if item.is(crate::config::GROUP, observed::KIND) {
            self.read_observed(index, item);
            return true;
        }
        if is_local_config(item) {
            return true;
        }
        let inv = &mut self.inv;
        let kind = item.kind();
        match (item.group(), kind) {
            (METALLB_GROUP, "IPAddressPool") => self.read_pool(index, item),
            (METALLB_GROUP, "L2Advertisement") if !is_object_name(item.name()) => {
                self.errors.push(not_an_object_name(item));
            }
            (METALLB_GROUP, "L2Advertisement") => {
                match decode(item, item.get("spec").unwrap_or(&Value::Null), "spec") {
                    Ok(spec) => inv.adverts.push(Advertisement {
                        index,
                        name: item.name().to_owned(),
                        spec,
                    }),
                    Err(e) => self.errors.push(e),
                }
            }
            (METALLB_GROUP, k) if BGP_KINDS.contains(&k) => inv.bgp.push(index),
            (METALLB_GROUP, _) => inv.other_metallb.push(index),
            ("", "Service") => {
                self.read_service(index, item);
                return false;
            }
            ("", "Namespace") => {
                let mut labels = labels_of(item);
                labels.insert("kubernetes.io/metadata.name".into(), item.name().to_owned());
                inv.namespaces.insert(item.name().to_owned(), labels);
            }
            (CILIUM_GROUP, "CiliumLoadBalancerIPPool" | "CiliumL2AnnouncementPolicy") => {
                inv.cilium_objects
                    .insert((kind.to_owned(), item.name().to_owned()), index);
            }
            ("helm.toolkit.fluxcd.io", "HelmRelease") => self.read_helm_release(index, item),
            (install::COZYSTACK_GROUP, "Package") => self.read_package(index, item),
            (install::FLUX_SOURCE_GROUP, _) => self.sources.observe(item),
            ("helm.cattle.io", "HelmChart") => self.read_helm_chart(index, item),
            ("kustomize.toolkit.fluxcd.io", "Kustomization") => {
                let path = str_at(item, &["spec", "path"]).unwrap_or("");
                if item.name().contains("metallb") || path.contains("metallb") {
                    inv.install.push(Install {
                        index,
                        kind: InstallKind::FluxKustomization,
                    });
                }
                if at(item, &["spec", "dependsOn"]).is_some() {
                    inv.flux_dependents.push(index);
                }
            }
            ("", "ConfigMap") => match switch_in_configmap(item) {
                Some(v) => inv.switch.push((index, v)),
                None => return false,
            },
            ("apiextensions.k8s.io", "CustomResourceDefinition")
                if str_at(item, &["spec", "group"]) == Some(METALLB_GROUP) =>
            {
                inv.install.push(Install {
                    index,
                    kind: InstallKind::Manifest { speaker: false },
                });
            }
            _ => return self.read_other(index, item),
        }
        true
    }

    /// The `ObservedState` item: one only.
    fn read_observed(&mut self, index: usize, item: &Value) {
        if let Some(first) = &self.inv.observed {
            self.errors.push(
                KrmResult::error(format!(
                    "a second ObservedState item (the first is item {}): export the cluster once",
                    first.index
                ))
                .about(item)
                .field("kind"),
            );
        } else {
            self.inv.observed = Some(observed::Observed::read(index, item, &mut self.errors));
        }
    }

    /// A MetalLB `IPAddressPool`; a pool that cannot be read is rejected by name, so the
    /// Services that request it are not planned against a guess.
    fn read_pool(&mut self, index: usize, item: &Value) {
        let (inv, errors) = (&mut self.inv, &mut self.errors);
        let spec: IpAddressPoolSpec =
            match decode(item, item.get("spec").unwrap_or(&Value::Null), "spec") {
                Ok(s) => s,
                Err(e) => {
                    errors.push(e);
                    inv.rejected_pools.insert(item.name().to_owned());
                    return;
                }
            };
        if item.name().len() > MAX_LABEL_VALUE {
            errors.push(
                KrmResult::error(format!(
                    "pool name is longer than {MAX_LABEL_VALUE} characters, so it cannot be a \
                     value of the pool label that Services request pools by"
                ))
                .about(item)
                .field("metadata.name"),
            );
            inv.rejected_pools.insert(item.name().to_owned());
            return;
        }
        // Short enough for a label value, but still a name the API server would refuse.
        if !is_object_name(item.name()) {
            errors.push(not_an_object_name(item));
            inv.rejected_pools.insert(item.name().to_owned());
            return;
        }
        let mut addresses = Vec::new();
        for (i, a) in spec.addresses.iter().enumerate() {
            match parse_metallb_address(a) {
                Ok(p) => addresses.push(p),
                Err(m) => errors.push(
                    KrmResult::error(format!("invalid address: {m}"))
                        .about(item)
                        .field(format!("spec.addresses[{i}]"))
                        .current(a.as_str()),
                ),
            }
        }
        inv.pools.push(Pool {
            index,
            name: item.name().to_owned(),
            labels: labels_of(item),
            spec,
            addresses,
        });
    }

    /// A Service: read into the inventory when it is of type LoadBalancer (its tree is released
    /// either way).
    fn read_service(&mut self, index: usize, item: &Value) {
        if str_at(item, &["spec", "type"]) != Some("LoadBalancer") {
            return;
        }
        if let Some(ns) = str_at(item, &["metadata", "namespace"])
            && !is_namespace_name(ns)
        {
            self.errors.push(
                KrmResult::error(format!(
                    "not a namespace name: a namespace is {NAMESPACE_RULE}"
                ))
                .about(item)
                .field("metadata.namespace"),
            );
            return;
        }
        match LbService::read(
            index,
            item,
            &mut self.paths,
            &mut self.store,
            &self.detached,
        ) {
            Ok(svc) => self.inv.services.push(svc),
            Err(e) => self.errors.push(
                KrmResult::error(format!("cannot read Service: {e}"))
                    .about(item)
                    .field("spec"),
            ),
        }
    }

    /// A Flux HelmRelease: carries values, may install MetalLB or Cilium (classified in
    /// [`Reader::finish`]), may hold the announcer switch.
    fn read_helm_release(&mut self, index: usize, item: &Value) {
        let inv = &mut self.inv;
        inv.value_carriers.push(index);
        if let Some(facts) = install::read_release(index, item) {
            self.releases.push(facts);
        }
        if let Some(v) = str_at(
            item,
            &["spec", "values", "networking", "loadBalancerAnnouncer"],
        ) {
            inv.switch.push((index, v.to_owned()));
        }
        if at(item, &["spec", "dependsOn"]).is_some() {
            inv.flux_dependents.push(index);
        }
    }

    /// A cozystack Package: installs MetalLB or Cilium, may hold the announcer switch.
    fn read_package(&mut self, index: usize, item: &Value) {
        let inv = &mut self.inv;
        inv.value_carriers.push(index);
        if let Some(p) = install::read_package(item) {
            self.packages.insert(item.name().to_owned());
            if p.project == "metallb" {
                inv.install.push(Install {
                    index,
                    kind: InstallKind::Helm {
                        values: p.values,
                        carrier: Carrier::Package,
                    },
                });
            } else {
                inv.cilium.push(CiliumRelease {
                    index,
                    values: p.values,
                    carrier: Carrier::Package,
                    chart: Chart {
                        name: "cozy-cilium".into(),
                        version: None,
                        cozystack: true,
                    },
                    kubeovn: p.kubeovn,
                });
            }
        }
        if let Some(v) = str_at(
            item,
            &[
                "spec",
                "components",
                "platform",
                "values",
                "networking",
                "loadBalancerAnnouncer",
            ],
        ) {
            inv.switch.push((index, v.to_owned()));
        }
    }

    /// A k3s/RKE2 `HelmChart` of MetalLB or Cilium.
    fn read_helm_chart(&mut self, index: usize, item: &Value) {
        let chart = str_at(item, &["spec", "chart"]).unwrap_or("");
        let base = chart.rsplit('/').next().unwrap_or(chart);
        let values = HelmValues {
            at: ValuesAt::Text,
            prefix: Vec::new(),
        };
        if base == "metallb" || base == "rke2-metallb" {
            self.inv.install.push(Install {
                index,
                kind: InstallKind::Helm {
                    values,
                    carrier: Carrier::HelmChart,
                },
            });
        } else if base == "cilium" || base == "rke2-cilium" {
            self.inv.cilium.push(CiliumRelease {
                index,
                values,
                carrier: Carrier::HelmChart,
                chart: Chart {
                    name: base.to_owned(),
                    version: str_at(item, &["spec", "version"]).map(str::to_owned),
                    cozystack: false,
                },
                kubeovn: false,
            });
        }
    }

    /// Any other kind: part of a MetalLB installation by its labels (kept), or nothing the mode
    /// reads or edits (false).
    fn read_other(&mut self, index: usize, item: &Value) -> bool {
        let labels = labels_of(item);
        if !metallb_app(&labels) {
            // Nothing the mode reads or edits (a Deployment, a Secret, another chart's
            // CRD…): the bulk of a platform repository. Its text is copied as read.
            return false;
        }
        let component = labels
            .get("app.kubernetes.io/component")
            .or_else(|| labels.get("component"));
        let speaker = item.kind() == "DaemonSet"
            && (component.map(String::as_str) == Some("speaker")
                || item.name().ends_with("speaker"));
        self.inv.install.push(Install {
            index,
            kind: InstallKind::Manifest { speaker },
        });
        true
    }
}

impl Reader {
    /// Files a HelmRelease as the MetalLB installation or the Cilium release, once the chart
    /// sources among the items are known.
    fn classify_release(&mut self, facts: &ReleaseFacts) {
        let chart = facts.chart(&self.sources);
        let carrier = Carrier::HelmRelease {
            generated_by: facts.generated_by.clone(),
        };
        let rendered = facts
            .generated_by
            .as_ref()
            .filter(|p| self.packages.contains(*p));
        match (chart.project(), rendered) {
            (Some("metallb"), Some(package)) => self.inv.install.push(Install {
                index: facts.index,
                kind: InstallKind::Rendered {
                    package: package.clone(),
                },
            }),
            // The Package among the items is the Cilium release.
            (Some("cilium"), Some(_)) => {}
            (Some("metallb"), None) => self.inv.install.push(Install {
                index: facts.index,
                kind: InstallKind::Helm {
                    values: facts.values(&chart, "metallb"),
                    carrier,
                },
            }),
            (Some("cilium"), None) => self.inv.cilium.push(CiliumRelease {
                index: facts.index,
                values: facts.values(&chart, "cilium"),
                carrier,
                kubeovn: facts.kubeovn_values(),
                chart,
            }),
            _ => {}
        }
    }
}

/// `networking.loadBalancerAnnouncer` in a ConfigMap: as a data key of its own, or inside a data
/// value holding a YAML values document.
fn switch_in_configmap(item: &Value) -> Option<String> {
    let data = item.get("data")?.as_mapping()?;
    if let Some(v) = data
        .get("networking.loadBalancerAnnouncer")
        .and_then(Value::as_str)
    {
        return Some(v.trim().to_owned());
    }
    data.values()
        .filter_map(Value::as_str)
        .filter(|text| text.contains("loadBalancerAnnouncer"))
        .find_map(|text| {
            let doc: Value = crate::krm::yaml::from_str(text).ok()?;
            str_at(&doc, &["networking", "loadBalancerAnnouncer"]).map(str::to_owned)
        })
}

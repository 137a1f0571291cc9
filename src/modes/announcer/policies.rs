//! L2Advertisements → CiliumL2AnnouncementPolicies. Policies select Services, not pools, so the
//! pools an advertisement covers become a selector on the pool label.

use std::collections::{BTreeSet, HashSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde_yaml::Value;

use super::cilium::{L2Policy, L2PolicySpec, interface_regex};
use super::inventory::{Advertisement, Inventory};
use super::selector::{self, key_in, key_not_in};
use super::translate::{Generated, Translated, meta};
use crate::krm::KrmResult;

/// Translates every L2Advertisement into policies (one per node selector).
pub fn policies(
    inv: &Inventory,
    items: &[Value],
    pool_label: &str,
    out: &mut Translated,
    results: &mut Vec<KrmResult>,
) {
    if out.too_large {
        return;
    }
    let pools = Pools {
        all: inv.pools.iter().map(|p| p.name.as_str()).collect(),
        autos: inv
            .pools
            .iter()
            .filter(|p| p.auto_assign())
            .map(|p| p.name.as_str())
            .collect(),
        known: pool_names(inv),
        label: pool_label,
    };
    for ad in &inv.adverts {
        let item = &items[ad.index];
        let Some(advertised) = advertised_pools(ad, inv, &pools.known, item, results) else {
            continue;
        };
        if advertised.is_empty() {
            results.push(
                KrmResult::warning(
                    "the advertisement selects no pool among the items: it announces nothing, no policy is emitted",
                )
                .about(item)
                .field("spec.ipAddressPools"),
            );
            continue;
        }
        let adv: BTreeSet<&str> = advertised.iter().map(String::as_str).collect();
        let Some(pool_sel) = pools.selector(&adv, item, results) else {
            continue;
        };
        let base = LabelSelector {
            match_labels: None,
            match_expressions: pool_sel.map(|r| vec![r]),
        };
        // Every policy of the advertisement repeats the pool names of its selector.
        let listed = base
            .match_expressions
            .iter()
            .flatten()
            .map(|r| r.values.as_ref().map_or(0, Vec::len))
            .sum::<usize>();
        let copies = ad.spec.service_selectors.len().max(1) * ad.spec.node_selectors.len().max(1);
        let what = |total| format!("the L2Advertisements' policies would list {total} pool names");
        if !out.count_selector_names(
            listed.saturating_mul(copies),
            item,
            "spec.ipAddressPools",
            what,
            results,
        ) {
            return;
        }
        let service_sels = service_selectors(ad, base, item, results);
        if ad.spec.preferred_node_selectors.is_some() {
            results.push(
                KrmResult::warning(
                    "preferredNodeSelectors approximated: Cilium elects the announcing node by lease among \
                     all selected nodes, without preference",
                )
                .about(item)
                .field("spec.preferredNodeSelectors"),
            );
        }
        emit(ad, item, &service_sels, out);
    }
}

/// The pools among the items, as the policies' pool selectors need them.
struct Pools<'a> {
    all: BTreeSet<&'a str>,
    /// The auto-assign pools: Services allocated from them carry no pool label.
    autos: BTreeSet<&'a str>,
    known: HashSet<&'a str>,
    /// The label Services carry to request a pool (`spec.poolLabel`).
    label: &'a str,
}

impl Pools<'_> {
    /// The requirement on the pool label that selects the Services of the `advertised` pools
    /// (`Some(None)`: every Service); `None`, with an error, when no selector can say it.
    /// Policies select Services, not pools: Services carry the pool label when they asked for
    /// a pool (or live in a non-auto pool); auto-allocated ones carry none.
    fn selector(
        &self,
        adv: &BTreeSet<&str>,
        item: &Value,
        results: &mut Vec<KrmResult>,
    ) -> Option<Option<LabelSelectorRequirement>> {
        let (all, autos) = (&self.all, &self.autos);
        if adv.is_superset(all) {
            Some(None)
        } else if adv.is_disjoint(autos) {
            Some(Some(key_in(
                self.label,
                adv.iter().map(|s| (*s).to_owned()).collect(),
            )))
        } else if adv.is_superset(autos) {
            Some(Some(key_not_in(
                self.label,
                all.difference(adv).map(|s| (*s).to_owned()).collect(),
            )))
        } else {
            results.push(
                KrmResult::error(format!(
                    "the advertisement covers auto-assign pool(s) {} but not {}: Cilium policies select \
                     Services, and automatically allocated Services carry no pool label, so this split \
                     cannot be expressed",
                    adv.intersection(autos).copied().collect::<Vec<_>>().join(", "),
                    autos.difference(adv).copied().collect::<Vec<_>>().join(", ")
                ))
                .about(item)
                .field("spec.ipAddressPools"),
            );
            None
        }
    }
}

/// The Service selectors of an advertisement's policies: the pool selector `base`, and with
/// each valid `serviceSelectors` entry of the advertisement (an invalid one is an error).
fn service_selectors(
    ad: &Advertisement,
    base: LabelSelector,
    item: &Value,
    results: &mut Vec<KrmResult>,
) -> Vec<LabelSelector> {
    if ad.spec.service_selectors.is_empty() {
        return vec![base];
    }
    let mut v = Vec::new();
    for (i, s) in ad.spec.service_selectors.iter().enumerate() {
        if let Err(m) = selector::validate(s) {
            results.push(
                KrmResult::error(m)
                    .about(item)
                    .field(format!("spec.serviceSelectors[{i}]")),
            );
            continue;
        }
        if let Some(s) = selector::and(&base, s) {
            v.push(s);
        }
    }
    v
}

/// One policy per Service selector and node selector of the advertisement, named after it
/// (`-N` when there are several), announcing from its interfaces.
fn emit(ad: &Advertisement, item: &Value, service_sels: &[LabelSelector], out: &mut Translated) {
    let node_sels: Vec<Option<LabelSelector>> = if ad.spec.node_selectors.is_empty() {
        vec![Some(selector::announcing_nodes(None))]
    } else {
        ad.spec
            .node_selectors
            .iter()
            .map(|s| {
                Some(selector::announcing_nodes(Some(&selector::normalized(
                    s.clone(),
                ))))
            })
            .collect()
    };
    let interfaces = (!ad.spec.interfaces.is_empty()).then(|| {
        ad.spec
            .interfaces
            .iter()
            .map(|i| interface_regex(i))
            .collect()
    });
    let namespace = item
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str);
    let count = service_sels.len() * node_sels.len();
    let mut n = 0;
    for svc_sel in service_sels {
        for node_sel in &node_sels {
            let name = if count == 1 {
                ad.name.clone()
            } else {
                format!("{}-{n}", ad.name)
            };
            n += 1;
            let svc_sel = selector::normalized(svc_sel.clone());
            out.policies.push(Generated {
                object: L2Policy {
                    api_version: "cilium.io/v2alpha1".into(),
                    kind: "CiliumL2AnnouncementPolicy".into(),
                    metadata: meta(&name, "L2Advertisement", namespace, &ad.name),
                    spec: L2PolicySpec {
                        service_selector: (!selector::is_empty(&svc_sel)).then_some(svc_sel),
                        node_selector: node_sel.clone(),
                        interfaces: interfaces.clone(),
                        load_balancer_ips: true,
                    },
                },
                source: ad.index,
            });
        }
    }
}

/// Names of the pools among the items, for [`advertised_pools`] (built once per run, not once
/// per advertisement: thousands of advertisements times thousands of pools).
pub fn pool_names(inv: &Inventory) -> HashSet<&str> {
    inv.pools.iter().map(|p| p.name.as_str()).collect()
}

/// Names of the pools an advertisement covers (`None` after an error); `known` is
/// [`pool_names`].
pub fn advertised_pools(
    ad: &Advertisement,
    inv: &Inventory,
    known: &HashSet<&str>,
    item: &Value,
    results: &mut Vec<KrmResult>,
) -> Option<BTreeSet<String>> {
    if ad.spec.ip_address_pools.is_empty() && ad.spec.ip_address_pool_selectors.is_empty() {
        return Some(inv.pools.iter().map(|p| p.name.clone()).collect());
    }
    let mut out = BTreeSet::new();
    for (i, name) in ad.spec.ip_address_pools.iter().enumerate() {
        if known.contains(name.as_str()) {
            out.insert(name.clone());
        } else if inv.rejected_pools.contains(name) {
            // Reported on the pool itself; that error means the run changes nothing.
        } else {
            results.push(
                KrmResult::warning(format!(
                    "pool {name:?} is not among the items; MetalLB ignores it and so does the translation"
                ))
                .about(item)
                .field(format!("spec.ipAddressPools[{i}]")),
            );
        }
    }
    for (i, sel) in ad.spec.ip_address_pool_selectors.iter().enumerate() {
        if let Err(m) = selector::validate(sel) {
            results.push(
                KrmResult::error(m)
                    .about(item)
                    .field(format!("spec.ipAddressPoolSelectors[{i}]")),
            );
            return None;
        }
        out.extend(
            inv.pools
                .iter()
                .filter(|p| selector::matches(sel, &p.labels))
                .map(|p| p.name.clone()),
        );
    }
    Some(out)
}

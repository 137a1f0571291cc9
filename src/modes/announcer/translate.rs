//! MetalLB → Cilium translation of IPAddressPools into CiliumLoadBalancerIPPools (the
//! advertisements are in `policies.rs`). Exact semantics, or an error that says why not.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_yaml::Value;

use super::cilium::{Block, IpPool, IpPoolSpec, L2Policy, Meta, SVC_NAMESPACE_LABEL};
use super::inventory::{Inventory, MANAGED_BY, Pool, ServiceAllocation};
use super::ipam::{Family, Interval, MetalLbAddress, format_ip, split_avoiding_buggy};
use super::selector::{self, key_in, key_not_in};
use super::version::CiliumVersion;
use crate::krm::KrmResult;

/// Annotation on generated objects naming the MetalLB object they come from.
pub const SOURCE_ANNOTATION: &str = "cutover.dev/source";

/// Most pool names the generated selectors may list in all. Exact selectors grow with the square
/// of the pool count: Cilium has no pool priority and no pool request besides a label selector,
/// so each auto-assign pool must list every other pool in `NotIn` (and a policy covering the
/// auto-assign pools every pool it does not cover). 3 000 auto-assign pools would list 9 million
/// names (190 MB of YAML, 2 GiB of memory); past this bound the run stops with an error instead,
/// so memory stays proportional to the input. 65 536 = 256 auto-assign pools among 257.
pub const MAX_SELECTOR_POOL_NAMES: usize = 65_536;

/// A generated Cilium object with the input item it derives from.
#[derive(Debug, Clone)]
pub struct Generated<T> {
    /// The object.
    pub object: T,
    /// Index of the MetalLB item it was translated from.
    pub source: usize,
}

/// Output of the translation of pools and advertisements.
#[derive(Debug, Default)]
pub struct Translated {
    /// One pool per IPAddressPool.
    pub pools: Vec<Generated<IpPool>>,
    /// One or more policies per L2Advertisement.
    pub policies: Vec<Generated<L2Policy>>,
    /// The raw (post-`avoidBuggyIPs`) intervals of every pool, for overlap checks.
    pub intervals: Vec<(Interval, usize)>,
    /// Pool names listed by the selectors so far (bounded by [`MAX_SELECTOR_POOL_NAMES`]).
    pub selector_pool_names: usize,
    /// The selectors would exceed [`MAX_SELECTOR_POOL_NAMES`]: an error was reported and the
    /// translation stopped.
    pub too_large: bool,
}

impl Translated {
    /// Counts `names` more pool names in the selectors; past [`MAX_SELECTOR_POOL_NAMES`] reports
    /// the error `what` about `item` (field `field`), marks the translation too large and
    /// returns false.
    pub fn count_selector_names(
        &mut self,
        names: usize,
        item: &Value,
        field: &str,
        what: impl FnOnce(usize) -> String,
        results: &mut Vec<KrmResult>,
    ) -> bool {
        self.selector_pool_names = self.selector_pool_names.saturating_add(names);
        if self.selector_pool_names <= MAX_SELECTOR_POOL_NAMES {
            return true;
        }
        self.too_large = true;
        results.push(
            KrmResult::error(format!(
                "{}: more than {MAX_SELECTOR_POOL_NAMES} pool names in the Cilium selectors, which grow \
                 with the square of the pool count (Cilium has no pool priority and no pool request \
                 besides a label selector); set autoAssign: false on pools that Services only get by \
                 name, or merge pools",
                what(self.selector_pool_names)
            ))
            .about(item)
            .field(field),
        );
        false
    }
}

pub(super) fn meta(
    name: &str,
    source_kind: &str,
    namespace: Option<&str>,
    source_name: &str,
) -> Meta {
    let source = match namespace {
        Some(ns) => format!("metallb.io/{source_kind} {ns}/{source_name}"),
        None => format!("metallb.io/{source_kind} {source_name}"),
    };
    Meta {
        name: name.to_owned(),
        labels: [(MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned())].into(),
        annotations: [(SOURCE_ANNOTATION.to_owned(), source)].into(),
    }
}

/// Translates every IPAddressPool. `items` gives access to source objects for results.
pub fn pools(
    inv: &Inventory,
    items: &[Value],
    version: &CiliumVersion,
    pool_label: &str,
    out: &mut Translated,
    results: &mut Vec<KrmResult>,
) {
    let auto_count = inv.pools.iter().filter(|p| p.auto_assign()).count();
    // Each auto-assign pool lists every other pool: count them before building anything.
    if let Some(first_auto) = inv.pools.iter().find(|p| p.auto_assign()) {
        let names = auto_count.saturating_mul(inv.pools.len() - 1);
        let what = |_| {
            format!(
                "{auto_count} auto-assign pools among {} pools would each exclude every other pool \
                 ({names} names)",
                inv.pools.len()
            )
        };
        if !out.count_selector_names(
            names,
            &items[first_auto.index],
            "spec.autoAssign",
            what,
            results,
        ) {
            return;
        }
    }
    let all_names: Vec<&str> = inv.pools.iter().map(|p| p.name.as_str()).collect();
    for pool in &inv.pools {
        let item = &items[pool.index];
        let Some(blocks) = blocks_of(pool, item, version, out, results) else {
            continue;
        };
        let mut exprs = Vec::new();
        if !pool.auto_assign() {
            // autoAssign: false → only Services that asked for this pool.
            exprs.push(key_in(pool_label, vec![pool.name.clone()]));
        } else {
            // Auto-assign: Services without the label, or asking for this very pool.
            let others: Vec<String> = all_names
                .iter()
                .filter(|n| **n != pool.name)
                .map(|n| (*n).to_owned())
                .collect();
            if !others.is_empty() {
                exprs.push(key_not_in(pool_label, others));
            }
        }
        let mut sel = LabelSelector {
            match_labels: None,
            match_expressions: Some(exprs),
        };
        if let Some(alloc) = &pool.spec.service_allocation {
            match allocation_selector(pool, alloc, inv, item, auto_count, results) {
                Some(extra) => match selector::and(&sel, &extra) {
                    Some(s) => sel = s,
                    None => {
                        results.push(
                            KrmResult::error(
                                "spec.serviceAllocation.serviceSelectors contradicts the pool label selector",
                            )
                            .about(item)
                            .field("spec.serviceAllocation.serviceSelectors"),
                        );
                        continue;
                    }
                },
                None => continue,
            }
        }
        let sel = selector::normalized(sel);
        let spec = IpPoolSpec {
            // Never emitted: `Yes`/`No` unquoted are booleans to YAML 1.1 readers (kubectl,
            // Flux), and ranges make the field unnecessary (see `blocks_of`).
            allow_first_last_ips: None,
            blocks,
            service_selector: (!selector::is_empty(&sel)).then_some(sel),
        };
        out.pools.push(Generated {
            object: IpPool {
                api_version: version.pool_api_version().to_owned(),
                kind: "CiliumLoadBalancerIPPool".into(),
                metadata: meta(
                    &pool.name,
                    "IPAddressPool",
                    item.get("metadata")
                        .and_then(|m| m.get("namespace"))
                        .and_then(Value::as_str),
                    &pool.name,
                ),
                spec,
            },
            source: pool.index,
        });
    }
    overlaps(inv, items, out, results);
}

/// Cilium blocks of one pool, or `None` after reporting an error.
fn blocks_of(
    pool: &Pool,
    item: &Value,
    version: &CiliumVersion,
    out: &mut Translated,
    results: &mut Vec<KrmResult>,
) -> Option<Vec<Block>> {
    let mut blocks = Vec::new();
    let mut failed = false;
    for (i, addr) in pool.addresses.iter().enumerate() {
        let avoid = pool.spec.avoid_buggy_ips && addr.interval().family == Family::V4;
        if avoid {
            // Cilium's allowFirstLastIPs: No only reserves the first/last of each CIDR; MetalLB
            // skips every .0/.255, so IPv4 entries become exact ranges around them.
            match split_avoiding_buggy(addr.interval()) {
                Ok(parts) => {
                    for iv in parts {
                        out.intervals.push((iv, pool.index));
                        blocks.push(range_block(iv));
                    }
                }
                Err(m) => {
                    failed = true;
                    results.push(
                        KrmResult::error(format!("avoidBuggyIPs cannot be expressed: {m}"))
                            .about(item)
                            .field(format!("spec.addresses[{i}]")),
                    );
                }
            }
            continue;
        }
        out.intervals.push((addr.interval(), pool.index));
        blocks.push(match addr {
            // MetalLB hands out every address of a CIDR, first and last included; so does
            // Cilium from 1.16 (allowFirstLastIPs defaults to Yes). Before 1.16 the default was
            // No, so the CIDR becomes the equivalent range, which never reserves addresses.
            MetalLbAddress::Cidr { interval, .. } if !version.first_last_allowed_by_default() => {
                range_block(*interval)
            }
            MetalLbAddress::Cidr { interval, prefix } => Block {
                cidr: Some(format!(
                    "{}/{prefix}",
                    format_ip(interval.family, interval.start)
                )),
                ..Block::default()
            },
            MetalLbAddress::Range(iv) => range_block(*iv),
        });
    }
    if failed {
        return None;
    }
    if blocks.is_empty() {
        results.push(
            KrmResult::error(
                "the pool has no usable address (all excluded by avoidBuggyIPs, or no addresses): \
                 Cilium would reject or never use an empty pool; fix or remove it first",
            )
            .about(item)
            .field("spec.addresses"),
        );
        return None;
    }
    Some(blocks)
}

fn range_block(iv: Interval) -> Block {
    Block {
        cidr: None,
        start: Some(format_ip(iv.family, iv.start)),
        stop: Some(format_ip(iv.family, iv.end)),
    }
}

/// The extra selector for `spec.serviceAllocation`, or `None` after reporting an error.
fn allocation_selector(
    pool: &Pool,
    alloc: &ServiceAllocation,
    inv: &Inventory,
    item: &Value,
    auto_count: usize,
    results: &mut Vec<KrmResult>,
) -> Option<LabelSelector> {
    let mut sel = LabelSelector::default();
    let mut namespaces: BTreeSet<String> = alloc.namespaces.iter().cloned().collect();
    if !alloc.namespace_selectors.is_empty() {
        namespaces = selected_namespaces(alloc, inv, item, results)?;
    }
    if !namespaces.is_empty() {
        sel.match_expressions = Some(vec![key_in(
            SVC_NAMESPACE_LABEL,
            namespaces.into_iter().collect(),
        )]);
    }
    match alloc.service_selectors.as_slice() {
        [] => {}
        [one] => {
            if let Err(m) = selector::validate(one) {
                results.push(
                    KrmResult::error(m)
                        .about(item)
                        .field("spec.serviceAllocation.serviceSelectors[0]"),
                );
                return None;
            }
            sel = selector::and(&sel, one)?;
        }
        _ => {
            results.push(
                KrmResult::error(
                    "several serviceSelectors are ORed by MetalLB; a Cilium pool has one serviceSelector \
                     and pools may not overlap, so this cannot be expressed: merge them into one selector",
                )
                .about(item)
                .field("spec.serviceAllocation.serviceSelectors"),
            );
            return None;
        }
    }
    if let Some(priority) = alloc.priority {
        match priority_dropped(pool, priority, auto_count, item) {
            Ok(warning) => results.push(warning),
            Err(error) => {
                results.push(error);
                return None;
            }
        }
    }
    Some(sel)
}

/// The namespaces among the items that `serviceAllocation.namespaceSelectors` select (with a
/// warning: a namespace labelled later is not admitted), or `None` after reporting an error.
fn selected_namespaces(
    alloc: &ServiceAllocation,
    inv: &Inventory,
    item: &Value,
    results: &mut Vec<KrmResult>,
) -> Option<BTreeSet<String>> {
    let mut namespaces: BTreeSet<String> = alloc.namespaces.iter().cloned().collect();
    if inv.namespaces.is_empty() {
        results.push(
            KrmResult::error(
                "namespaceSelectors cannot be expressed: Cilium pool selectors see only Service \
                 labels and the namespace name, and no Namespace objects are among the items to \
                 resolve the selectors against",
            )
            .about(item)
            .field("spec.serviceAllocation.namespaceSelectors"),
        );
        return None;
    }
    for (i, ns_sel) in alloc.namespace_selectors.iter().enumerate() {
        if let Err(m) = selector::validate(ns_sel) {
            results.push(
                KrmResult::error(m)
                    .about(item)
                    .field(format!("spec.serviceAllocation.namespaceSelectors[{i}]")),
            );
            return None;
        }
        namespaces.extend(
            inv.namespaces
                .iter()
                .filter(|(_, labels)| selector::matches(ns_sel, labels))
                .map(|(name, _)| name.clone()),
        );
    }
    results.push(
        KrmResult::warning(format!(
            "namespaceSelectors approximated by the namespaces that match them among the items ({}); \
             a namespace labelled later will not be admitted by the Cilium pool",
            namespaces.iter().cloned().collect::<Vec<_>>().join(", ")
        ))
        .about(item)
        .field("spec.serviceAllocation.namespaceSelectors"),
    );
    if namespaces.is_empty() {
        results.push(
            KrmResult::error(
                "namespaceSelectors match no namespace among the items: the Cilium pool would serve no Service",
            )
            .about(item)
            .field("spec.serviceAllocation.namespaceSelectors"),
        );
        return None;
    }
    Some(namespaces)
}

/// `serviceAllocation.priority`: an error when it orders this auto-assign pool among others
/// (Cilium has no pool priority), else a warning that it is dropped.
fn priority_dropped(
    pool: &Pool,
    priority: i64,
    auto_count: usize,
    item: &Value,
) -> Result<KrmResult, KrmResult> {
    if pool.auto_assign() && auto_count > 1 {
        return Err(KrmResult::error(
            "priority orders the auto-assign pools in MetalLB; Cilium has no pool priority and \
             several auto-assign pools exist, so new Services could get IPs from another pool",
        )
        .about(item)
        .field("spec.serviceAllocation.priority")
        .current(priority));
    }
    Ok(KrmResult::warning(
        "priority dropped: harmless here, it only orders several auto-assign pools and this \
         pool is not competing with another one",
    )
    .about(item)
    .field("spec.serviceAllocation.priority")
    .current(priority))
}

/// Cilium marks the later of two overlapping pools Conflicting and stops using it.
fn overlaps(inv: &Inventory, items: &[Value], out: &mut Translated, results: &mut Vec<KrmResult>) {
    let mut sorted = out.intervals.clone();
    sorted.sort();
    let mut reported = BTreeSet::new();
    for pair in sorted.windows(2) {
        let ((a, ai), (b, bi)) = (pair[0], pair[1]);
        if a.family == b.family && b.start <= a.end && reported.insert((ai.min(bi), ai.max(bi))) {
            let name = |i: usize| {
                inv.pools
                    .iter()
                    .find(|p| p.index == i)
                    .map(|p| p.name.clone())
                    .unwrap_or_default()
            };
            results.push(
                KrmResult::error(format!(
                    "{a} (pool {}) overlaps {b} (pool {}): Cilium marks the later pool Conflicting and stops allocating from it",
                    name(ai),
                    name(bi)
                ))
                .about(&items[bi])
                .field("spec.addresses"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::announcer::inventory::MAX_LABEL_VALUE;
    use crate::modes::announcer::{inputs, policies};

    const LABEL: &str = "cutover.dev/address-pool";

    /// `pools` IPAddressPools (the first `opt_in` with `autoAssign: false`) and `adverts`
    /// L2Advertisements covering pool 0 only.
    fn items(pools: usize, opt_in: usize, adverts: usize) -> Vec<Value> {
        let mut text = String::new();
        for p in 0..pools {
            let auto = if p < opt_in {
                ", autoAssign: false"
            } else {
                ""
            };
            text.push_str(&format!(
                "- {{apiVersion: metallb.io/v1beta1, kind: IPAddressPool, metadata: {{name: p{p}, namespace: m}}, \
                 spec: {{addresses: [10.{}.{}.0/24]{auto}}}}}\n",
                p / 256,
                p % 256
            ));
        }
        for a in 0..adverts {
            text.push_str(&format!(
                "- {{apiVersion: metallb.io/v1beta1, kind: L2Advertisement, metadata: {{name: a{a}, namespace: m}}, \
                 spec: {{ipAddressPools: [p{}]}}}}\n",
                pools - 1
            ));
        }
        serde_yaml::from_str(&text).unwrap()
    }

    fn translate(items: &[Value]) -> (Translated, Vec<KrmResult>) {
        let (inv, errors) = inputs::read(items);
        assert!(errors.is_empty(), "{errors:?}");
        let version = CiliumVersion::parse("1.18.4").unwrap();
        let mut tr = Translated::default();
        let mut results = Vec::new();
        pools(&inv, items, &version, LABEL, &mut tr, &mut results);
        policies::policies(&inv, items, LABEL, &mut tr, &mut results);
        (tr, results)
    }

    /// 256 auto-assign pools among 257 list exactly the bound: translated, each auto-assign
    /// pool excluding the 256 others.
    #[test]
    fn selectors_up_to_the_bound_are_exact() {
        let (tr, results) = translate(&items(257, 1, 0));
        assert!(!results.iter().any(KrmResult::is_error), "{results:?}");
        assert!(!tr.too_large);
        assert_eq!(tr.pools.len(), 257);
        assert_eq!(tr.selector_pool_names, MAX_SELECTOR_POOL_NAMES);
        let sel = tr.pools[1].object.spec.service_selector.as_ref().unwrap();
        let exprs = sel.match_expressions.as_ref().unwrap();
        assert_eq!(exprs[0].operator, "NotIn");
        assert_eq!(exprs[0].values.as_ref().unwrap().len(), 256);
    }

    /// One auto-assign pool more: an error about the first auto-assign pool, nothing translated.
    #[test]
    fn auto_assign_pools_past_the_bound_are_an_error() {
        let (tr, results) = translate(&items(257, 0, 0));
        assert!(tr.too_large);
        assert!(tr.pools.is_empty() && tr.policies.is_empty());
        let errors: Vec<&KrmResult> = results.iter().filter(|r| r.is_error()).collect();
        assert_eq!(errors.len(), 1, "{results:?}");
        assert!(
            errors[0]
                .message
                .contains("257 auto-assign pools among 257")
        );
        assert_eq!(errors[0].resource_ref.as_ref().unwrap().name, "p0");
        assert_eq!(errors[0].field.as_ref().unwrap().path, "spec.autoAssign");
    }

    /// Policies count too: 300 advertisements covering the one auto-assign pool each exclude
    /// the 300 opt-in pools (90 000 names).
    #[test]
    fn policies_past_the_bound_are_an_error() {
        let (tr, results) = translate(&items(301, 300, 300));
        assert!(tr.too_large);
        let errors: Vec<&KrmResult> = results.iter().filter(|r| r.is_error()).collect();
        assert_eq!(errors.len(), 1, "{results:?}");
        assert!(
            errors[0].message.contains("policies would list"),
            "{}",
            errors[0].message
        );
        assert_eq!(
            errors[0].field.as_ref().unwrap().path,
            "spec.ipAddressPools"
        );
    }

    /// A pool name that cannot be a label value is refused when read, and the translation of
    /// the other pools neither lists it (their selectors stay valid and their size bounded by
    /// the pool count, whatever the names' length) nor reports the advertisement naming it.
    #[test]
    fn a_pool_name_longer_than_a_label_value_is_refused_and_listed_nowhere() {
        let long = "p".repeat(MAX_LABEL_VALUE + 1);
        let mut items = items(3, 2, 0);
        items.push(serde_yaml::from_str(&format!(
            "{{apiVersion: metallb.io/v1beta1, kind: IPAddressPool, metadata: {{name: {long}, namespace: m}}, \
             spec: {{addresses: [10.9.0.0/24]}}}}"
        )).unwrap());
        items.push(serde_yaml::from_str(&format!(
            "{{apiVersion: metallb.io/v1beta1, kind: L2Advertisement, metadata: {{name: a, namespace: m}}, \
             spec: {{ipAddressPools: [p2, {long}]}}}}"
        )).unwrap());
        let (inv, errors) = inputs::read(&items);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].resource_ref.as_ref().unwrap().name.len(),
            long.len()
        );
        assert_eq!(errors[0].field.as_ref().unwrap().path, "metadata.name");
        assert!(errors[0].message.contains("longer than 63 characters"));
        assert_eq!(inv.pools.len(), 3);
        assert!(inv.rejected_pools.contains(&long));

        let version = CiliumVersion::parse("1.18.4").unwrap();
        let mut tr = Translated::default();
        let mut results = Vec::new();
        pools(&inv, &items, &version, LABEL, &mut tr, &mut results);
        policies::policies(&inv, &items, LABEL, &mut tr, &mut results);
        assert!(results.is_empty(), "{results:?}");
        assert_eq!(tr.pools.len(), 3);
        assert_eq!(tr.policies.len(), 1);
        let generated = serde_yaml::to_string(&(
            tr.pools.iter().map(|g| &g.object).collect::<Vec<_>>(),
            tr.policies.iter().map(|g| &g.object).collect::<Vec<_>>(),
        ))
        .unwrap();
        assert!(generated.contains("p2"), "{generated}");
        assert!(!generated.contains(&long), "{generated}");
    }
}

//! The coverage proof — the safety property of the mode. For every Service MetalLB serves it
//! computes, independently, what MetalLB does today (pool, IPs, announcing nodes and interfaces)
//! and what Cilium will do with the *emitted* objects (pool selectors and blocks read back from the
//! generated YAML, policies likewise, the Service's labels after the rewrite), and compares.
//! Any Service that would lose its IP or change announcing nodes/interfaces is an error.

use std::collections::{BTreeSet, HashMap};

use serde_yaml::Value;

use super::cilium::{IpPool, L2Policy, SVC_NAME_LABEL, SVC_NAMESPACE_LABEL, interface_from_regex};
use super::inputs::{AboutService, Inventory, LbService, Pool};
use super::ipam::{CiliumBlock, parse_ip};
use super::policies::advertised_pools;
use super::selector::{self, Labels, canonical};
use super::services::ServicePlan;
use crate::krm::KrmResult;

/// How many per-Service coverage lines are reported before only the summary remains.
pub const MAX_SERVICE_LINES: usize = 100;

/// One announcement: node selector and interface set (`None` = all interfaces).
type Announcement = (String, Option<BTreeSet<String>>);

fn describe(set: &BTreeSet<Announcement>) -> String {
    if set.is_empty() {
        return "not announced".into();
    }
    set.iter()
        .map(|(nodes, ifs)| {
            let ifs = match ifs {
                None => "all interfaces".to_owned(),
                Some(s) => s.iter().cloned().collect::<Vec<_>>().join(","),
            };
            if nodes == "{}" {
                format!("all nodes on {ifs}")
            } else {
                format!("nodes {nodes} on {ifs}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// MetalLB: may `svc` allocate from `pool` by `serviceAllocation`? `None` when unknown
/// (namespace selectors without Namespace items).
fn metallb_admits(pool: &Pool, svc: &LbService, inv: &Inventory) -> Option<bool> {
    let Some(alloc) = &pool.spec.service_allocation else {
        return Some(true);
    };
    let ns = svc.namespace();
    let unrestricted = alloc.namespaces.is_empty() && alloc.namespace_selectors.is_empty();
    let ns_ok = if unrestricted || alloc.namespaces.iter().any(|n| n == ns) {
        true
    } else if alloc.namespace_selectors.is_empty() {
        false
    } else {
        let labels = inv.namespaces.get(ns)?;
        alloc
            .namespace_selectors
            .iter()
            .any(|s| selector::matches(s, labels))
    };
    let labels = svc.labels();
    let svc_ok = alloc.service_selectors.is_empty()
        || alloc
            .service_selectors
            .iter()
            .any(|s| selector::matches(s, &labels));
    Some(ns_ok && svc_ok)
}

/// Runs the proof. `pools`/`policies` are the emitted objects; `after_labels(plan)` gives the
/// labels of the Service item as rewritten (read from the edited YAML, not from the plan).
pub fn prove(
    inv: &Inventory,
    items: &[Value],
    plans: &[ServicePlan],
    pools: &[IpPool],
    policies: &[L2Policy],
    after_labels: &dyn Fn(&ServicePlan) -> Labels,
) -> Vec<KrmResult> {
    let mut results = Vec::new();
    let mut sink = Vec::new();
    // MetalLB side: which advertisements cover which pool.
    let covered: Vec<(BTreeSet<String>, &super::inputs::Advertisement)> = inv
        .adverts
        .iter()
        .filter_map(|ad| {
            advertised_pools(ad, inv, &items[ad.index], &mut sink).map(|set| (set, ad))
        })
        .collect();
    // What each advertisement announces (computed once; a Service only decides which apply).
    let covered_ann: Vec<BTreeSet<Announcement>> = covered
        .iter()
        .map(|(_, ad)| {
            let ifs: Option<BTreeSet<String>> = (!ad.spec.interfaces.is_empty())
                .then(|| ad.spec.interfaces.iter().cloned().collect());
            if ad.spec.node_selectors.is_empty() {
                BTreeSet::from([(canonical(None), ifs)])
            } else {
                ad.spec
                    .node_selectors
                    .iter()
                    .map(|ns| (canonical(Some(ns)), ifs.clone()))
                    .collect()
            }
        })
        .collect();
    // MetalLB's announcements of `pool` for a Service with `labels`: the union over the
    // advertisements covering the pool whose service selectors admit the Service. Services mostly
    // share a handful of such combinations, so the sets are built once per combination.
    let mut before_cache: HashMap<(String, Vec<usize>), BTreeSet<Announcement>> = HashMap::new();
    let mut before_for = |pool: &str, labels: &Labels| -> BTreeSet<Announcement> {
        let applying: Vec<usize> = covered
            .iter()
            .enumerate()
            .filter(|(_, (pools, ad))| {
                pools.contains(pool)
                    && (ad.spec.service_selectors.is_empty()
                        || ad
                            .spec
                            .service_selectors
                            .iter()
                            .any(|s| selector::matches(s, labels)))
            })
            .map(|(i, _)| i)
            .collect();
        before_cache
            .entry((pool.to_owned(), applying))
            .or_insert_with_key(|(_, applying)| {
                applying
                    .iter()
                    .flat_map(|&i| covered_ann[i].iter().cloned())
                    .collect()
            })
            .clone()
    };
    // Cilium side, read back from the emitted objects.
    let cilium_pools: Vec<(&IpPool, Vec<CiliumBlock>)> = pools
        .iter()
        .map(|p| {
            let blocks = p
                .spec
                .blocks
                .iter()
                .filter_map(|b| {
                    CiliumBlock::parse(
                        b.cidr.as_deref(),
                        b.start.as_deref(),
                        b.stop.as_deref(),
                        p.spec.allow_first_last_ips.as_deref(),
                    )
                })
                .collect();
            (p, blocks)
        })
        .collect();
    // What each policy that announces LoadBalancer IPs announces (computed once).
    let policy_ann: Vec<(&L2Policy, Announcement)> = policies
        .iter()
        .filter(|p| p.spec.load_balancer_ips)
        .map(|p| {
            let ifs = p.spec.interfaces.as_ref().map(|list| {
                list.iter()
                    .map(|re| interface_from_regex(re).unwrap_or_else(|| re.clone()))
                    .collect()
            });
            (p, (canonical(p.spec.node_selector.as_ref()), ifs))
        })
        .collect();
    let mut after_cache: HashMap<Vec<usize>, BTreeSet<Announcement>> = HashMap::new();
    let mut ok = 0usize;
    let mut lines = 0usize;
    for plan in plans {
        let svc = &inv.services[plan.service];
        let mut labels = after_labels(plan);
        let before_labels = svc.labels();
        labels.insert(SVC_NAMESPACE_LABEL.into(), svc.namespace().to_owned());
        labels.insert(SVC_NAME_LABEL.into(), svc.name().to_owned());
        let selecting: Vec<&(&IpPool, Vec<CiliumBlock>)> = cilium_pools
            .iter()
            .filter(|(p, _)| {
                p.spec
                    .service_selector
                    .as_ref()
                    .is_none_or(|s| selector::matches(s, &labels))
            })
            .collect();
        let mut errors = Vec::new();
        // 1. Addresses: every IP must be allocatable from a pool that selects the Service, and
        //    that pool must be the one MetalLB uses.
        let mut after_pool: Option<String> = None;
        for ip_text in &plan.ips {
            let Some(ip) = parse_ip(ip_text) else {
                errors.push(format!("IP {ip_text:?} is not an IP address"));
                continue;
            };
            let home = selecting
                .iter()
                .find(|(_, blocks)| blocks.iter().any(|b| b.allows(ip)));
            match home {
                Some((p, _)) => {
                    if let Some(before) = &plan.pool
                        && before != &p.metadata.name
                    {
                        errors.push(format!(
                            "IP {ip_text} would come from Cilium pool {} instead of {before}",
                            p.metadata.name
                        ));
                    }
                    after_pool = Some(p.metadata.name.clone());
                }
                None => {
                    let holder = cilium_pools
                        .iter()
                        .find(|(_, blocks)| blocks.iter().any(|b| b.allows(ip)));
                    errors.push(match holder {
                        Some((p, _)) => format!(
                            "IP {ip_text} lies in Cilium pool {} whose serviceSelector does not select the Service: \
                             LB-IPAM would strip the IP and allocate another one",
                            p.metadata.name
                        ),
                        None => format!(
                            "IP {ip_text} is in no Cilium pool (nor allocatable from one): LB-IPAM would strip it \
                             and allocate another IP"
                        ),
                    });
                }
            }
        }
        // 2. Services without an IP yet: the set of candidate pools must be the same.
        let candidate_pools: Vec<String> = if plan.ips.is_empty() {
            // An `address-pool` annotation restricts MetalLB to that one pool (when it admits
            // the Service); otherwise MetalLB picks among the auto-assign pools that admit it.
            let before: BTreeSet<String> = inv
                .pools
                .iter()
                .filter(|p| match &plan.pool {
                    Some(requested) => &p.name == requested,
                    None => p.auto_assign(),
                })
                .filter(|p| metallb_admits(p, svc, inv) != Some(false))
                .map(|p| p.name.clone())
                .collect();
            let after: BTreeSet<String> = selecting
                .iter()
                .map(|(p, _)| p.metadata.name.clone())
                .collect();
            if before != after {
                errors.push(format!(
                    "no IP yet: MetalLB would allocate from [{}], Cilium from [{}]",
                    before.iter().cloned().collect::<Vec<_>>().join(", "),
                    after.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            before.into_iter().collect()
        } else {
            plan.pool.iter().cloned().collect()
        };
        // 3. Announcements: same node selectors and interfaces.
        let selecting_policies: Vec<usize> = policy_ann
            .iter()
            .enumerate()
            .filter(|(_, (p, _))| {
                p.spec
                    .service_selector
                    .as_ref()
                    .is_none_or(|s| selector::matches(s, &labels))
            })
            .map(|(i, _)| i)
            .collect();
        let after_ann = after_cache
            .entry(selecting_policies)
            .or_insert_with_key(|selecting| {
                selecting.iter().map(|&i| policy_ann[i].1.clone()).collect()
            })
            .clone();
        let mut before_ann = BTreeSet::new();
        for pool in &candidate_pools {
            let b = before_for(pool, &before_labels);
            if before_ann.is_empty() {
                before_ann = b;
            } else if before_ann != b {
                errors.push(format!(
                    "candidate pools are announced differently by MetalLB ({} vs {})",
                    describe(&before_ann),
                    describe(&b)
                ));
            }
        }
        if before_ann != after_ann {
            errors.push(format!(
                "announcement changes: MetalLB {}; Cilium {}",
                describe(&before_ann),
                describe(&after_ann)
            ));
        }
        let ips = if plan.ips.is_empty() {
            "no IP yet".to_owned()
        } else {
            plan.ips.join(",")
        };
        let pool_text = plan
            .pool
            .clone()
            .or(after_pool)
            .unwrap_or_else(|| format!("auto [{}]", candidate_pools.join(", ")));
        if !errors.is_empty() {
            results.push(
                KrmResult::error(format!(
                    "coverage: {} ({ips}, pool {pool_text}): {}",
                    plan_name(svc),
                    errors.join("; ")
                ))
                .about_svc(svc)
                .field("metadata")
                .tag("check", "coverage"),
            );
            continue;
        }
        if before_ann.is_empty() {
            results.push(
                KrmResult::warning(format!(
                    "coverage: {} ({ips}, pool {pool_text}) is announced by no L2Advertisement today and by no policy after",
                    plan_name(svc)
                ))
                .about_svc(svc)
                .tag("check", "coverage"),
            );
            continue;
        }
        ok += 1;
        if lines < MAX_SERVICE_LINES {
            lines += 1;
            results.push(
                KrmResult::info(if plan.ips.is_empty() {
                    format!(
                        "coverage: {} has no IP yet and allocates from the same pools ({pool_text}), announced from {} (before and after)",
                        plan_name(svc),
                        describe(&after_ann)
                    )
                } else {
                    format!(
                        "coverage: {} keeps {ips} from pool {pool_text}, announced from {} (before and after)",
                        plan_name(svc),
                        describe(&after_ann)
                    )
                })
                .about_svc(svc)
                .tag("check", "coverage"),
            );
        }
    }
    results.push(
        KrmResult::info(format!(
            "coverage: {ok} of {} LoadBalancer Services served by MetalLB keep their IP, pool, announcing nodes and interfaces",
            plans.len()
        ))
        .tag("check", "coverage"),
    );
    results
}

fn plan_name(svc: &LbService) -> String {
    format!("{}/{}", svc.namespace(), svc.name())
}

//! The coverage proof — the safety property of the mode. For every Service MetalLB serves it
//! computes, independently, what MetalLB does today (pool, IPs, announcing nodes and interfaces)
//! and what Cilium will do with the *emitted* objects (pool selectors and blocks read back from the
//! generated YAML, policies likewise, the Service's labels after the rewrite), and compares.
//! Any Service that would lose its IP or change announcing nodes/interfaces is an error.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use serde_yaml::Value;

use super::Check;
use super::cilium::{IpPool, L2Policy, SVC_NAME_LABEL, SVC_NAMESPACE_LABEL, interface_from_regex};
use super::inventory::{Advertisement, Inventory, Pool};
use super::ipam::{CiliumBlock, parse_ip};
use super::observed::EXCLUDE_LB_LABEL;
use super::policies::{advertised_pools, pool_names};
use super::selector::{self, Labels, Matcher, MatcherIndex, announcing_nodes, canonical};
use super::service::{AboutService, LbService};
use super::services::{IpSource, ServicePlan};
use crate::krm::KrmResult;

/// How many per-Service coverage lines are reported before only the summary remains.
pub const MAX_SERVICE_LINES: usize = 100;

/// One announcement: node selector and interface set (`None` = all interfaces).
type Announcement = (String, Option<BTreeSet<String>>);

/// A Service's announcements, shared with the cache it came from (most Services are announced
/// by the same few sets).
type Announcements = Rc<BTreeSet<Announcement>>;

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
            // Every announcement excludes the nodes MetalLB never announces from; say so in words.
            let excluded = format!("{EXCLUDE_LB_LABEL} DoesNotExist []");
            if nodes == "{}" {
                format!("all nodes on {ifs}")
            } else if *nodes == format!("{{{excluded}}}") {
                format!("all nodes but the excluded ones on {ifs}")
            } else {
                let nodes = nodes
                    .replace(&format!(",{excluded}"), "")
                    .replace(&format!("{excluded},"), "");
                format!("nodes {nodes} but the excluded ones on {ifs}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// MetalLB: may `svc` allocate from `pool` by `serviceAllocation`? `None` when unknown
/// (namespace selectors without Namespace items).
/// `namespaces` is the pool's `serviceAllocation.namespaces` as a set.
fn metallb_admits(
    pool: &Pool,
    namespaces: &HashSet<&str>,
    svc: &LbService,
    inv: &Inventory,
) -> Option<bool> {
    let Some(alloc) = &pool.spec.service_allocation else {
        return Some(true);
    };
    let ns = svc.namespace();
    let unrestricted = alloc.namespaces.is_empty() && alloc.namespace_selectors.is_empty();
    let ns_ok = if unrestricted || namespaces.contains(ns) {
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

/// The coverage proof, one Service at a time: [`Proof::new`] reads the MetalLB side and the
/// emitted Cilium objects once, [`Proof::check`] compares one Service, [`Proof::finish`] gives
/// the results and the summary. Checking each Service as soon as its rewrite is known lets the
/// caller drop the Service's plan right away.
pub struct Proof<'a> {
    inv: &'a Inventory,
    /// MetalLB: which advertisements cover which pool.
    covered: Vec<(BTreeSet<String>, &'a Advertisement)>,
    /// What each of `covered` announces.
    covered_ann: Vec<BTreeSet<Announcement>>,
    /// MetalLB's announcements by (pool, advertisements that apply to the Service).
    before_cache: HashMap<(String, Vec<usize>), Announcements>,
    /// Cilium pools, read back from the emitted objects, with their blocks and prepared service
    /// selectors.
    cilium_pools: Vec<CiliumPool<'a>>,
    /// What each policy that announces LoadBalancer IPs announces, with its prepared service
    /// selector.
    policy_ann: Vec<(Option<Matcher<'a>>, Announcement)>,
    /// `cilium_pools` and `policy_ann` by a label their selector requires: a Service is matched
    /// only against the few that may select it.
    pool_index: MatcherIndex<'a>,
    policy_index: MatcherIndex<'a>,
    /// `serviceAllocation.namespaces` of each MetalLB pool ([`Inventory::pools`] order).
    pool_namespaces: Vec<HashSet<&'a str>>,
    /// Cilium's announcements by the policies that select the Service.
    after_cache: HashMap<Vec<usize>, Announcements>,
    checked: usize,
    ok: usize,
    /// Proven like `ok` except the IP: neither requested nor known (no status, no observed
    /// state). Never said to keep an IP.
    unknown: usize,
    /// The cluster shows them without an IP: they allocate from the same pools.
    no_ip: usize,
    /// `externalTrafficPolicy: Local` (accepted): IP and pool kept, announcing nodes change.
    local: usize,
    /// Announced by nobody, before and after (a warning each).
    unannounced: usize,
    /// Per-Service coverage errors.
    failed: usize,
    lines: usize,
    /// Services rendered in the cluster from chart values, which the proof cannot see.
    unseen: usize,
    results: Vec<KrmResult>,
}

/// A Cilium pool as the proof reads it: the object, its blocks, its service selector.
type CiliumPool<'a> = (&'a IpPool, Vec<CiliumBlock>, Option<Matcher<'a>>);

/// Runs the proof over all plans (the function checks each Service as it goes, see [`Proof`]). `pools`/`policies` are the emitted objects; `after_labels(plan)`
/// gives the labels of the Service item as rewritten (read from the edited YAML, not from the
/// plan).
#[cfg(test)]
pub fn prove(
    inv: &Inventory,
    items: &[Value],
    plans: &[ServicePlan],
    pools: &[IpPool],
    policies: &[L2Policy],
    after_labels: &dyn Fn(&ServicePlan) -> Labels,
) -> Vec<KrmResult> {
    let mut proof = Proof::new(inv, items, pools, policies);
    for plan in plans {
        proof.check(plan, after_labels(plan));
    }
    proof.finish()
}

/// What the checks of one Service found.
struct Verdict {
    /// Why its IP or its announcing nodes may change; empty when they do not.
    errors: Vec<String>,
    /// The Cilium pool its IPs come from.
    after_pool: Option<String>,
    /// The pools MetalLB may allocate from (for a Service without an IP yet).
    candidate_pools: Vec<String>,
    /// MetalLB's announcements of it.
    before_ann: Announcements,
    /// Cilium's announcements of it.
    after_ann: Announcements,
}

impl<'a> Proof<'a> {
    /// Reads the MetalLB advertisements and the emitted Cilium pools and policies.
    pub fn new(
        inv: &'a Inventory,
        items: &[Value],
        pools: &'a [IpPool],
        policies: &'a [L2Policy],
    ) -> Self {
        let mut sink = Vec::new();
        let known = pool_names(inv);
        let covered: Vec<(BTreeSet<String>, &Advertisement)> = inv
            .adverts
            .iter()
            .filter_map(|ad| {
                advertised_pools(ad, inv, &known, &items[ad.index], &mut sink).map(|set| (set, ad))
            })
            .collect();
        let covered_ann = covered
            .iter()
            .map(|(_, ad)| {
                let ifs: Option<BTreeSet<String>> = (!ad.spec.interfaces.is_empty())
                    .then(|| ad.spec.interfaces.iter().cloned().collect());
                // MetalLB's speaker never announces from excluded nodes: its selectors are read
                // with that rule, as the generated policies spell it.
                if ad.spec.node_selectors.is_empty() {
                    BTreeSet::from([(canonical(Some(&announcing_nodes(None))), ifs)])
                } else {
                    ad.spec
                        .node_selectors
                        .iter()
                        .map(|ns| (canonical(Some(&announcing_nodes(Some(ns)))), ifs.clone()))
                        .collect()
                }
            })
            .collect();
        let cilium_pools: Vec<CiliumPool> = pools
            .iter()
            .map(|p| {
                let blocks = p.spec.cilium_blocks();
                (
                    p,
                    blocks,
                    p.spec.service_selector.as_ref().map(Matcher::new),
                )
            })
            .collect();
        let pool_namespaces = inv
            .pools
            .iter()
            .map(|p| {
                p.spec
                    .service_allocation
                    .iter()
                    .flat_map(|a| a.namespaces.iter().map(String::as_str))
                    .collect()
            })
            .collect();
        let policy_ann: Vec<(Option<Matcher>, Announcement)> = policies
            .iter()
            .filter(|p| p.spec.load_balancer_ips)
            .map(|p| {
                let ifs = p.spec.interfaces.as_ref().map(|list| {
                    list.iter()
                        .map(|re| interface_from_regex(re).unwrap_or_else(|| re.clone()))
                        .collect()
                });
                let selector = p.spec.service_selector.as_ref().map(Matcher::new);
                (selector, (canonical(p.spec.node_selector.as_ref()), ifs))
            })
            .collect();
        let pool_index = MatcherIndex::new(cilium_pools.iter().map(|(_, _, m)| m.as_ref()));
        let policy_index = MatcherIndex::new(policy_ann.iter().map(|(m, _)| m.as_ref()));
        Proof {
            inv,
            covered,
            pool_index,
            policy_index,
            covered_ann,
            before_cache: HashMap::new(),
            cilium_pools,
            policy_ann,
            pool_namespaces,
            after_cache: HashMap::new(),
            checked: 0,
            ok: 0,
            unknown: 0,
            no_ip: 0,
            local: 0,
            unannounced: 0,
            failed: 0,
            lines: 0,
            unseen: 0,
            results: Vec::new(),
        }
    }

    /// MetalLB's announcements of `pool` for a Service with `labels`: the union over the
    /// advertisements covering the pool whose service selectors admit the Service. Services
    /// mostly share a handful of such combinations, so each set is built once.
    fn before_for(&mut self, pool: &str, svc: &LbService) -> Announcements {
        // The Service's labels, read only if an advertisement has service selectors.
        let mut labels: Option<Labels> = None;
        let applying: Vec<usize> = self
            .covered
            .iter()
            .enumerate()
            .filter(|(_, (pools, ad))| {
                pools.contains(pool)
                    && (ad.spec.service_selectors.is_empty()
                        || ad.spec.service_selectors.iter().any(|s| {
                            selector::matches(s, labels.get_or_insert_with(|| svc.labels()))
                        }))
            })
            .map(|(i, _)| i)
            .collect();
        let covered_ann = &self.covered_ann;
        self.before_cache
            .entry((pool.to_owned(), applying))
            .or_insert_with_key(|(_, applying)| {
                Rc::new(
                    applying
                        .iter()
                        .flat_map(|&i| covered_ann[i].iter().cloned())
                        .collect(),
                )
            })
            .clone()
    }

    /// Checks one Service; `after_labels` are its labels as rewritten (read from its patch).
    pub fn check(&mut self, plan: &ServicePlan, after_labels: Labels) {
        self.checked += 1;
        let svc = &self.inv.services[plan.service];
        let mut labels = after_labels;
        labels.insert(SVC_NAMESPACE_LABEL.into(), svc.namespace().to_owned());
        labels.insert(SVC_NAME_LABEL.into(), svc.name().to_owned());
        let mut errors = Vec::new();
        if let Some(rule) = plan.split {
            errors.push(format!(
                "Cilium would split its sharing group (rule {rule}, see the sharing error), so it may get \
                 another IP or none"
            ));
        }
        let selecting: Vec<&CiliumPool> = self
            .pool_index
            .candidates(&labels)
            .into_iter()
            .map(|i| &self.cilium_pools[i])
            .filter(|(_, _, sel)| sel.as_ref().is_none_or(|s| s.matches(&labels)))
            .collect();
        let after_pool = self.check_addresses(plan, &selecting, &mut errors);
        let candidate_pools = self.candidate_pools(plan, svc, &selecting, &mut errors);
        let (before_ann, after_ann) =
            self.check_announcements(svc, &labels, &candidate_pools, &mut errors);
        let verdict = Verdict {
            errors,
            after_pool,
            candidate_pools,
            before_ann,
            after_ann,
        };
        self.report(plan, svc, verdict);
    }

    /// 1. Addresses: every IP must be allocatable from a pool that selects the Service, and
    ///    that pool must be the one MetalLB uses. Returns the Cilium pool the IPs come from.
    fn check_addresses(
        &self,
        plan: &ServicePlan,
        selecting: &[&CiliumPool],
        errors: &mut Vec<String>,
    ) -> Option<String> {
        let mut after_pool: Option<String> = None;
        for ip_text in &plan.ips {
            // The plan parsed every IP (services::service_ips): one it could not read has its
            // own error and no plan. Still never counted as kept.
            let Some(ip) = parse_ip(ip_text) else {
                errors.push(format!("IP {ip_text:?} is not an IP address"));
                continue;
            };
            let home = selecting
                .iter()
                .find(|(_, blocks, _)| blocks.iter().any(|b| b.allows(ip)));
            match home {
                Some((p, _, _)) => {
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
                    let holder = self
                        .cilium_pools
                        .iter()
                        .find(|(_, blocks, _)| blocks.iter().any(|b| b.allows(ip)));
                    errors.push(match holder {
                        Some((p, _, _)) => format!(
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
        after_pool
    }

    /// 2. Services without an IP yet: the set of candidate pools must be the same. Returns the
    ///    pools MetalLB may allocate from (the requested pool of a Service that has IPs).
    fn candidate_pools(
        &self,
        plan: &ServicePlan,
        svc: &LbService,
        selecting: &[&CiliumPool],
        errors: &mut Vec<String>,
    ) -> Vec<String> {
        let inv = self.inv;
        if plan.ips.is_empty() {
            // An `address-pool` annotation restricts MetalLB to that one pool (when it admits
            // the Service); otherwise MetalLB picks among the auto-assign pools that admit it.
            let before: BTreeSet<String> = inv
                .pools
                .iter()
                .zip(&self.pool_namespaces)
                .filter(|(p, _)| match &plan.pool {
                    Some(requested) => &p.name == requested,
                    None => p.auto_assign(),
                })
                .filter(|(p, ns)| metallb_admits(p, ns, svc, inv) != Some(false))
                .map(|(p, _)| p.name.clone())
                .collect();
            let after: BTreeSet<String> = selecting
                .iter()
                .map(|(p, _, _)| p.metadata.name.clone())
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
        }
    }

    /// 3. Announcements: same node selectors and interfaces. Returns MetalLB's announcements
    ///    of the Service and Cilium's.
    fn check_announcements(
        &mut self,
        svc: &LbService,
        labels: &Labels,
        candidate_pools: &[String],
        errors: &mut Vec<String>,
    ) -> (Announcements, Announcements) {
        let selecting_policies: Vec<usize> = self
            .policy_index
            .candidates(labels)
            .into_iter()
            .filter(|&i| {
                self.policy_ann[i]
                    .0
                    .as_ref()
                    .is_none_or(|s| s.matches(labels))
            })
            .collect();
        let policy_ann = &self.policy_ann;
        let after_ann = self
            .after_cache
            .entry(selecting_policies)
            .or_insert_with_key(|selecting| {
                Rc::new(selecting.iter().map(|&i| policy_ann[i].1.clone()).collect())
            })
            .clone();
        let mut before_ann = Announcements::default();
        for pool in candidate_pools {
            let b = self.before_for(pool, svc);
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
        if before_ann != after_ann && !svc.etp_local() {
            errors.push(format!(
                "announcement changes: MetalLB {}; Cilium {}",
                describe(&before_ann),
                describe(&after_ann)
            ));
        }
        (before_ann, after_ann)
    }

    /// Counts the Service's verdict and records its result: an error, a warning when nothing
    /// announces it, or (for the first few) an info.
    fn report(&mut self, plan: &ServicePlan, svc: &LbService, verdict: Verdict) {
        let Verdict {
            errors,
            after_pool,
            candidate_pools,
            before_ann,
            after_ann,
        } = verdict;
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
            self.failed += 1;
            self.results.push(
                KrmResult::error(format!(
                    "coverage: {} ({ips}, pool {pool_text}): {}",
                    plan_name(svc),
                    errors.join("; ")
                ))
                .about_svc(svc)
                .field("metadata")
                .tag("check", Check::Coverage),
            );
            return;
        }
        if before_ann.is_empty() {
            self.unannounced += 1;
            self.results.push(
                KrmResult::warning(format!(
                    "coverage: {} ({ips}, pool {pool_text}) is announced by no L2Advertisement today and by no policy after",
                    plan_name(svc)
                ))
                .about_svc(svc)
                .tag("check", Check::Coverage),
            );
            return;
        }
        // Only the first few Services get a line: the others are counted, their line not written.
        let wanted = self.lines < MAX_SERVICE_LINES;
        let line = match plan.source {
            IpSource::Unknown => {
                self.unknown += 1;
                wanted.then(|| format!(
                    "coverage: {} has an unknown IP (no status, no observed state): it allocates from the same \
                     pools ({pool_text}) and is announced from {} before and after, but keeping its IP cannot be \
                     proven; export the live state (cutover observe)",
                    plan_name(svc),
                    describe(&after_ann)
                ))
            }
            IpSource::NoneLive => {
                self.no_ip += 1;
                wanted.then(|| format!(
                    "coverage: {} has no IP yet and allocates from the same pools ({pool_text}), announced from {} (before and after)",
                    plan_name(svc),
                    describe(&after_ann)
                ))
            }
            _ if svc.etp_local() => {
                self.local += 1;
                wanted.then(|| format!(
                    "coverage: {} keeps {ips} from pool {pool_text}; externalTrafficPolicy: Local, so its announcing \
                     nodes change (MetalLB: nodes with a ready endpoint among {}; Cilium: any of {})",
                    plan_name(svc),
                    describe(&before_ann),
                    describe(&after_ann)
                ))
            }
            _ => {
                self.ok += 1;
                wanted.then(|| format!(
                    "coverage: {} keeps {ips} from pool {pool_text}, announced from {} (before and after)",
                    plan_name(svc),
                    describe(&after_ann)
                ))
            }
        };
        if let Some(line) = line {
            self.lines += 1;
            self.results.push(
                KrmResult::info(line)
                    .about_svc(svc)
                    .tag("check", Check::Coverage),
            );
        }
    }

    /// Counts Services the charts render in the cluster (their MetalLB annotations were found
    /// in chart values): they are not among the items, so the proof cannot check them.
    pub fn unseen(&mut self, services: usize) {
        self.unseen += services;
    }

    /// The results: per-Service errors, warnings and (the first few) infos, then the summary.
    pub fn finish(mut self) -> Vec<KrmResult> {
        let unseen = match self.unseen {
            0 => String::new(),
            n => format!(
                "; {n} Service(s) rendered in the cluster from chart values with MetalLB annotations are not among \
                 the items and not proven (their annotations are translated in the values)"
            ),
        };
        let mut others = Vec::new();
        let counts = [
            (
                self.unknown,
                "with an unknown IP (no status, no observed state) allocate from the same pools and are announced the same way, their IPs unproven",
            ),
            (self.no_ip, "without an IP yet allocate from the same pools"),
            (
                self.local,
                "with externalTrafficPolicy: Local keep their IP and pool, their announcing nodes change",
            ),
            (
                self.unannounced,
                "are announced by nobody, before and after",
            ),
            (self.failed, "fail (errors above)"),
        ];
        for (n, what) in counts {
            if n > 0 {
                others.push(format!("{n} {what}"));
            }
        }
        let others = if others.is_empty() {
            String::new()
        } else {
            format!("; {}", others.join("; "))
        };
        debug_assert_eq!(
            self.checked,
            self.ok + self.unknown + self.no_ip + self.local + self.unannounced + self.failed
        );
        self.results.push(
            KrmResult::info(format!(
                "coverage: {} of {} LoadBalancer Services served by MetalLB keep their IP, pool, announcing nodes and interfaces{others}{unseen}",
                self.ok, self.checked
            ))
            .tag("check", Check::Coverage)
            // The counts, for tools and for the test that every Service not kept is accounted for.
            .tag("checked", self.checked.to_string())
            .tag("kept", self.ok.to_string())
            .tag("unknown", self.unknown.to_string())
            .tag("noIp", self.no_ip.to_string())
            .tag("local", self.local.to_string())
            .tag("unannounced", self.unannounced.to_string())
            .tag("failed", self.failed.to_string()),
        );
        self.results
    }
}

fn plan_name(svc: &LbService) -> String {
    format!("{}/{}", svc.namespace(), svc.name())
}

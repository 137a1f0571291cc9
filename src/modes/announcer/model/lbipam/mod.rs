//! Cilium LB-IPAM (the operator's `lbipam` cell), as far as it decides a Service's IPs.
//!
//! Read in cilium/cilium `operator/pkg/lbipam/lbipam.go` at `079d9740ae` (function names
//! below are upstream's) and `service_store.go` at `05af5c5fc7` (`isSatisfied`, `svcLabels`;
//! `isCompatible` changed over the releases, so its rules come from the announcer's
//! per-release table `SharingRules` in `sharing.rs`). The version quirks ([`Quirks`]) follow
//! the research notes §7 (read at the release-branch points 1.15–1.19) and the cited issues;
//! the mechanisms of the restart race (cilium/cilium#43131) and of pool edits
//! (cilium/cilium#40358) were not read in code and are modelled by their reported effect.
//! Simplifications: Go map iteration (random upstream) is
//! key order inside one handler, while which handler runs first is left to the explorer;
//! `AllocAny` hands out the lowest free address; the `IPAMRequestSatisfied` condition is not
//! modelled (a patch that only changes it changes no IP); IP families come from the IPs the
//! Service shows (no `ipFamilies`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::state::{CPool, SvcKey, cilium_labels, ip_of};

mod pools;
mod rules;

pub use rules::{Ctx, Quirks};

/// A status write: the Service and its new `status.loadBalancer.ingress` IPs.
pub type Patch = (SvcKey, Vec<IpAddr>);

/// Where LB-IPAM is in its life cycle (`Run` / `initialize` in lbipam.go).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Mode {
    /// No pool yet: `initialize` waits for the first pool event and lists no Service.
    Dormant,
    /// The operator is not running (scaled to 0 while a transition is applied); it lists
    /// everything when it starts. `was_active`: it had pools before it stopped.
    Stopped {
        /// LB-IPAM had pools (and allocations) before it stopped.
        was_active: bool,
    },
    /// `initialize` saw a pool and revalidates the Services it listed (`revalidateAllServices`
    /// after the Service informer's sync); pool events wait until this is done.
    Initializing {
        /// Services not revalidated yet.
        pending: BTreeSet<SvcKey>,
        /// Restart of a release that may re-allocate IPs of Services that request none
        /// ([`Quirks::restart_reallocates`]).
        stale: bool,
    },
    /// The main loop: pool and Service events, from two queues, interleaved.
    Active,
}

/// What LB-IPAM holds for one Service (`ServiceView`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct View {
    /// `AllocatedIPs`: IP and origin pool.
    pub allocated: Vec<(IpAddr, String)>,
    /// `Status`: the status as last read or written by LB-IPAM (its status patch replaces
    /// `/status` with this, however stale).
    pub status: Vec<IpAddr>,
}

/// LB-IPAM's in-memory state and its two event queues.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LbIpam {
    /// Life cycle.
    pub mode: Mode,
    /// Pools seen, with the order their ranges entered `rangesStore.ranges`.
    pub pools: BTreeMap<String, (CPool, u64)>,
    /// Next range order.
    pub seq: u64,
    /// Pools marked `cilium.io/PoolConflict` (their ranges `internallyDisabled`).
    pub conflicting: BTreeSet<String>,
    /// Allocated IPs: origin pool and the Services sharing the IP, in join order.
    pub alloc: BTreeMap<IpAddr, (String, Vec<SvcKey>)>,
    /// Service views.
    pub views: BTreeMap<SvcKey, View>,
    /// `rangesStore` sharing-key index: the IPs registered for a key, in order.
    pub key_index: BTreeMap<String, Vec<IpAddr>>,
    /// Pool events not handled yet (an informer queue: one entry per object).
    pub pool_queue: BTreeSet<String>,
    /// Service events not handled yet.
    pub svc_queue: BTreeSet<SvcKey>,
}

fn is_v6(ip: &IpAddr) -> bool {
    ip.is_ipv6()
}

impl LbIpam {
    /// LB-IPAM before any pool exists.
    pub fn dormant() -> LbIpam {
        LbIpam {
            mode: Mode::Dormant,
            pools: BTreeMap::new(),
            seq: 0,
            conflicting: BTreeSet::new(),
            alloc: BTreeMap::new(),
            views: BTreeMap::new(),
            key_index: BTreeMap::new(),
            pool_queue: BTreeSet::new(),
            svc_queue: BTreeSet::new(),
        }
    }

    /// LB-IPAM as it stands in a live cluster: with pools it is active, has settled
    /// conflicts (keeping the live `PoolConflict` marks) and has imported every status IP it
    /// can. The live snapshot is taken as settled: no status is changed here.
    pub fn from_live(cx: &Ctx<'_>) -> LbIpam {
        let mut ipam = LbIpam::dormant();
        if cx.cluster.cilium_pools.is_empty() {
            return ipam;
        }
        ipam.mode = Mode::Active;
        ipam.add_all_pools(cx);
        ipam.conflicting = cx.cluster.conflicting.clone();
        ipam.settle();
        for key in cx.cluster.services.keys() {
            if cx.responsible(key) {
                let status = cx.cluster.services[key].status.clone();
                ipam.views.insert(key.clone(), View::default());
                ipam.view(key).status = status.clone();
                ipam.strip_or_import(cx, key);
                ipam.view(key).status = status;
            }
        }
        ipam
    }

    fn view(&mut self, key: &SvcKey) -> &mut View {
        self.views.entry(key.clone()).or_default()
    }

    /// Every pool of the cluster, in creation order (the order their events were first
    /// delivered, so the order of `rangesStore.ranges`).
    fn add_all_pools(&mut self, cx: &Ctx<'_>) {
        let mut pools: Vec<(&String, &CPool)> = cx.cluster.cilium_pools.iter().collect();
        pools.sort_by_key(|(n, p)| (p.created, n.as_str()));
        for (name, pool) in pools {
            self.add_pool(name, pool);
        }
    }

    fn add_pool(&mut self, name: &str, pool: &CPool) {
        self.pools.insert(name.to_owned(), (pool.clone(), self.seq));
        self.seq += 1;
    }

    /// Pools in `rangesStore.ranges` order whose ranges are enabled (not `spec.disabled`, not
    /// Conflicting: `LBRange.Disabled()`).
    fn enabled_pools(&self) -> Vec<(&String, &CPool)> {
        let mut v: Vec<(&String, &CPool, u64)> = self
            .pools
            .iter()
            .filter(|(n, (p, _))| !p.disabled && !self.conflicting.contains(*n))
            .map(|(n, (p, s))| (n, p, *s))
            .collect();
        v.sort_by_key(|(_, _, s)| *s);
        v.into_iter().map(|(n, p, _)| (n, p)).collect()
    }

    /// `findRangeOfIP`: the first enabled range holding `ip` whose pool selects the Service
    /// (disabled ranges are skipped, so a Conflicting pool never imports).
    fn range_of(&self, cx: &Ctx<'_>, key: &SvcKey, ip: IpAddr) -> Option<String> {
        let labels = cilium_labels(key, cx.spec(key)?);
        self.enabled_pools()
            .into_iter()
            .find(|(_, p)| p.blocks.iter().any(|b| b.allows(ip)) && p.selector.matches(&labels))
            .map(|(n, _)| n.clone())
    }

    fn register_key(&mut self, cx: &Ctx<'_>, key: &SvcKey, ip: IpAddr) {
        let k = cx.spec(key).map(|s| cx.q.sharing_key(s)).unwrap_or("");
        if !k.is_empty() {
            let ips = self.key_index.entry(k.to_owned()).or_default();
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
    }

    /// Drops `key` from the holders of `ip`; frees the IP (and its sharing-key entry) when
    /// nobody is left (`releaseAllocIP` in `stripInvalidAllocations`, `handleDeletedService`).
    fn release(&mut self, key: &SvcKey, ip: IpAddr) {
        self.view(key).allocated.retain(|(a, _)| *a != ip);
        let Some((_, holders)) = self.alloc.get_mut(&ip) else {
            return;
        };
        holders.retain(|k| k != key);
        if holders.is_empty() {
            self.alloc.remove(&ip);
            for ips in self.key_index.values_mut() {
                ips.retain(|i| *i != ip);
            }
            self.key_index.retain(|_, ips| !ips.is_empty());
        }
    }

    fn join(&mut self, key: &SvcKey, ip: IpAddr, pool: &str) {
        let entry = self
            .alloc
            .entry(ip)
            .or_insert_with(|| (pool.to_owned(), Vec::new()));
        if !entry.1.contains(key) {
            entry.1.push(key.clone());
        }
        let pool = entry.0.clone();
        let view = self.view(key);
        if !view.allocated.iter().any(|(a, _)| *a == ip) {
            view.allocated.push((ip, pool));
        }
    }

    fn compatible_with_holders(&self, cx: &Ctx<'_>, key: &SvcKey, ip: IpAddr) -> bool {
        self.alloc
            .get(&ip)
            .is_some_and(|(_, hs)| hs.iter().all(|h| h == key || cx.compatible(h, key)))
    }

    /// `stripInvalidAllocations`: allocations whose pool is gone, whose pool no longer selects
    /// the Service, whose sharing group is no longer compatible, or that the Service no
    /// longer requests.
    fn strip_invalid(&mut self, cx: &Ctx<'_>, key: &SvcKey) {
        let Some(spec) = cx.spec(key) else { return };
        let labels = cilium_labels(key, spec);
        let requested = cx.q.requested(spec);
        let allocated = self.view(key).allocated.clone();
        for (ip, pool) in allocated.into_iter().rev() {
            let pool_ok = self
                .pools
                .get(&pool)
                .is_some_and(|(p, _)| p.selector.matches(&labels));
            let shared_ok = self.compatible_with_holders(cx, key, ip);
            let requested_ok = requested.is_empty() || requested.contains(&ip);
            if !(pool_ok && shared_ok && requested_ok) {
                self.release(key, ip);
            }
        }
    }

    /// `stripOrImportIngresses`: keeps ingress IPs LB-IPAM allocated; imports the others when
    /// requested (if the Service requests any) and inside an enabled range whose pool selects
    /// the Service; drops the rest. An import that finds the IP allocated drops it (it is
    /// re-added if the Service can share it) — unless [`Quirks::import_shares`].
    fn strip_or_import(&mut self, cx: &Ctx<'_>, key: &SvcKey) -> bool {
        let Some(spec) = cx.spec(key) else {
            return false;
        };
        let requested = cx.q.requested(spec);
        let has_key = !cx.q.sharing_key(spec).is_empty();
        let status = self.view(key).status.clone();
        let mut kept: Vec<IpAddr> = Vec::new();
        for ip in status.iter().copied() {
            if kept.contains(&ip) {
                continue;
            }
            if self.view(key).allocated.iter().any(|(a, _)| *a == ip) {
                kept.push(ip);
                continue;
            }
            if !requested.is_empty() && !requested.contains(&ip) {
                continue;
            }
            let Some(pool) = self.range_of(cx, key, ip) else {
                continue;
            };
            if self.alloc.contains_key(&ip) {
                let shares =
                    cx.q.import_shares && has_key && self.compatible_with_holders(cx, key, ip);
                if !shares {
                    continue;
                }
            }
            self.join(key, ip, &pool);
            if !cx.q.import_skips_key {
                self.register_key(cx, key, ip);
            }
            kept.push(ip);
        }
        let modified = kept != status;
        self.view(key).status = kept;
        modified
    }

    /// `isSatisfied`: every requested IP is in the status, or (no request) the status has
    /// an address of each requested family (IPv4 unless the Service only knows IPv6).
    fn satisfied(&self, cx: &Ctx<'_>, key: &SvcKey) -> bool {
        let (Some(spec), Some(view)) = (cx.spec(key), self.views.get(key)) else {
            return true;
        };
        let requested = cx.q.requested(spec);
        if !requested.is_empty() {
            return requested.iter().all(|r| view.status.contains(r));
        }
        let (v4, v6) = families(&requested, &view.status);
        let has_v4 = view.status.iter().any(|i| !is_v6(i));
        let has_v6 = view.status.iter().any(is_v6);
        (has_v4 || !v4) && (has_v6 || !v6)
    }

    /// `satisfyService`: specific or generic requests, then every allocated IP missing from
    /// the status is appended (and registered under the sharing key).
    fn satisfy(&mut self, cx: &Ctx<'_>, key: &SvcKey) -> bool {
        let Some(spec) = cx.spec(key) else {
            return false;
        };
        let requested = cx.q.requested(spec);
        if requested.is_empty() {
            self.satisfy_generic(cx, key);
        } else {
            self.satisfy_specific(cx, key, &requested);
        }
        let mut modified = false;
        for (ip, _) in self.view(key).allocated.clone() {
            if !self.view(key).status.contains(&ip) {
                self.view(key).status.push(ip);
                self.register_key(cx, key, ip);
                modified = true;
            }
        }
        modified
    }

    /// `satisfySpecificIPRequests`: each requested IP from the range holding it; an IP held by
    /// others is joined only with a sharing key and when compatible with every holder.
    fn satisfy_specific(&mut self, cx: &Ctx<'_>, key: &SvcKey, requested: &[IpAddr]) {
        let has_key = cx
            .spec(key)
            .is_some_and(|s| !cx.q.sharing_key(s).is_empty());
        for &ip in requested {
            if self.view(key).allocated.iter().any(|(a, _)| *a == ip) {
                continue;
            }
            let Some(pool) = self.range_of(cx, key, ip) else {
                continue;
            };
            if self.alloc.contains_key(&ip)
                && !(has_key && self.compatible_with_holders(cx, key, ip))
            {
                continue;
            }
            self.join(key, ip, &pool);
        }
    }

    /// `satisfyGenericIPv4Requests` (and its IPv6 twin): with a sharing key, the FIRST IP of
    /// the key whose holders are all compatible; otherwise `allocateIPAddress`.
    fn satisfy_generic(&mut self, cx: &Ctx<'_>, key: &SvcKey) {
        let Some(spec) = cx.spec(key) else { return };
        let status = self.view(key).status.clone();
        let (v4, v6) = families(&[], &status);
        for want_v6 in [false, true] {
            let wanted = if want_v6 { v6 } else { v4 };
            let has = self
                .view(key)
                .allocated
                .iter()
                .any(|(a, _)| is_v6(a) == want_v6);
            if !wanted || has {
                continue;
            }
            let k = cx.q.sharing_key(spec);
            let shared = self
                .key_index
                .get(k)
                .into_iter()
                .flatten()
                .copied()
                .find(|ip| {
                    is_v6(ip) == want_v6
                        && self.alloc.get(ip).is_some_and(|(_, h)| !h.is_empty())
                        && self.compatible_with_holders(cx, key, *ip)
                });
            let pick = match shared.filter(|_| !k.is_empty()) {
                Some(ip) => self.alloc.get(&ip).map(|(p, _)| (ip, p.clone())),
                None => self.allocate_any(cx, key, want_v6),
            };
            if let Some((ip, pool)) = pick {
                self.join(key, ip, &pool);
            }
        }
    }

    /// `allocateIPAddress`: the first enabled range of the family whose pool selects the
    /// Service, lowest free address first.
    fn allocate_any(&self, cx: &Ctx<'_>, key: &SvcKey, v6: bool) -> Option<(IpAddr, String)> {
        let labels = cilium_labels(key, cx.spec(key)?);
        for (name, pool) in self.enabled_pools() {
            if !pool.selector.matches(&labels) {
                continue;
            }
            for b in &pool.blocks {
                let family_v6 = b.interval.family == super::super::ipam::Family::V6;
                if family_v6 != v6 {
                    continue;
                }
                // Bounded: a model case has small pools; a /16 is scanned at most once.
                let end = b.interval.end.min(b.interval.start.saturating_add(1 << 16));
                for v in b.interval.start..=end {
                    let ip = ip_of(b.interval.family, v);
                    if b.allows(ip) && !self.alloc.contains_key(&ip) {
                        return Some((ip, name.clone()));
                    }
                }
            }
        }
        None
    }

    /// One Service's handler (`handleUpsertService`, non-init; `revalidateAllServices` does
    /// the same per Service). Returns the status patch, if any.
    pub fn reconcile(&mut self, cx: &Ctx<'_>, key: &SvcKey) -> Option<Patch> {
        let Some(svc) = cx.cluster.services.get(key) else {
            self.drop_service(key);
            return None;
        };
        if !cx.responsible(key) {
            // "we were responsible before, but not anymore": release, clear the ingress.
            return self.views.contains_key(key).then(|| {
                self.drop_service(key);
                (key.clone(), Vec::new())
            });
        }
        self.view(key).status = svc.status.clone();
        self.revalidate(cx, key)
    }

    /// `revalidateAllServices`' per-Service step on the stored view (its status as LB-IPAM
    /// last saw it): `stripInvalidAllocations`, `stripOrImportIngresses`, `satisfyService`.
    fn revalidate(&mut self, cx: &Ctx<'_>, key: &SvcKey) -> Option<Patch> {
        self.strip_invalid(cx, key);
        let mut modified = self.strip_or_import(cx, key);
        if !self.satisfied(cx, key) {
            modified |= self.satisfy(cx, key);
        }
        modified.then(|| (key.clone(), self.view(key).status.clone()))
    }

    /// A restart race of releases with [`Quirks::restart_reallocates`]: the Service is
    /// revalidated as if its status were empty, so a Service that requests no IP gets the
    /// first free one (cilium/cilium#43131; the mechanism is approximated, the effect is the
    /// issue's).
    pub fn reconcile_stale(&mut self, cx: &Ctx<'_>, key: &SvcKey) -> Option<Patch> {
        let old = cx.cluster.services.get(key)?.status.clone();
        self.view(key).status = Vec::new();
        self.strip_invalid(cx, key);
        self.satisfy(cx, key);
        let new = self.view(key).status.clone();
        (new != old).then(|| (key.clone(), new))
    }

    fn drop_service(&mut self, key: &SvcKey) {
        for (ip, _) in self.view(key).allocated.clone() {
            self.release(key, ip);
        }
        self.views.remove(key);
    }

    /// `satisfyServices`: every unsatisfied Service, in key order.
    fn satisfy_all(&mut self, cx: &Ctx<'_>) -> Vec<Patch> {
        let keys: Vec<SvcKey> = self.views.keys().cloned().collect();
        let mut patches = Vec::new();
        for k in keys {
            if !self.satisfied(cx, &k) && self.satisfy(cx, &k) {
                patches.push((k.clone(), self.view(&k).status.clone()));
            }
        }
        patches
    }

    /// `settleConflicts`: of two overlapping pools the newer is marked Conflicting (its ranges
    /// disabled); marked pools that overlap nothing any more are unmarked.
    pub fn settle(&mut self) {
        let names: Vec<String> = self.pools.keys().cloned().collect();
        for outer in &names {
            if self.conflicting.contains(outer) {
                continue;
            }
            for inner in &names {
                if inner == outer || self.conflicting.contains(inner) {
                    continue;
                }
                if self.overlap(outer, inner) {
                    let (po, pi) = (&self.pools[outer].0, &self.pools[inner].0);
                    let newer = if (po.created, outer) < (pi.created, inner) {
                        inner
                    } else {
                        outer
                    };
                    self.conflicting.insert(newer.clone());
                    break;
                }
            }
        }
        let marked: Vec<String> = self.conflicting.iter().cloned().collect();
        for outer in marked {
            if !self.pools.contains_key(&outer)
                || !names.iter().any(|n| *n != outer && self.overlap(&outer, n))
            {
                self.conflicting.remove(&outer);
            }
        }
    }

    fn overlap(&self, a: &str, b: &str) -> bool {
        let (Some((pa, _)), Some((pb, _))) = (self.pools.get(a), self.pools.get(b)) else {
            return false;
        };
        pa.blocks.iter().any(|x| {
            pb.blocks.iter().any(|y| {
                x.interval.family == y.interval.family
                    && x.interval.start <= y.interval.end
                    && y.interval.start <= x.interval.end
            })
        })
    }
}

/// Requested families: IPv4 unless everything known about the Service is IPv6 (the model
/// has no `ipFamilies`); IPv6 when anything is.
fn families(requested: &[IpAddr], status: &[IpAddr]) -> (bool, bool) {
    let all: Vec<&IpAddr> = requested.iter().chain(status).collect();
    let v6 = all.iter().any(|i| is_v6(i));
    let v4 = all.is_empty() || all.iter().any(|i| !is_v6(i));
    (v4, v6)
}

#[cfg(test)]
mod tests;

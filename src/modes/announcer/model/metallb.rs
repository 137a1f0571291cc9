//! MetalLB's controller (IP allocation) and speaker (who answers ARP for an IP).
//!
//! Controller: read in metallb/metallb `controller/service.go` at `009c6a6fca`
//! (`convergeBalancer`, `clearServiceState`, `allocateIPs`, `getDesiredLbIPs`) and
//! `controller/main.go` `SetBalancer` (the version whose `convergeBalancer` returns an error
//! writes the cleared status even when convergence fails; the research notes §7 read the same
//! in v0.16.1). The allocator (`internal/allocator`: `Assign`, `AllocateFromPool`,
//! `Allocate`) is modelled from those call sites, not re-read. Speaker: `speakersForPool` and
//! `ShouldAnnounce` (v0.15.3, since v0.14.0) as the research notes §7 record them.
//! Simplified: sharing (`checkSharing`) is "same `allow-shared-ip` key, no common port and
//! protocol, same selector under `Local`" (MetalLB compares backends by endpoints); the
//! `ip-allocated-from-pool` annotation is not written; IP families are not checked; and
//! `externalTrafficPolicy: Local`'s endpoint filter on announcing nodes is not modelled (no
//! endpoints in the model).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::read::mlb_allows;
use super::state::{Cluster, MlbPool, ServiceSpec, SvcKey, ip_list, ip_of};

/// The label MetalLB's speaker skips nodes by (and Cilium's L2 announcer ignores).
pub const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";
/// MetalLB's own `loadBalancerClass`.
const METALLB_CLASS: &str = "metallb.io/metallb";

/// The controller's allocator and its work queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct MetalLb {
    /// Allocations: pool and IPs per Service.
    pub assigned: BTreeMap<SvcKey, (String, Vec<IpAddr>)>,
    /// Services to converge.
    pub dirty: BTreeSet<SvcKey>,
}

fn annotation<'a>(spec: &'a ServiceSpec, suffix: &str) -> Option<&'a str> {
    let stable = format!("metallb.io/{suffix}");
    let deprecated = format!("metallb.universe.tf/{suffix}");
    spec.annotation(&[&stable, &deprecated])
}

/// `getDesiredLbIPs`: `metallb.io/loadBalancerIPs`, else `spec.loadBalancerIP`.
pub fn desired_ips(spec: &ServiceSpec) -> Vec<IpAddr> {
    annotation(spec, "loadBalancerIPs")
        .or(spec.lb_ip.as_deref())
        .map(ip_list)
        .unwrap_or_default()
}

fn sharing_key(spec: &ServiceSpec) -> &str {
    annotation(spec, "allow-shared-ip").unwrap_or("")
}

/// `serviceAllocation`: namespaces and service selectors admit the Service.
fn admits(pool: &MlbPool, key: &SvcKey, spec: &ServiceSpec) -> bool {
    (pool.namespaces.is_empty() || pool.namespaces.contains(&key.namespace))
        && (pool.service_selectors.is_empty()
            || pool
                .service_selectors
                .iter()
                .any(|s| s.matches(&spec.labels)))
}

impl MetalLb {
    /// The controller as it stands in a live cluster: every valid status IP assigned.
    pub fn from_live(cluster: &Cluster) -> MetalLb {
        let mut m = MetalLb::default();
        for (key, svc) in &cluster.services {
            if !svc.status.is_empty() {
                let _ = m.assign(cluster, key, &svc.status);
            }
        }
        m
    }

    /// Another Service holds `ip` and may not share it (`checkSharing`): sharing needs the
    /// same `allow-shared-ip` key, no port used by both with the same protocol, and, for
    /// `externalTrafficPolicy: Local`, the same selector on both.
    fn in_use(&self, cluster: &Cluster, key: &SvcKey, ip: IpAddr) -> bool {
        let Some(mine) = cluster.services.get(key).map(|s| &s.spec) else {
            return true;
        };
        let may_share = |other: &ServiceSpec| {
            let k = sharing_key(mine);
            let ports_free = !mine.ports.iter().any(|p| other.ports.contains(p));
            let backends = !(mine.etp_local || other.etp_local)
                || (mine.etp_local == other.etp_local && mine.selector == other.selector);
            !k.is_empty() && k == sharing_key(other) && ports_free && backends
        };
        self.assigned.iter().any(|(other, (_, ips))| {
            other != key
                && ips.contains(&ip)
                && cluster
                    .services
                    .get(other)
                    .is_none_or(|s| !may_share(&s.spec))
        })
    }

    /// `Assign`: every IP lies in a pool that admits the Service and is free (or shared
    /// with a compatible Service). The pool is the first IP's.
    fn assign(&mut self, cluster: &Cluster, key: &SvcKey, ips: &[IpAddr]) -> Result<(), ()> {
        let spec = &cluster.services.get(key).ok_or(())?.spec;
        let mut pool = None;
        for &ip in ips {
            let p = cluster
                .mlb_pools
                .iter()
                .find(|(_, p)| mlb_allows(p, ip) && admits(p, key, spec))
                .ok_or(())?;
            pool.get_or_insert(p.0.clone());
            if self.in_use(cluster, key, ip) {
                return Err(());
            }
        }
        self.assigned
            .insert(key.clone(), (pool.ok_or(())?, ips.to_vec()));
        Ok(())
    }

    /// `AllocateFromPool`: the first address of the pool the Service may use.
    fn allocate_from_pool(
        &mut self,
        cluster: &Cluster,
        key: &SvcKey,
        name: &str,
    ) -> Option<IpAddr> {
        let pool = cluster.mlb_pools.get(name)?;
        // Addresses held by others: only those can refuse the Service (`checkSharing`).
        let held: BTreeSet<IpAddr> = self
            .assigned
            .iter()
            .filter(|(k, _)| *k != key)
            .flat_map(|(_, (_, ips))| ips.iter().copied())
            .collect();
        for r in &pool.ranges {
            let end = r.end.min(r.start.saturating_add(1 << 16));
            for v in r.start..=end {
                let ip = ip_of(r.family, v);
                let free = !held.contains(&ip) || !self.in_use(cluster, key, ip);
                if mlb_allows(pool, ip) && free && self.assign(cluster, key, &[ip]).is_ok() {
                    return Some(ip);
                }
            }
        }
        None
    }

    /// `allocateIPs`: requested IPs, else the `address-pool`, else the auto-assign pools.
    fn allocate(&mut self, cluster: &Cluster, key: &SvcKey) -> Vec<IpAddr> {
        let Some(svc) = cluster.services.get(key) else {
            return Vec::new();
        };
        let desired = desired_ips(&svc.spec);
        if !desired.is_empty() {
            return match self.assign(cluster, key, &desired) {
                Ok(()) => desired,
                Err(()) => Vec::new(),
            };
        }
        if let Some(pool) = annotation(&svc.spec, "address-pool") {
            return self
                .allocate_from_pool(cluster, key, pool)
                .into_iter()
                .collect();
        }
        // `Allocate` tries auto-assign pools by `serviceAllocation.priority` (lower first,
        // pools without one last), then by name.
        let mut auto: Vec<(bool, i64, String)> = cluster
            .mlb_pools
            .iter()
            .filter(|(_, p)| p.auto_assign && admits(p, key, &svc.spec))
            .map(|(n, p)| (p.priority.is_none(), p.priority.unwrap_or(0), n.clone()))
            .collect();
        auto.sort();
        let auto: Vec<String> = auto.into_iter().map(|(_, _, n)| n).collect();
        auto.iter()
            .find_map(|p| self.allocate_from_pool(cluster, key, p))
            .into_iter()
            .collect()
    }

    /// `convergeBalancer` for one Service (controller running). Returns the new status when it
    /// differs: no pool left → status cleared (`clearServiceState`); a status IP the config no
    /// longer allows, another pool or other IPs requested → cleared and allocated again.
    pub fn converge(&mut self, cluster: &Cluster, key: &SvcKey) -> Option<Vec<IpAddr>> {
        self.dirty.remove(key);
        let Some(svc) = cluster.services.get(key) else {
            self.assigned.remove(key);
            return None;
        };
        if svc
            .spec
            .class
            .as_deref()
            .is_some_and(|c| c != METALLB_CLASS)
        {
            return None;
        }
        let mut ips = svc.status.clone();
        if cluster.mlb_pools.is_empty() {
            self.assigned.remove(key);
            ips.clear();
        } else if !ips.is_empty() {
            let desired_pool = annotation(&svc.spec, "address-pool");
            let desired = desired_ips(&svc.spec);
            let same = |a: &[IpAddr], b: &[IpAddr]| {
                a.iter().collect::<BTreeSet<_>>() == b.iter().collect::<BTreeSet<_>>()
            };
            let ok = self.assign(cluster, key, &ips).is_ok()
                && desired_pool.is_none_or(|p| self.assigned.get(key).is_some_and(|a| a.0 == p))
                && (desired.is_empty() || same(&ips, &desired));
            if !ok {
                self.assigned.remove(key);
                ips.clear();
            }
        }
        if ips.is_empty() && !cluster.mlb_pools.is_empty() {
            self.assigned.remove(key);
            ips = self.allocate(cluster, key);
        }
        (ips != svc.status).then_some(ips)
    }
}

/// The nodes MetalLB's speaker may answer ARP for `ip` from (the candidates of its per-IP
/// election): the speaker runs; the IP lies in a pool an L2Advertisement covers (by name, by
/// pool selector, or all pools when it names none); the node matches one of the
/// advertisement's `nodeSelectors` (none = all) and is not excluded by `speakersForPool`
/// (label [`EXCLUDE_LABEL`], condition `NetworkUnavailable`, no speaker pod).
/// `assume_running`: as if the speaker ran (for the baseline of where MetalLB announced).
pub fn announcers(cluster: &Cluster, ip: IpAddr, assume_running: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if !(cluster.flags.metallb_speaker || assume_running) {
        return out;
    }
    for (name, pool) in &cluster.mlb_pools {
        if !mlb_allows(pool, ip) {
            continue;
        }
        for advert in cluster.adverts.values() {
            let covers = (advert.pools.is_empty() && advert.pool_selectors.is_empty())
                || advert.pools.contains(name)
                || advert
                    .pool_selectors
                    .iter()
                    .any(|s| s.matches(&pool.labels));
            if !covers {
                continue;
            }
            for node in &cluster.nodes {
                let eligible = node.speaker_pod
                    && !node.network_unavailable
                    && !node.labels.contains_key(EXCLUDE_LABEL);
                let selected = advert.node_selectors.is_empty()
                    || advert
                        .node_selectors
                        .iter()
                        .any(|s| s.matches(&node.labels));
                if eligible && selected {
                    out.insert(node.name.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    /// `convergeBalancer`: a valid status IP is kept; with no pool left the status is
    /// cleared; when the Service's pool is deleted it is re-allocated into the remaining
    /// auto-assign pools.
    #[test]
    fn converge_keeps_clears_and_reallocates() {
        let mut c = empty();
        mpool(&mut c, "a", "10.0.0.0", "10.0.0.15", true);
        mpool(&mut c, "b", "10.0.1.0", "10.0.1.15", true);
        service(&mut c, "s", 80, &[], &["10.0.1.5"]);
        let mut m = MetalLb::from_live(&c);
        assert_eq!(m.converge(&c, &key("s")), None);
        c.mlb_pools.remove("b");
        assert_eq!(m.converge(&c, &key("s")), Some(vec![ip("10.0.0.0")]));
        c.mlb_pools.remove("a");
        assert_eq!(m.converge(&c, &key("s")), Some(vec![]));
    }

    /// A status IP another controller wrote is accepted when MetalLB's config allows it and
    /// it is free (`Assign`), refused (and re-allocated) when outside every pool; a requested
    /// IP (`metallb.io/loadBalancerIPs`) is what it allocates.
    #[test]
    fn foreign_status_ip_and_requested_ips() {
        let mut c = empty();
        mpool(&mut c, "a", "10.0.0.0", "10.0.0.15", true);
        service(&mut c, "s", 80, &[], &["10.0.0.9"]);
        service(
            &mut c,
            "r",
            81,
            &[("metallb.io/loadBalancerIPs", "10.0.0.7")],
            &[],
        );
        let mut m = MetalLb::default();
        assert_eq!(m.converge(&c, &key("s")), None);
        c.services.get_mut(&key("s")).unwrap().status = vec![ip("10.9.9.9")];
        assert_eq!(m.converge(&c, &key("s")), Some(vec![ip("10.0.0.0")]));
        assert_eq!(m.converge(&c, &key("r")), Some(vec![ip("10.0.0.7")]));
    }

    /// `Allocate` prefers the auto-assign pool with the lowest priority; a second Service
    /// joins an IP of its `allow-shared-ip` key unless a port clashes.
    #[test]
    fn priority_and_sharing() {
        let mut c = empty();
        mpool(&mut c, "a", "10.0.0.0", "10.0.0.15", true);
        mpool(&mut c, "b", "10.0.1.0", "10.0.1.15", true);
        c.mlb_pools.get_mut("b").unwrap().priority = Some(1);
        let share = [("metallb.io/allow-shared-ip", "k")];
        service(&mut c, "x", 80, &share, &[]);
        service(&mut c, "y", 443, &share, &[]);
        service(&mut c, "z", 80, &share, &[]);
        let mut m = MetalLb::default();
        for name in ["x", "y", "z"] {
            let st = m.converge(&c, &key(name)).unwrap();
            c.services.get_mut(&key(name)).unwrap().status = st;
        }
        let st = |n: &str| c.services[&key(n)].status.clone();
        assert_eq!(st("x"), vec![ip("10.0.1.0")]);
        assert_eq!(st("y"), vec![ip("10.0.1.0")]);
        assert_eq!(st("z"), vec![ip("10.0.1.1")]);
    }

    /// `speakersForPool`: nodes labelled to be excluded, with `NetworkUnavailable` or without
    /// a speaker pod do not announce; a stopped speaker announces nothing.
    #[test]
    fn speaker_candidates() {
        let mut c = empty();
        mpool(&mut c, "a", "10.0.0.0", "10.0.0.15", true);
        advert_all(&mut c);
        node(&mut c, "cp", &[(EXCLUDE_LABEL, "")]);
        node(&mut c, "w1", &[]);
        node(&mut c, "w2", &[]);
        node(&mut c, "w3", &[]);
        c.nodes[2].network_unavailable = true;
        c.nodes[3].speaker_pod = false;
        let nodes = announcers(&c, ip("10.0.0.5"), false);
        assert_eq!(nodes.into_iter().collect::<Vec<_>>(), vec!["w1".to_owned()]);
        assert!(announcers(&c, ip("10.9.0.5"), false).is_empty());
        c.flags.metallb_speaker = false;
        assert!(announcers(&c, ip("10.0.0.5"), false).is_empty());
        assert_eq!(announcers(&c, ip("10.0.0.5"), true).len(), 1);
    }
}

//! The safety properties checked in every intermediate state of a transition, as named
//! predicates over the cluster ([`check`]) against a [`Baseline`] taken from the live snapshot.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

use super::explore::Event;
use super::l2announcer;
use super::metallb;
use super::state::{Cluster, SvcKey};

/// Which property a state breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    /// (a) A Service's status IPs are those of the live snapshot (a Service without an IP
    /// live is exempt): none changes, none disappears, none is added.
    IpKept,
    /// (b) No IP is announced by MetalLB's speaker and Cilium's L2 announcer at once.
    OneAnnouncer,
    /// (c) An IP MetalLB's configuration announced live is answered by someone, unless the
    /// transition may leave it unannounced (the ARP window).
    Announced,
    /// (d) Cilium announces an IP from no node MetalLB would not have announced it from.
    NoNewNode,
}

impl Invariant {
    /// Every invariant.
    pub const ALL: [Invariant; 4] = [
        Invariant::IpKept,
        Invariant::OneAnnouncer,
        Invariant::Announced,
        Invariant::NoNewNode,
    ];
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::IpKept => "ip-kept",
            Invariant::OneAnnouncer => "one-announcer",
            Invariant::Announced => "announced",
            Invariant::NoNewNode => "no-new-node",
        }
    }
}

/// One broken invariant in one state, without the events that led there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The property.
    pub invariant: Invariant,
    /// The Service.
    pub service: SvcKey,
    /// The IP concerned.
    pub ip: Option<IpAddr>,
    /// What the state shows.
    pub detail: String,
}

/// A broken invariant and the shortest event sequence found that leads there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// What broke.
    pub finding: Finding,
    /// Events from the live state, in order.
    pub trace: Vec<Event>,
}

impl Violation {
    /// The property.
    pub fn invariant(&self) -> Invariant {
        self.finding.invariant
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ip = self.finding.ip.map(|i| format!(" {i}")).unwrap_or_default();
        writeln!(
            f,
            "{}: Service {}{ip}: {}",
            self.finding.invariant.name(),
            self.finding.service,
            self.finding.detail
        )?;
        if self.trace.is_empty() {
            return write!(f, "  in the live state itself");
        }
        write!(f, "  after {} events:", self.trace.len())?;
        for (i, e) in self.trace.iter().enumerate() {
            write!(f, "\n  {}. {e}", i + 1)?;
        }
        Ok(())
    }
}

/// What the live snapshot says, for comparison.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// Status IPs of the Services that have one.
    pub status: BTreeMap<SvcKey, Vec<IpAddr>>,
    /// Per live IP, the nodes MetalLB's speaker would announce it from (as if it ran: after
    /// `stop-speaker` this is where it announced before).
    pub metallb_nodes: BTreeMap<IpAddr, BTreeSet<String>>,
}

impl Baseline {
    /// The baseline of a live cluster.
    pub fn of(live: &Cluster) -> Baseline {
        let status: BTreeMap<SvcKey, Vec<IpAddr>> = live
            .services
            .iter()
            .filter(|(_, s)| !s.status.is_empty())
            .map(|(k, s)| (k.clone(), s.status.clone()))
            .collect();
        let metallb_nodes = status
            .values()
            .flatten()
            .map(|ip| (*ip, metallb::announcers(live, *ip, true)))
            .collect();
        Baseline {
            status,
            metallb_nodes,
        }
    }
}

fn list(ips: &[IpAddr]) -> String {
    let v: Vec<String> = ips.iter().map(ToString::to_string).collect();
    format!("[{}]", v.join(", "))
}

/// Every broken invariant of a state.
pub fn check(base: &Baseline, cluster: &Cluster, may_leave_unannounced: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    for (key, live) in &base.status {
        let now = cluster
            .services
            .get(key)
            .map(|s| s.status.clone())
            .unwrap_or_default();
        let same = live.iter().collect::<BTreeSet<_>>() == now.iter().collect::<BTreeSet<_>>();
        if !same {
            let gone = live.iter().find(|ip| !now.contains(ip)).copied();
            out.push(Finding {
                invariant: Invariant::IpKept,
                service: key.clone(),
                ip: gone.or(live.first().copied()),
                detail: format!("status is {}, live it was {}", list(&now), list(live)),
            });
        }
    }
    for (key, svc) in &cluster.services {
        let cilium = l2announcer::announcers(cluster, key);
        for ip in &svc.status {
            let mlb = metallb::announcers(cluster, *ip, false);
            let mut finding = |invariant, detail: String| {
                out.push(Finding {
                    invariant,
                    service: key.clone(),
                    ip: Some(*ip),
                    detail,
                })
            };
            if !mlb.is_empty() && !cilium.is_empty() {
                finding(
                    Invariant::OneAnnouncer,
                    format!("MetalLB may answer from {mlb:?} and Cilium from {cilium:?}"),
                );
            }
            let live_nodes = base.metallb_nodes.get(ip);
            let was_announced = live_nodes.is_some_and(|n| !n.is_empty());
            let kept = base.status.get(key).is_some_and(|l| l.contains(ip));
            if kept
                && was_announced
                && mlb.is_empty()
                && cilium.is_empty()
                && !may_leave_unannounced
            {
                finding(Invariant::Announced, "nobody answers ARP for it".into());
            }
            if let Some(live_nodes) = live_nodes.filter(|n| !n.is_empty()) {
                let new: BTreeSet<&String> = cilium.difference(live_nodes).collect();
                if !new.is_empty() {
                    finding(
                        Invariant::NoNewNode,
                        format!("Cilium may answer from {new:?}, where MetalLB never did"),
                    );
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

    fn names(f: &[Finding]) -> Vec<Invariant> {
        f.iter().map(|f| f.invariant).collect()
    }

    /// Each invariant on a state that breaks it and one that does not.
    #[test]
    fn each_invariant() {
        let mut c = empty();
        mpool(&mut c, "a", "10.0.0.0", "10.0.0.15", true);
        advert_all(&mut c);
        node(&mut c, "cp", &[(super::super::metallb::EXCLUDE_LABEL, "")]);
        node(&mut c, "w1", &[]);
        service(&mut c, "s", 80, &[], &["10.0.0.5"]);
        service(&mut c, "none", 81, &[], &[]);
        let base = Baseline::of(&c);
        assert!(check(&base, &c, false).is_empty());
        // (b) and (d): Cilium announces from both nodes while the speaker runs.
        policy(&mut c, "all", None);
        c.flags.l2_announcements = true;
        let f = check(&base, &c, false);
        assert_eq!(
            names(&f),
            vec![Invariant::OneAnnouncer, Invariant::NoNewNode]
        );
        // (c): nobody announces; allowed inside the ARP window only.
        c.flags.l2_announcements = false;
        c.flags.metallb_speaker = false;
        assert_eq!(names(&check(&base, &c, false)), vec![Invariant::Announced]);
        assert!(check(&base, &c, true).is_empty());
        // (a): the IP changes; a Service without a live IP is exempt.
        c.services.get_mut(&key("s")).unwrap().status = vec![ip("10.0.0.6")];
        c.services.get_mut(&key("none")).unwrap().status = vec![ip("10.0.0.7")];
        let f = check(&base, &c, true);
        assert_eq!(names(&f), vec![Invariant::IpKept]);
        assert_eq!(f[0].ip, Some(ip("10.0.0.5")));
    }
}

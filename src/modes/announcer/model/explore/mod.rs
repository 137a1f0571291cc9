//! The explorer: every order in which a transition's changes and the controllers' reactions
//! can interleave, with the invariants checked in every state reached.
//!
//! A breadth-first search over states (deduplicated by a hash of the whole state) is exhaustive
//! while the state count stays under [`Options::max_states`], and gives the shortest event
//! sequence to each violation. Above the bound it switches to [`Options::walks`] random walks
//! from a seeded generator (same input and seed, same result), and says so in
//! [`Report::exhaustive`].

mod changes;
mod shrink;
mod visit;

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;

use serde_yaml::Value;

pub use changes::{Change, ObjRef, Stage};

use super::super::version::CiliumVersion;
use super::invariants::{self, Baseline, Finding, Invariant, Violation};
use super::lbipam::{Ctx, LbIpam, Mode, Quirks};
use super::metallb::MetalLb;
use super::read::{Snapshot, snapshot};
use super::state::{Cluster, SvcKey};
pub use visit::Visited;

/// One step of an interleaving.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Event {
    /// A change of the transition.
    Change(Change),
    /// LB-IPAM handles the queued event of a pool.
    LbIpamPool(String),
    /// LB-IPAM handles a Service (a queued event, or its revalidation while initializing).
    LbIpamService(SvcKey),
    /// LB-IPAM revalidates a Service in a restart race (releases below 1.18.2).
    LbIpamStaleService(SvcKey),
    /// MetalLB's controller converges a Service.
    MetalLbConverge(SvcKey),
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Change(c) => write!(f, "{c}"),
            Event::LbIpamPool(n) => write!(f, "LB-IPAM handles pool {n}"),
            Event::LbIpamService(k) => write!(f, "LB-IPAM handles Service {k}"),
            Event::LbIpamStaleService(k) => {
                write!(f, "LB-IPAM revalidates Service {k} in a restart race")
            }
            Event::MetalLbConverge(k) => write!(f, "MetalLB controller converges Service {k}"),
        }
    }
}

/// What the caller declares about a transition.
#[derive(Debug, Clone)]
pub struct Options {
    /// The Cilium release.
    pub cilium_version: CiliumVersion,
    /// Cilium's operator is scaled to 0 while the transition's objects are applied and
    /// started afterwards (LB-IPAM then lists every pool at once).
    pub operator_stopped_during_apply: bool,
    /// The transition may leave IPs unannounced (the ARP window between `stop-speaker` and
    /// `cutover`).
    pub may_leave_unannounced: bool,
    /// Services are applied before custom resources (one Kustomization: Flux's kustomize
    /// sort); otherwise any order.
    pub services_first: bool,
    /// States explored exhaustively before switching to random walks.
    pub max_states: usize,
    /// Random walks when the bound is passed.
    pub walks: usize,
    /// Steps per random walk.
    pub max_depth: usize,
    /// Seed of the random walks.
    pub seed: u64,
}

impl Options {
    /// Defaults for a release: any apply order, no ARP window, 20 000 states, then 200
    /// walks of 100 steps from seed 1. A state costs about a millisecond per few dozen
    /// Services in a debug build.
    pub fn new(cilium_version: CiliumVersion) -> Options {
        Options {
            cilium_version,
            operator_stopped_during_apply: false,
            may_leave_unannounced: false,
            services_first: false,
            max_states: 20_000,
            walks: 200,
            max_depth: 100,
            seed: 1,
        }
    }
}

/// One transition: the live state and the previous and next packages.
#[derive(Debug, Clone)]
pub struct Transition {
    live: Snapshot,
    before: Snapshot,
    after: Snapshot,
    changes: Vec<(Change, Stage)>,
    options: Options,
    quirks: Quirks,
}

/// The explored state: the cluster, both controllers' memories and which changes are done.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct World {
    cluster: Cluster,
    lbipam: LbIpam,
    metallb: MetalLb,
    done: Vec<bool>,
}

/// What the exploration found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The transition's changes.
    pub changes: Vec<Change>,
    /// Violations, one per (invariant, Service, IP), each with the shortest sequence found.
    pub violations: Vec<Violation>,
    /// Distinct states visited.
    pub states: usize,
    /// Every order was explored (else: bounded random walks).
    pub exhaustive: bool,
    /// What the invariants say of the [`Transition::settled`] state with no ARP window
    /// allowed: an IP nobody announces once a `cutover` has settled shows here (after
    /// `stop-speaker` it is expected).
    pub after_settling: Vec<Finding>,
}

impl Report {
    /// The violations of one invariant.
    pub fn of(&self, inv: Invariant) -> Vec<&Violation> {
        self.violations
            .iter()
            .filter(|v| v.invariant() == inv)
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.exhaustive {
            "every order"
        } else {
            "bounded random walks"
        };
        writeln!(
            f,
            "{} changes, {} states ({how}), {} violations",
            self.changes.len(),
            self.states,
            self.violations.len()
        )?;
        for v in &self.violations {
            writeln!(f, "{v}")?;
        }
        for x in &self.after_settling {
            writeln!(
                f,
                "once settled, {}: Service {}: {}",
                x.invariant.name(),
                x.service,
                x.detail
            )?;
        }
        Ok(())
    }
}

impl Transition {
    /// A transition from KRM items: the live snapshot, the previous package (what the last
    /// apply left; it decides prunes) and the next one.
    pub fn new(live: &[Value], before: &[Value], after: &[Value], options: Options) -> Transition {
        Transition::from_snapshots(snapshot(live), snapshot(before), snapshot(after), options)
    }

    /// A transition from snapshots already read (e.g. the [`Transition::settled`] state of
    /// the previous phase as the live state of the next).
    pub fn from_snapshots(
        live: Snapshot,
        before: Snapshot,
        after: Snapshot,
        options: Options,
    ) -> Transition {
        let changes = changes::changes(
            &live,
            &before,
            &after,
            options.operator_stopped_during_apply,
        );
        let quirks = Quirks::for_version(&options.cilium_version, live.cluster.protocol_diff);
        Transition {
            live,
            before,
            after,
            changes,
            options,
            quirks,
        }
    }

    /// The cluster once the transition is over, in one order: the changes in their listed
    /// order, the controllers' queued work done after each until they are quiet or repeat a
    /// state (controllers that fight never settle; the fight is cut where it first cycles).
    /// Its processes and Cilium values are the next package's, so it can be the live snapshot
    /// of the next phase.
    pub fn settled(&self) -> Snapshot {
        let w = self.settle();
        Snapshot {
            cluster: w.cluster,
            metallb: self.after.metallb,
            cilium: self.after.cilium.clone().or(self.live.cilium.clone()),
        }
    }

    fn settle(&self) -> World {
        let mut w = self.initial();
        let mut seen: HashSet<u64> = HashSet::new();
        for _ in 0..SETTLE_STEPS {
            let events = self.enabled(&w);
            let reaction = events.iter().find(|e| !matches!(e, Event::Change(_)));
            let cycling = reaction.is_some_and(|e| seen.contains(&fingerprint(&self.step(&w, e))));
            let next = match reaction.filter(|_| !cycling) {
                Some(e) => e,
                None => match events.iter().find(|e| matches!(e, Event::Change(_))) {
                    Some(e) => {
                        seen.clear();
                        e
                    }
                    None => break,
                },
            };
            w = self.step(&w, next);
            seen.insert(fingerprint(&w));
        }
        w
    }

    /// The atomic changes.
    pub fn changes(&self) -> Vec<Change> {
        self.changes.iter().map(|(c, _)| c.clone()).collect()
    }

    /// The live cluster.
    pub fn live(&self) -> &Cluster {
        &self.live.cluster
    }

    fn initial(&self) -> World {
        let cluster = self.live.cluster.clone();
        let cx = Ctx {
            cluster: &cluster,
            q: &self.quirks,
        };
        let mut lbipam = LbIpam::from_live(&cx);
        if self.options.operator_stopped_during_apply {
            lbipam.stop();
        }
        let metallb = MetalLb::from_live(&cluster);
        World {
            done: vec![false; self.changes.len()],
            cluster,
            lbipam,
            metallb,
        }
    }

    /// The events enabled in `w`: changes whose stage is open, and the controllers' queued
    /// work.
    fn enabled(&self, w: &World) -> Vec<Event> {
        let pending = |stage: Stage| {
            self.changes
                .iter()
                .zip(&w.done)
                .any(|((_, s), d)| *s == stage && !d)
        };
        let (applying, pruning) = (pending(Stage::Apply), pending(Stage::Prune));
        let services_pending = self
            .changes
            .iter()
            .zip(&w.done)
            .any(|((c, _), d)| !d && matches!(c, Change::Apply(ObjRef::Service(_))));
        let mut out = Vec::new();
        for ((c, stage), done) in self.changes.iter().zip(&w.done) {
            let open = match stage {
                Stage::Apply => {
                    // Flux's kind order puts Services before every other object of the apply;
                    // a value change takes effect only once its HelmRelease (or Package,
                    // HelmChart, Kustomization, DaemonSet, Deployment) is applied, after them.
                    let after_services = !matches!(c, Change::Apply(ObjRef::Service(_)));
                    !(self.options.services_first && after_services && services_pending)
                }
                Stage::Prune => !applying,
                Stage::After => !applying && !pruning,
            };
            if !done && open {
                out.push(Event::Change(c.clone()));
            }
        }
        let l = &w.lbipam;
        match &l.mode {
            Mode::Stopped { .. } => {}
            Mode::Dormant => out.extend(l.pool_queue.iter().cloned().map(Event::LbIpamPool)),
            Mode::Active => {
                out.extend(l.pool_queue.iter().cloned().map(Event::LbIpamPool));
                out.extend(l.svc_queue.iter().cloned().map(Event::LbIpamService));
            }
            Mode::Initializing { pending, stale } => {
                for k in pending {
                    out.push(Event::LbIpamService(k.clone()));
                    let requests = w
                        .cluster
                        .services
                        .get(k)
                        .is_some_and(|s| !self.quirks.requested(&s.spec).is_empty());
                    if *stale && !requests {
                        out.push(Event::LbIpamStaleService(k.clone()));
                    }
                }
            }
        }
        if w.cluster.flags.metallb_controller {
            out.extend(w.metallb.dirty.iter().cloned().map(Event::MetalLbConverge));
        }
        out
    }

    fn step(&self, w: &World, e: &Event) -> World {
        let mut next = w.clone();
        if let Event::Change(c) = e {
            let i = self
                .changes
                .iter()
                .zip(&w.done)
                .position(|((x, _), d)| x == c && !d);
            if let Some(i) = i {
                next.done[i] = true;
                self.apply_change(&mut next, c);
            }
        } else {
            self.react(&mut next, e);
        }
        next
    }
}

/// Steps [`Transition::settled`] takes at most.
const SETTLE_STEPS: usize = 10_000;

fn fingerprint(w: &World) -> u64 {
    let mut h = DefaultHasher::new();
    w.hash(&mut h);
    h.finish()
}

type Key = (Invariant, SvcKey, Option<IpAddr>);

/// Keeps the shortest sequence found per (invariant, Service, IP).
#[derive(Default)]
struct Found(BTreeMap<Key, (Finding, Vec<Event>)>);

impl Found {
    /// Records `findings` reached after `len` events; `trace` builds the sequence, only when
    /// it is shorter than the one kept.
    fn add(&mut self, findings: Vec<Finding>, len: usize, trace: impl Fn() -> Vec<Event>) {
        for f in findings {
            let key = (f.invariant, f.service.clone(), f.ip);
            if self.0.get(&key).is_none_or(|(_, t)| len < t.len()) {
                self.0.insert(key, (f, trace()));
            }
        }
    }
    fn into_violations(self) -> Vec<Violation> {
        self.0
            .into_values()
            .map(|(finding, trace)| Violation { finding, trace })
            .collect()
    }
}

/// Explores a transition.
pub fn explore(t: &Transition) -> Report {
    explore_visiting(t, &mut |_| {})
}

/// [`explore`], calling `visit` on every distinct state it reaches (the live state first),
/// for properties of the states themselves: e.g. what a gate reads in each intermediate state
/// (`tests/orchestrate/model.rs`). Random walks visit their states too.
pub fn explore_visiting(t: &Transition, visit: &mut dyn FnMut(&Visited<'_>)) -> Report {
    let base = Baseline::of(&t.live.cluster);
    let unannounced = t.options.may_leave_unannounced;
    let check = |w: &World| invariants::check(&base, &w.cluster, unannounced);
    let mut found = Found::default();
    let start = t.initial();
    visit(&Visited::of(t, &start));
    found.add(check(&start), 0, Vec::new);
    // Breadth first: `nodes[i]` = (parent, event that led to state i); `depth` is the
    // length of the sequence to the states being expanded.
    let mut nodes: Vec<(usize, Option<Event>)> = vec![(0, None)];
    let mut seen: HashSet<u64> = HashSet::from([fingerprint(&start)]);
    let mut queue: VecDeque<(World, usize, usize)> = VecDeque::from([(start.clone(), 0, 0)]);
    let trace_of = |nodes: &[(usize, Option<Event>)], mut i: usize| {
        let mut t = Vec::new();
        while let (parent, Some(e)) = &nodes[i] {
            t.push(e.clone());
            i = *parent;
        }
        t.reverse();
        t
    };
    let mut exhaustive = true;
    while let Some((w, id, depth)) = queue.pop_front() {
        if nodes.len() > t.options.max_states {
            exhaustive = false;
            break;
        }
        for e in t.enabled(&w) {
            let next = t.step(&w, &e);
            if !seen.insert(fingerprint(&next)) {
                continue;
            }
            visit(&Visited::of(t, &next));
            nodes.push((id, Some(e)));
            let nid = nodes.len() - 1;
            found.add(check(&next), depth + 1, || trace_of(&nodes, nid));
            queue.push_back((next, nid, depth + 1));
        }
    }
    if !exhaustive {
        random_walks(t, &start, &check, &mut found, &mut seen, visit);
        for (key, entry) in found.0.iter_mut() {
            let same = |f: &Finding| (f.invariant, &f.service, f.ip) == (key.0, &key.1, key.2);
            *entry = shrink::shrink(t, &start, entry.clone(), &check, &same);
        }
    }
    let after_settling = invariants::check(&base, &t.settle().cluster, false);
    Report {
        after_settling,
        changes: t.changes(),
        violations: found.into_violations(),
        states: seen.len(),
        exhaustive,
    }
}

/// Seeded random walks from the live state (SplitMix64: the model's own generator, so the
/// library needs no test-only code).
fn random_walks(
    t: &Transition,
    start: &World,
    check: &dyn Fn(&World) -> Vec<Finding>,
    found: &mut Found,
    seen: &mut HashSet<u64>,
    visit: &mut dyn FnMut(&Visited<'_>),
) {
    let mut state = t.options.seed;
    let mut next_u64 = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for _ in 0..t.options.walks {
        let mut w = start.clone();
        let mut trace: Vec<Event> = Vec::new();
        for _ in 0..t.options.max_depth {
            let events = t.enabled(&w);
            if events.is_empty() {
                break;
            }
            let e = events[(next_u64() % events.len() as u64) as usize].clone();
            w = t.step(&w, &e);
            trace.push(e);
            if seen.insert(fingerprint(&w)) {
                visit(&Visited::of(t, &w));
            }
            found.add(check(&w), trace.len(), || trace.clone());
        }
    }
}

#[cfg(test)]
mod tests;

//! A transition's atomic changes (what one Flux apply of the next commit does to the cluster)
//! and the effect of each event on a [`World`].
//!
//! Flux applies the next commit's objects (in an order the model leaves open, except that
//! with [`super::Options::services_first`] Services go before custom resources, as the
//! kustomize sort of `fluxcd/pkg/ssa` does inside one Kustomization), then prunes the objects
//! the previous commit had and the next lacks. Server-side apply sets the fields the package
//! declares and removes the labels and annotations the previous package declared and the next
//! does not; fields other managers own (status, MetalLB's own annotations) stay.

use std::collections::BTreeSet;
use std::fmt;

use super::super::lbipam::{Ctx, Mode, Patch};
use super::super::read::Snapshot;
use super::super::state::{Cluster, ServiceSpec, SvcKey};
use super::{Event, Transition, World};

/// An object of the model, by kind and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjRef {
    /// A Service.
    Service(SvcKey),
    /// A MetalLB IPAddressPool.
    MetalLbPool(String),
    /// A MetalLB L2Advertisement.
    Advert(String),
    /// A CiliumLoadBalancerIPPool.
    CiliumPool(String),
    /// A CiliumL2AnnouncementPolicy.
    Policy(String),
}

impl fmt::Display for ObjRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjRef::Service(k) => write!(f, "Service {k}"),
            ObjRef::MetalLbPool(n) => write!(f, "IPAddressPool {n}"),
            ObjRef::Advert(n) => write!(f, "L2Advertisement {n}"),
            ObjRef::CiliumPool(n) => write!(f, "CiliumLoadBalancerIPPool {n}"),
            ObjRef::Policy(n) => write!(f, "CiliumL2AnnouncementPolicy {n}"),
        }
    }
}

/// One atomic change of a transition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    /// An object created or updated.
    Apply(ObjRef),
    /// An object pruned (after every apply).
    Prune(ObjRef),
    /// MetalLB's speaker stops (Helm `speaker.enabled: false` rolled out, or MetalLB removed).
    SpeakerStops,
    /// MetalLB's controller stops (`controller.enabled: false`, or MetalLB removed).
    ControllerStops,
    /// MetalLB's speaker runs again (a rollback: `speaker.enabled` back to true).
    SpeakerStarts,
    /// MetalLB's controller runs again; on start it converges every Service (its informers list
    /// them all: metallb/metallb `controller/main.go`, the reconciler's initial sync).
    ControllerStarts,
    /// Cilium's agents run with `l2announcements.enabled: true`.
    L2On,
    /// Cilium's operator restarts because its Helm values changed.
    OperatorRestart,
    /// Cilium's operator, scaled to 0 during the apply, starts again after it.
    OperatorStart,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Apply(o) => write!(f, "apply {o}"),
            Change::Prune(o) => write!(f, "prune {o}"),
            Change::SpeakerStops => write!(f, "MetalLB speaker stops"),
            Change::ControllerStops => write!(f, "MetalLB controller stops"),
            Change::SpeakerStarts => write!(f, "MetalLB speaker starts again"),
            Change::ControllerStarts => write!(f, "MetalLB controller starts again"),
            Change::L2On => write!(f, "Cilium agents start L2 announcements"),
            Change::OperatorRestart => write!(f, "Cilium operator restarts"),
            Change::OperatorStart => write!(f, "Cilium operator starts (it was scaled to 0)"),
        }
    }
}

/// When a change may happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// During the apply.
    Apply,
    /// After every apply.
    Prune,
    /// After every apply and prune.
    After,
}

/// The changes from `live` to the `after` package (`before`: the previous package).
pub fn changes(
    live: &Snapshot,
    before: &Snapshot,
    after: &Snapshot,
    operator_stopped: bool,
) -> Vec<(Change, Stage)> {
    let (l, b, a) = (&live.cluster, &before.cluster, &after.cluster);
    let mut out: Vec<(Change, Stage)> = Vec::new();
    for (k, svc) in &a.services {
        let before_spec = b.services.get(k).map(|s| &s.spec);
        let differs = l
            .services
            .get(k)
            .is_none_or(|s| merge(&s.spec, before_spec, &svc.spec) != s.spec);
        if differs {
            out.push((Change::Apply(ObjRef::Service(k.clone())), Stage::Apply));
        }
    }
    objects(
        &l.mlb_pools,
        &b.mlb_pools,
        &a.mlb_pools,
        ObjRef::MetalLbPool,
        &mut out,
        |x, y| x == y,
    );
    objects(
        &l.adverts,
        &b.adverts,
        &a.adverts,
        ObjRef::Advert,
        &mut out,
        |x, y| x == y,
    );
    objects(
        &l.cilium_pools,
        &b.cilium_pools,
        &a.cilium_pools,
        ObjRef::CiliumPool,
        &mut out,
        |x, y| x.same_spec(y),
    );
    objects(
        &l.policies,
        &b.policies,
        &a.policies,
        ObjRef::Policy,
        &mut out,
        |x, y| x == y,
    );
    for k in b
        .services
        .keys()
        .filter(|k| !a.services.contains_key(*k) && l.services.contains_key(*k))
    {
        out.push((Change::Prune(ObjRef::Service(k.clone())), Stage::Prune));
    }
    let removed = before.metallb.is_some() && after.metallb.is_none();
    let (speaker, controller) = match after.metallb {
        Some(flags) => (flags.0, flags.1),
        None if removed => (false, false),
        None => (l.flags.metallb_speaker, l.flags.metallb_controller),
    };
    let stage = if removed { Stage::Prune } else { Stage::Apply };
    if l.flags.metallb_speaker && !speaker {
        out.push((Change::SpeakerStops, stage));
    }
    if l.flags.metallb_controller && !controller {
        out.push((Change::ControllerStops, stage));
    }
    // A rollback brings MetalLB back (only where the package still installs it).
    if after.metallb.is_some() {
        if !l.flags.metallb_speaker && speaker {
            out.push((Change::SpeakerStarts, Stage::Apply));
        }
        if !l.flags.metallb_controller && controller {
            out.push((Change::ControllerStarts, Stage::Apply));
        }
    }
    let reference = live.cilium.as_ref().or(before.cilium.as_ref());
    if let Some((l2, values)) = &after.cilium {
        if *l2 && !l.flags.l2_announcements {
            out.push((Change::L2On, Stage::Apply));
        }
        if reference.is_some_and(|(_, v)| v != values) && !operator_stopped {
            out.push((Change::OperatorRestart, Stage::Apply));
        }
    }
    if operator_stopped {
        out.push((Change::OperatorStart, Stage::After));
    }
    out
}

/// Applies and prunes of one kind: applied when new or different from live; pruned when the
/// previous package had it, the next lacks it and it exists live.
fn objects<T>(
    live: &std::collections::BTreeMap<String, T>,
    before: &std::collections::BTreeMap<String, T>,
    after: &std::collections::BTreeMap<String, T>,
    r: fn(String) -> ObjRef,
    out: &mut Vec<(Change, Stage)>,
    same: impl Fn(&T, &T) -> bool,
) {
    for (n, obj) in after {
        if live.get(n).is_none_or(|l| !same(l, obj)) {
            out.push((Change::Apply(r(n.clone())), Stage::Apply));
        }
    }
    for n in before.keys() {
        if !after.contains_key(n) && live.contains_key(n) {
            out.push((Change::Prune(r(n.clone())), Stage::Prune));
        }
    }
}

/// Server-side apply of a Service: labels and annotations of the previous package that the
/// next one drops are removed, the next one's are set, others' stay; spec fields are the
/// package's.
pub fn merge(live: &ServiceSpec, before: Option<&ServiceSpec>, after: &ServiceSpec) -> ServiceSpec {
    let mut out = after.clone();
    let mut labels = live.labels.clone();
    let mut annotations = live.annotations.clone();
    if let Some(b) = before {
        labels.retain(|k, _| !b.labels.contains_key(k) || after.labels.contains_key(k));
        annotations
            .retain(|k, _| !b.annotations.contains_key(k) || after.annotations.contains_key(k));
    }
    labels.extend(after.labels.clone());
    annotations.extend(after.annotations.clone());
    out.labels = labels;
    out.annotations = annotations;
    out
}

impl Transition {
    /// Applies change `i` to `w`.
    pub(super) fn apply_change(&self, w: &mut World, change: &Change) {
        let (a, b) = (&self.after.cluster, &self.before.cluster);
        match change {
            Change::Apply(ObjRef::Service(k)) | Change::Prune(ObjRef::Service(k)) => {
                match a
                    .services
                    .get(k)
                    .filter(|_| matches!(change, Change::Apply(_)))
                {
                    Some(svc) => {
                        let entry = w.cluster.services.entry(k.clone()).or_insert(svc.clone());
                        entry.spec =
                            merge(&entry.spec, b.services.get(k).map(|s| &s.spec), &svc.spec);
                    }
                    None => {
                        w.cluster.services.remove(k);
                    }
                }
                service_changed(w, k);
            }
            Change::Apply(ObjRef::MetalLbPool(n)) => {
                w.cluster
                    .mlb_pools
                    .insert(n.clone(), a.mlb_pools[n].clone());
                metallb_config_changed(w);
            }
            Change::Prune(ObjRef::MetalLbPool(n)) => {
                w.cluster.mlb_pools.remove(n);
                metallb_config_changed(w);
            }
            Change::Apply(ObjRef::Advert(n)) => {
                w.cluster.adverts.insert(n.clone(), a.adverts[n].clone());
            }
            Change::Prune(ObjRef::Advert(n)) => {
                w.cluster.adverts.remove(n);
            }
            Change::Apply(ObjRef::CiliumPool(n)) => {
                let mut pool = a.cilium_pools[n].clone();
                pool.created = match w.cluster.cilium_pools.get(n) {
                    Some(p) => p.created,
                    None => {
                        w.cluster.next_created += 1;
                        w.cluster.next_created - 1
                    }
                };
                w.cluster.cilium_pools.insert(n.clone(), pool);
                pool_changed(w, n);
            }
            Change::Prune(ObjRef::CiliumPool(n)) => {
                w.cluster.cilium_pools.remove(n);
                pool_changed(w, n);
            }
            Change::Apply(ObjRef::Policy(n)) => {
                w.cluster.policies.insert(n.clone(), a.policies[n].clone());
            }
            Change::Prune(ObjRef::Policy(n)) => {
                w.cluster.policies.remove(n);
            }
            Change::SpeakerStops => w.cluster.flags.metallb_speaker = false,
            Change::ControllerStops => {
                w.cluster.flags.metallb_controller = false;
                w.metallb.dirty.clear();
            }
            Change::SpeakerStarts => w.cluster.flags.metallb_speaker = true,
            Change::ControllerStarts => {
                w.cluster.flags.metallb_controller = true;
                metallb_config_changed(w);
            }
            Change::L2On => w.cluster.flags.l2_announcements = true,
            Change::OperatorRestart | Change::OperatorStart => {
                let cx = Ctx {
                    cluster: &w.cluster,
                    q: &self.quirks,
                };
                w.lbipam.start(&cx);
            }
        }
    }

    /// Runs one controller event on `w`.
    pub(super) fn react(&self, w: &mut World, event: &Event) {
        let cx = Ctx {
            cluster: &w.cluster,
            q: &self.quirks,
        };
        let patches: Vec<Patch> = match event {
            Event::Change(_) => Vec::new(),
            Event::LbIpamPool(n) => w.lbipam.pool_event(&cx, n),
            Event::LbIpamService(k) if matches!(w.lbipam.mode, Mode::Initializing { .. }) => {
                w.lbipam.init_service(&cx, k, false).into_iter().collect()
            }
            Event::LbIpamService(k) => w.lbipam.service_event(&cx, k).into_iter().collect(),
            Event::LbIpamStaleService(k) => {
                w.lbipam.init_service(&cx, k, true).into_iter().collect()
            }
            Event::MetalLbConverge(k) => {
                if let Some(status) = w.metallb.converge(&w.cluster, k) {
                    set_status(&mut w.cluster, k, status);
                    if matches!(w.lbipam.mode, Mode::Active | Mode::Initializing { .. }) {
                        w.lbipam.svc_queue.insert(k.clone());
                    }
                }
                Vec::new()
            }
        };
        for (k, status) in patches {
            if set_status(&mut w.cluster, &k, status) && w.cluster.flags.metallb_controller {
                w.metallb.dirty.insert(k);
            }
        }
    }
}

fn set_status(cluster: &mut Cluster, key: &SvcKey, status: Vec<std::net::IpAddr>) -> bool {
    match cluster.services.get_mut(key) {
        Some(s) if s.status != status => {
            s.status = status;
            true
        }
        _ => false,
    }
}

/// A Service's object changed: both controllers get an event.
fn service_changed(w: &mut World, k: &SvcKey) {
    if matches!(w.lbipam.mode, Mode::Active | Mode::Initializing { .. }) {
        w.lbipam.svc_queue.insert(k.clone());
    }
    if w.cluster.flags.metallb_controller {
        w.metallb.dirty.insert(k.clone());
    }
}

/// MetalLB's configuration changed: its controller re-converges every Service.
fn metallb_config_changed(w: &mut World) {
    if w.cluster.flags.metallb_controller {
        let keys: BTreeSet<SvcKey> = w.cluster.services.keys().cloned().collect();
        w.metallb.dirty.extend(keys);
    }
}

/// A Cilium pool changed: LB-IPAM's pool informer queues it (unless the operator is down).
fn pool_changed(w: &mut World, n: &str) {
    if !matches!(w.lbipam.mode, Mode::Stopped { .. }) {
        w.lbipam.pool_queue.insert(n.to_owned());
    }
}

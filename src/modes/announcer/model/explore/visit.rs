//! What [`super::explore_visiting`] shows of each state it reaches.

use super::super::lbipam::{LbIpam, Mode};
use super::super::read::Snapshot;
use super::super::state::Cluster;
use super::{Change, Transition, World};

/// One state the explorer reached.
pub struct Visited<'a> {
    /// The cluster's objects, statuses and processes.
    pub cluster: &'a Cluster,
    /// LB-IPAM's memory: which Services it handled (its views) and which pools it marked
    /// Conflicting; what it writes in the status conditions the gates read.
    pub lbipam: &'a LbIpam,
    /// Every change of the transition is done (Flux's apply and prune are over; controllers
    /// may still have queued work).
    pub applied: bool,
    /// The controllers have no queued work and every change is done: the state settled.
    pub quiet: bool,
    t: &'a Transition,
    w: &'a World,
}

impl<'a> Visited<'a> {
    pub(super) fn of(t: &'a Transition, w: &'a World) -> Visited<'a> {
        let applied = w.done.iter().all(|d| *d);
        let quiet = t.enabled(w).is_empty();
        Visited {
            cluster: &w.cluster,
            lbipam: &w.lbipam,
            applied,
            quiet,
            t,
            w,
        }
    }

    /// The state as the live snapshot of a next transition (what [`Transition::settled`]
    /// gives for the settled state). The controllers' queued work is not carried over: the
    /// next transition starts them from the objects, as [`LbIpam::from_live`] does.
    pub fn snapshot(&self) -> Snapshot {
        let (t, w) = (self.t, self.w);
        // The operator's values are the next package's once its restart (or first start) is
        // done, the live ones before.
        let restarted = t.changes.iter().zip(&w.done).all(|((c, _), done)| {
            *done || !matches!(c, Change::OperatorRestart | Change::OperatorStart)
        });
        let cilium = if restarted {
            t.after.cilium.clone().or(t.live.cilium.clone())
        } else {
            t.live.cilium.clone().or(t.before.cilium.clone())
        };
        let flags = w.cluster.flags;
        Snapshot {
            cluster: w.cluster.clone(),
            metallb: Some((flags.metallb_speaker, flags.metallb_controller)),
            cilium,
        }
    }

    /// LB-IPAM runs (it is neither waiting for a first pool nor scaled to 0).
    pub fn lbipam_running(&self) -> bool {
        !matches!(self.lbipam.mode, Mode::Stopped { .. } | Mode::Dormant)
    }
}

//! LB-IPAM's pool events and life cycle (cilium/cilium `operator/pkg/lbipam/lbipam.go` at
//! main `079d9740ae`: `Run`, `initialize`, `restart`, `poolOnUpsert`, `handleNewPool`,
//! `handlePoolModified`, `poolOnDelete`, `handlePoolDeleted`,
//! `reconcileServicesAfterRangeDeletion`).

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::super::state::{CPool, SvcKey};
use super::{Ctx, LbIpam, Mode, Patch};

impl LbIpam {
    /// Handles the queued event of pool `name`, reading its current object. A dormant LB-IPAM
    /// wakes on the FIRST pool (`initialize`: `poolsSynced && len(ipam.pools) > 0`) and then
    /// revalidates every Service with only that pool known; an active one goes dormant again
    /// when its last pool is deleted (`restart`).
    pub fn pool_event(&mut self, cx: &Ctx<'_>, name: &str) -> Vec<Patch> {
        self.pool_queue.remove(name);
        let known = self.pools.get(name).map(|(p, _)| p.clone());
        let patches = match (cx.cluster.cilium_pools.get(name), known) {
            (Some(p), None) => {
                // `handleNewPool` then `settleConflicts`, `satisfyAndUpdateCounts`.
                self.add_pool(name, p);
                self.settle();
                self.satisfy_all(cx)
            }
            (Some(p), Some(old)) if !p.same_spec(&old) => self.modify_pool(cx, name, p),
            (None, Some(_)) => self.delete_pool(cx, name),
            _ => Vec::new(),
        };
        if self.mode == Mode::Dormant && !self.pools.is_empty() {
            self.begin_init(cx, false);
        } else if self.mode == Mode::Active && self.pools.is_empty() {
            *self = LbIpam::dormant();
        }
        patches
    }

    fn begin_init(&mut self, cx: &Ctx<'_>, stale: bool) {
        let pending: BTreeSet<SvcKey> = cx
            .cluster
            .services
            .keys()
            .filter(|k| cx.responsible(k))
            .cloned()
            .collect();
        self.svc_queue.clear();
        self.mode = if pending.is_empty() {
            Mode::Active
        } else {
            Mode::Initializing { pending, stale }
        };
    }

    /// `handlePoolModified`: ranges that left the pool lose their allocations, `disabled` is
    /// copied, every Service is revalidated (satisfied ones first); then conflicts are settled
    /// and unsatisfied Services satisfied. With [`super::Quirks::edit_reassigns`] the pool's
    /// Services that request no IP are re-assigned.
    fn modify_pool(&mut self, cx: &Ctx<'_>, name: &str, pool: &CPool) -> Vec<Patch> {
        let seq = self.pools.get(name).map_or(self.seq, |(_, s)| *s);
        self.pools.insert(name.to_owned(), (pool.clone(), seq));
        let from_pool: Vec<(IpAddr, Vec<SvcKey>)> = self
            .alloc
            .iter()
            .filter(|(_, (p, _))| p == name)
            .map(|(ip, (_, hs))| (*ip, hs.clone()))
            .collect();
        let mut reassigned: BTreeSet<SvcKey> = BTreeSet::new();
        for (ip, holders) in from_pool {
            let gone = !pool.blocks.iter().any(|b| b.allows(ip));
            for h in holders {
                let requests = cx.spec(&h).is_some_and(|s| !cx.q.requested(s).is_empty());
                if gone || (cx.q.edit_reassigns && !requests) {
                    self.release(&h, ip);
                    if !gone {
                        reassigned.insert(h);
                    }
                }
            }
        }
        let keys: Vec<SvcKey> = self.views.keys().cloned().collect();
        let (sat, unsat): (Vec<SvcKey>, Vec<SvcKey>) =
            keys.into_iter().partition(|k| self.satisfied(cx, k));
        let mut patches: Vec<Patch> = Vec::new();
        for k in sat.iter().chain(&unsat) {
            let p = if reassigned.contains(k) {
                self.reconcile_stale(cx, k)
            } else {
                self.revalidate(cx, k)
            };
            patches.extend(p);
        }
        self.settle();
        patches.extend(self.satisfy_all(cx));
        patches
    }

    /// `handlePoolDeleted`: the pool's allocations go, the pool is forgotten, and the
    /// Services that lost an IP are reconciled (`stripOrImportIngresses`, `satisfyService`)
    /// BEFORE `settleConflicts` unmarks a pool the deleted one overlapped: that pool's ranges
    /// are still disabled, so the IPs are stripped, not imported.
    fn delete_pool(&mut self, cx: &Ctx<'_>, name: &str) -> Vec<Patch> {
        let lost: Vec<(IpAddr, Vec<SvcKey>)> = self
            .alloc
            .iter()
            .filter(|(_, (p, _))| p == name)
            .map(|(ip, (_, hs))| (*ip, hs.clone()))
            .collect();
        let mut modified: BTreeSet<SvcKey> = BTreeSet::new();
        for (ip, holders) in lost {
            for h in holders {
                self.release(&h, ip);
                modified.insert(h);
            }
        }
        self.pools.remove(name);
        let mut patches: Vec<Patch> = Vec::new();
        for k in &modified {
            let mut changed = self.strip_or_import(cx, k);
            if !self.satisfied(cx, k) {
                changed |= self.satisfy(cx, k);
            }
            if changed {
                patches.push((k.clone(), self.view(k).status.clone()));
            }
        }
        self.settle();
        patches.extend(self.satisfy_all(cx));
        patches
    }

    /// The operator stops (scaled to 0): its memory is gone.
    pub fn stop(&mut self) {
        let was_active =
            !self.pools.is_empty() || matches!(self.mode, Mode::Stopped { was_active: true });
        *self = LbIpam::dormant();
        self.mode = Mode::Stopped { was_active };
    }

    /// The operator starts (or restarts): `initialize` lists every pool before its sync
    /// event, so all pools are known at once; the `PoolConflict` marks persist in the pools'
    /// status. With pools it revalidates every Service; on a release with
    /// [`super::Quirks::restart_reallocates`] that had pools before, the revalidation is stale.
    pub fn start(&mut self, cx: &Ctx<'_>) {
        let was_active = match self.mode {
            Mode::Stopped { was_active } => was_active,
            _ => !self.pools.is_empty(),
        };
        let mut marks = self.conflicting.clone();
        marks.extend(cx.cluster.conflicting.iter().cloned());
        *self = LbIpam::dormant();
        self.add_all_pools(cx);
        self.conflicting = marks
            .into_iter()
            .filter(|n| self.pools.contains_key(n))
            .collect();
        self.settle();
        if !self.pools.is_empty() {
            self.begin_init(cx, cx.q.restart_reallocates && was_active);
        }
    }

    /// Revalidates one listed Service during `initialize` (`stale`: the restart race, see
    /// [`LbIpam::reconcile_stale`]); the last one ends initialization.
    pub fn init_service(&mut self, cx: &Ctx<'_>, key: &SvcKey, stale: bool) -> Option<Patch> {
        if let Mode::Initializing { pending, .. } = &mut self.mode {
            pending.remove(key);
        }
        self.svc_queue.remove(key);
        let patch = if stale {
            self.reconcile_stale(cx, key)
        } else {
            self.reconcile(cx, key)
        };
        if matches!(&self.mode, Mode::Initializing { pending, .. } if pending.is_empty()) {
            self.mode = Mode::Active;
        }
        patch
    }

    /// A queued Service event in the main loop.
    pub fn service_event(&mut self, cx: &Ctx<'_>, key: &SvcKey) -> Option<Patch> {
        self.svc_queue.remove(key);
        self.reconcile(cx, key)
    }
}

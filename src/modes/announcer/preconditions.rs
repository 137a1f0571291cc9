//! What the cluster must look like for the plan to be safe in every order the controllers may
//! see it: the answers the transition model ([`super::model`]) gives, checked on the items and
//! the observed state. Each refusal names the object and the way out.

use super::Check;
use super::config::Phase;
use super::cutover::Cutover;
use super::inventory::MANAGED_BY;
use super::model::lbipam::Quirks;
use super::version::CiliumVersion;
use crate::krm::{KrmObject, KrmResult};

const POOL: &str = "CiliumLoadBalancerIPPool";
const POLICY: &str = "CiliumL2AnnouncementPolicy";

impl Cutover<'_> {
    /// Refuses Cilium pools and L2 policies cutover did not generate (among the items or live),
    /// a first start of LB-IPAM on several pools at once without the operator stopped, and
    /// phase cutover while MetalLB's speaker pods still run.
    pub(super) fn preconditions(&mut self, generated_pools: usize, version: &CiliumVersion) {
        self.foreign_cilium_objects();
        self.cold_start(generated_pools);
        self.pins_first(version);
        self.live_speakers();
    }

    /// The pins only help if LB-IPAM sees them: where it would otherwise take a shared IP apart
    /// or move an IP (a sharing key on a cold start, an operator restart below 1.18.2), they must
    /// reach the cluster before the first pool and before Cilium's upgrade. Flux applies the
    /// objects of one Kustomization in kind order, Services before custom resources
    /// (fluxcd/pkg `ssa/sort.go`); across Kustomizations nothing orders them.
    fn pins_first(&mut self, version: &CiliumVersion) {
        if self.spec.cilium_operator_stopped || self.plan_mode || self.phase != Phase::Prepare {
            return;
        }
        let awake = match &self.inv.observed {
            Some(o) => o.cilium.iter().any(|c| c.kind == POOL),
            None => self.inv.cilium_objects.keys().any(|(kind, _)| kind == POOL),
        };
        let sharing = self
            .inv
            .services
            .iter()
            .any(|s| s.metallb_annotation("allow-shared-ip").is_some());
        // The release's LB-IPAM quirks, as the transition model runs them.
        let quirks = Quirks::for_version(version, None);
        let mut why = Vec::new();
        if !awake && sharing && (quirks.import_skips_key || !quirks.import_shares) {
            why.push(
                "LB-IPAM wakes on the first pool and revalidates every Service: without its pins a shared IP \
                 can be split or its members swapped (cilium/cilium#34783 below 1.16.3, #46262 below 1.20)",
            );
        }
        if quirks.restart_reallocates {
            why.push(
                "this phase's Cilium upgrade restarts the operator, which below 1.18.2 may re-allocate IPs \
                 that are not pinned (cilium/cilium#43131)",
            );
        }
        if why.is_empty() {
            return;
        }
        let r = KrmResult::warning(format!(
            "apply the Services and the generated pools with one Flux Kustomization, so the Services' \
             lbipam.cilium.io/ips pins reach the cluster first (Flux applies Services before custom resources), or \
             apply this phase with Cilium's operator stopped (spec.ciliumOperatorStopped): {}",
            why.join("; ")
        ));
        let r = self.about_config(r).field("spec.ciliumOperatorStopped");
        self.results.push(r.tag("check", Check::Transitions));
    }

    /// A pool cutover did not make means LB-IPAM is already awake: it imports or strips every
    /// class-less Service's IP (`stripOrImportIngresses`, operator/pkg/lbipam/lbipam.go), and a
    /// generated pool overlapping it is the newer one, marked Conflicting (`settleConflicts`), so
    /// the IPs it should import are stripped. A foreign L2 policy makes Cilium answer ARP as soon
    /// as `l2announcements.enabled` is on, while MetalLB's speaker still runs
    /// (pkg/l2announcer/l2announcer.go: a policy without serviceSelector selects every Service).
    fn foreign_cilium_objects(&mut self) {
        let items = self.items;
        for ((kind, name), &index) in &self.inv.cilium_objects {
            let item = &items[index];
            if item.label(MANAGED_BY.0) == Some(MANAGED_BY.1) {
                continue;
            }
            self.results.push(
                KrmResult::error(foreign_message(kind, name, "is among the items"))
                    .about(item)
                    .field("metadata.labels")
                    .tag("check", Check::Transitions),
            );
        }
        let Some(observed) = &self.inv.observed else {
            return;
        };
        for live in &observed.cilium {
            let in_items = self
                .inv
                .cilium_objects
                .contains_key(&(live.kind.clone(), live.name.clone()));
            if live.generated || in_items {
                continue;
            }
            let field = if live.kind == POOL {
                "ciliumPools"
            } else {
                "ciliumL2Policies"
            };
            let r = KrmResult::error(foreign_message(
                &live.kind,
                &live.name,
                "exists in the cluster",
            ))
            .about(&items[observed.index])
            .field(field)
            .tag("check", Check::Transitions);
            self.results.push(r);
        }
    }

    /// LB-IPAM sleeps until its first pool and then judges every Service against the pools it
    /// has seen (`initialize` breaks out on `poolsSynced && len(ipam.pools) > 0`, then
    /// `revalidateAllServices`): pools created one by one while the operator runs strip the IPs
    /// of the pools it has not seen yet, even pinned ones, until their events arrive. Safe only
    /// with one pool, or when the operator starts after every pool exists (its first list).
    fn cold_start(&mut self, generated_pools: usize) {
        if generated_pools < 2 || self.spec.cilium_operator_stopped || self.plan_mode {
            return;
        }
        let awake = match &self.inv.observed {
            Some(o) => o.cilium.iter().any(|c| c.kind == POOL),
            None => self.inv.cilium_objects.keys().any(|(kind, _)| kind == POOL),
        };
        if awake {
            return;
        }
        let r = KrmResult::error(format!(
            "{generated_pools} Cilium pools would be created while LB-IPAM holds none: it wakes up on the first pool \
             event and revalidates every Service against the pools seen so far, stripping the IPs of the others \
             until their events arrive (the transition model shows the IPs missing from status). Apply phase {} \
             with Cilium's operator stopped (see the runbook: suspend the Cilium release, scale cilium-operator to \
             0, apply, then resume) and set spec.ciliumOperatorStopped: true",
            self.phase.as_str()
        ));
        let r = self.about_config(r).field("spec.ciliumOperatorStopped");
        self.results.push(r.tag("check", Check::Transitions));
    }

    /// Phase cutover while the observed state still shows speaker pods (Cilium's policies would
    /// be created while MetalLB answers ARP) or controller pods (it would move Services' IPs
    /// when the pools are deleted).
    fn live_speakers(&mut self) {
        let Some(observed) = &self.inv.observed else {
            return;
        };
        if self.phase != Phase::Cutover || self.plan_mode {
            return;
        }
        if observed.controller_pods > 0 {
            let r = KrmResult::error(format!(
                "the observed state shows {} MetalLB controller pod(s): phase cutover deletes the IPAddressPools, \
                 and a running controller then clears or re-allocates the Services' status (clearServiceState, \
                 metallb controller/service.go). Apply phase stop-speaker (it stops the controller too), wait until \
                 no controller pod runs, export the state again, then run phase cutover",
                observed.controller_pods
            ))
            .about(&self.items[observed.index])
            .field("metallb.controllerPods")
            .tag("check", Check::Transitions);
            self.results.push(r);
        }
        if observed.speaker_nodes.is_empty() {
            return;
        }
        let nodes: Vec<&str> = observed.speaker_nodes.iter().map(String::as_str).collect();
        let r = KrmResult::error(format!(
            "the observed state shows MetalLB speaker pods on {} node(s) ({}): apply phase stop-speaker, wait until \
             no speaker pod runs, export the state again, then run phase cutover",
            nodes.len(),
            nodes.join(", ")
        ))
        .about(&self.items[observed.index])
        .field("metallb.speakerNodes")
        .tag("check", Check::Transitions);
        self.results.push(r);
    }
}

fn foreign_message(kind: &str, name: &str, where_: &str) -> String {
    if kind == POOL {
        format!(
            "{POOL} {name} {where_} and was not generated by cutover: LB-IPAM is already awake and imports or \
             strips every class-less LoadBalancer IP, and a generated pool overlapping it would be marked \
             Conflicting (the newer pool), stripping the IPs it should import. Remove it (or let cutover \
             generate the pools from MetalLB's) before the cutover"
        )
    } else {
        format!(
            "{POLICY} {name} {where_} and was not generated by cutover: once l2announcements is enabled \
             (phase prepare) Cilium answers ARP for the Services it selects while MetalLB's speaker still \
             does. Remove it before the cutover; cutover generates the policies in phase cutover"
        )
    }
}

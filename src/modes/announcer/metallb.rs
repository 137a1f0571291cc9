//! The MetalLB side of a cutover run: stopping the speaker (phase `stop-speaker`), refusing to
//! cut over while it runs, and removing MetalLB (phase `cutover`).

use serde_yaml::Value;

use super::Check;
use super::config::Phase;
use super::cutover::Cutover;
use super::inputs;
use super::inventory::{Carrier, Install, InstallKind};
use super::values;
use crate::krm::{KrmObject, KrmResult, PatchOp, Severity};

/// Flux's per-object apply policy: create the object if it is missing, never update it.
const SSA: (&str, &str) = ("kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent");

/// The annotation cozystack's platform chart puts on the Packages it renders.
const HELM_KEEP: (&str, &str) = ("helm.sh/resource-policy", "keep");

impl Cutover<'_> {
    /// Phase stop-speaker stops the speaker; phase cutover refuses to run while it still runs.
    pub(super) fn speaker(&mut self) {
        let bearing: Vec<(usize, Option<bool>)> = self
            .inv
            .install
            .iter()
            .map(|inst| {
                (
                    inst.index,
                    values::speaker_stopped(&self.items[inst.index], inst),
                )
            })
            .filter(|(_, s)| s.is_some())
            .collect();
        if bearing.is_empty() {
            self.no_installation();
            return;
        }
        if self.phase == Phase::Prepare
            && !self.plan_mode
            && let Some(&(index, _)) = bearing.iter().find(|(_, s)| *s == Some(true))
        {
            self.speaker_stopped_before = true;
            self.results.push(
                KrmResult::warning(
                    "phase prepare, but the MetalLB speaker is already stopped here (phase stop-speaker was applied): \
                     prepare does not start it again, so nobody answers ARP for the LoadBalancer IPs until phase \
                     cutover is applied. Apply phase cutover now; to give MetalLB the IPs back instead, revert the \
                     stop-speaker change",
                )
                .about(&self.items[index])
                .tag("check", Check::PhaseOrder)
                .tag("phase", Phase::Prepare.as_str()),
            );
        }
        for inst in &self.inv.install {
            self.speaker_of(inst);
        }
    }

    /// No MetalLB installation among the items: the operator stops the speaker (an error in
    /// phase stop-speaker, whose whole point that is; a warning in phase cutover).
    fn no_installation(&mut self) {
        let r = KrmResult::warning(
            "no MetalLB installation (HelmRelease, HelmChart, Flux Kustomization or speaker DaemonSet) \
             among the items: stop the MetalLB speaker yourself before Cilium L2 policies are applied, \
             or both will answer ARP",
        );
        if self.phase == Phase::Prepare {
            // Phase prepare does not touch MetalLB.
            return;
        }
        let r = if self.phase == Phase::StopSpeaker && !self.plan_mode {
            self.about_config(KrmResult {
                severity: Severity::Error,
                message: "phase stop-speaker stops the MetalLB speaker, but no MetalLB installation (HelmRelease, \
                          HelmChart, Flux Kustomization or speaker DaemonSet) is among the items: stop it by \
                          other means, then run phase cutover"
                    .into(),
                ..r
            })
            .field("spec.phase")
        } else {
            r
        };
        self.results.push(r);
    }

    /// What the phase does with one part of the MetalLB installation: stop-speaker stops its
    /// speaker (and a controller manifest's controller), cutover checks that it is stopped.
    fn speaker_of(&mut self, inst: &Install) {
        let item = &self.items[inst.index];
        if let InstallKind::Helm {
            carrier:
                Carrier::HelmRelease {
                    generated_by: Some(package),
                },
            ..
        } = &inst.kind
            && self.phase != Phase::Prepare
        {
            self.results
                .push(generated_release(item, package, "stop or remove MetalLB"));
            return;
        }
        match self.phase {
            Phase::Prepare => {}
            Phase::StopSpeaker => {
                if let Some((new, field, what)) = values::stop_speaker(item, inst) {
                    self.results.push(
                        KrmResult::info(format!("MetalLB speaker stopped: {what}"))
                            .about(item)
                            .field(field),
                    );
                    self.replace(inst.index, new);
                }
                if let InstallKind::Manifest { speaker: false } = inst.kind
                    && let Some((new, field, what)) = values::stop_controller_manifest(item)
                {
                    self.results.push(
                        KrmResult::info(format!("MetalLB controller stopped: {what}"))
                            .about(item)
                            .field(field),
                    );
                    self.replace(inst.index, new);
                }
                if !matches!(inst.kind, InstallKind::Rendered { .. }) {
                    self.skip_reapply_of_metallb_config();
                }
            }
            Phase::Cutover => {
                if !self.plan_mode && values::speaker_stopped(item, inst) == Some(false) {
                    self.results.push(
                        KrmResult::error(
                            "the MetalLB speaker still runs: a single apply creates the Cilium L2 policies before it \
                             prunes MetalLB, so both would answer ARP. Run phase stop-speaker first, apply it, then phase cutover",
                        )
                        .about(item)
                        .field("spec"),
                    );
                }
            }
        }
    }

    /// Phase stop-speaker with MetalLB's controller stopped: its webhook (still registered by the
    /// chart, charts/metallb/templates/webhooks.yaml) refuses CREATE and UPDATE of pools and
    /// advertisements, and Flux dry-runs every object of a Kustomization on each reconcile
    /// (fluxcd/pkg `ssa` `ApplyAll`), so the unchanged MetalLB objects would fail it until phase
    /// cutover prunes them. `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent` makes Flux skip an
    /// object that exists (`shouldSkipApply`: no dry-run, no apply) while it stays in the
    /// inventory, so phase cutover still prunes it (DELETE is not validated).
    fn skip_reapply_of_metallb_config(&mut self) {
        let inv = self.inv;
        let indices = inv
            .pools
            .iter()
            .map(|p| p.index)
            .chain(inv.adverts.iter().map(|a| a.index));
        for index in indices {
            let Some(item) = self.current(index) else {
                continue;
            };
            if item.annotation(SSA.0) == Some(SSA.1) {
                continue;
            }
            // A patch of the item's own tree, not a copy of it: a pool's tree may hold aliases
            // expanded to hundreds of thousands of nodes, and a copy would hold them twice.
            self.patched
                .entry(index)
                .or_default()
                .push(PatchOp::set_annotation(SSA.0, SSA.1));
            self.results.push(
                KrmResult::info(format!(
                    "{}: Flux no longer re-applies it (MetalLB's webhook stops with its controller); phase cutover prunes it",
                    SSA.0
                ))
                .about(&self.items[index])
                .field(format!("metadata.annotations.{}", SSA.0)),
            );
        }
    }

    /// Phase cutover: MetalLB objects and installation leave; dependsOn entries on them go too.
    pub(super) fn remove_metallb(&mut self) {
        let inv = self.inv;
        for p in &inv.pools {
            self.remove(
                p.index,
                "replaced by the CiliumLoadBalancerIPPool of the same name",
            );
        }
        for a in &inv.adverts {
            self.remove(a.index, "replaced by CiliumL2AnnouncementPolicy objects");
        }
        for &i in &inv.other_metallb {
            self.remove(i, "MetalLB object; MetalLB is removed");
        }
        let mut removed_flux: Vec<(String, String, String)> = Vec::new();
        for inst in &inv.install {
            let item = &self.items[inst.index];
            let why = self.why_removed(inst);
            if matches!(
                inst.kind,
                InstallKind::Helm {
                    carrier: Carrier::HelmRelease { .. },
                    ..
                } | InstallKind::Rendered { .. }
                    | InstallKind::FluxKustomization
            ) {
                removed_flux.push((
                    item.kind().to_owned(),
                    item.namespace().unwrap_or("").to_owned(),
                    item.name().to_owned(),
                ));
            }
            self.remove(inst.index, why);
        }
        self.drop_depends_on(&removed_flux);
    }

    /// Why a part of the MetalLB installation goes, with a warning where removing it does not
    /// remove MetalLB (a Package the platform chart keeps, a Kustomization that does not prune).
    fn why_removed(&mut self, inst: &Install) -> &'static str {
        let item = &self.items[inst.index];
        match &inst.kind {
            InstallKind::Helm {
                carrier: Carrier::HelmRelease { .. },
                ..
            } => "MetalLB Helm release; Flux uninstalls MetalLB",
            InstallKind::Rendered { .. } => {
                "MetalLB Helm release rendered from the cozystack Package, which is removed too"
            }
            InstallKind::Helm {
                carrier: Carrier::Package,
                ..
            } => {
                if item.annotation(HELM_KEEP.0) == Some(HELM_KEEP.1) {
                    self.results.push(
                    KrmResult::warning(format!(
                        "this Package carries {}: {}, as cozystack's platform chart renders it; where the platform \
                         chart (not this package) applies it, it stays on the cluster: add {} to \
                         bundles.disabledPackages of the platform Package and delete it \
                         (kubectl delete package.cozystack.io {})",
                        HELM_KEEP.0,
                        HELM_KEEP.1,
                        item.name(),
                        item.name()
                    ))
                    .about(item)
                    .field(format!("metadata.annotations.{}", HELM_KEEP.0)),
                );
                }
                "cozystack Package; the HelmReleases the cozystack operator generated from it are owned by it and go with it"
            }
            InstallKind::Helm {
                carrier: Carrier::HelmChart,
                ..
            } => "MetalLB HelmChart; helm-controller uninstalls MetalLB",
            InstallKind::FluxKustomization => {
                if inputs::at(item, &["spec", "prune"]) != Some(&Value::Bool(true)) {
                    self.results.push(
                    KrmResult::warning(
                        "this Flux Kustomization has prune disabled: deleting it leaves MetalLB running; \
                         delete MetalLB's objects by hand",
                    )
                    .about(item)
                    .field("spec.prune"),
                );
                }
                "Flux Kustomization applying MetalLB; Flux prunes its objects"
            }
            InstallKind::Manifest { .. } => "part of the MetalLB installation",
        }
    }

    /// Flux objects that depend on a removed one (`removed_flux`: kind, namespace, name) would
    /// wait forever: those entries of their `dependsOn` are dropped.
    fn drop_depends_on(&mut self, removed_flux: &[(String, String, String)]) {
        let inv = self.inv;
        for &i in &inv.flux_dependents {
            let Some(current) = self.current(i).cloned() else {
                continue;
            };
            let kind = current.kind().to_owned();
            let ns = current.namespace().unwrap_or("").to_owned();
            let mut new = current.clone();
            let Some(deps) = new
                .get_mut("spec")
                .and_then(|s| s.get_mut("dependsOn"))
                .and_then(Value::as_sequence_mut)
            else {
                continue;
            };
            let before = deps.len();
            deps.retain(|d| {
                let name = d.get("name").and_then(Value::as_str).unwrap_or("");
                let dns = d.get("namespace").and_then(Value::as_str).unwrap_or(&ns);
                !removed_flux
                    .iter()
                    .any(|(k, n, nm)| *k == kind && n == dns && nm == name)
            });
            if deps.len() != before {
                if deps.is_empty()
                    && let Some(spec) = new.get_mut("spec").and_then(Value::as_mapping_mut)
                {
                    spec.remove("dependsOn");
                }
                self.results.push(
                    KrmResult::info("dependsOn entry on the removed MetalLB release dropped")
                        .about(&self.items[i])
                        .field("spec.dependsOn"),
                );
                self.replace(i, new);
            }
        }
    }
}

/// Error for an edit of a HelmRelease the cozystack operator generated from a Package that is
/// not among the items: the operator rewrites the release's spec from the Package on every
/// reconcile (internal/operator/package_reconciler.go `createOrUpdateHelmRelease`), so the edit
/// would be undone.
pub(super) fn generated_release(item: &Value, package: &str, what: &str) -> KrmResult {
    KrmResult::error(format!(
        "{} {} is generated by the cozystack operator from Package {package}, which rewrites it on every \
         reconcile: to {what}, cutover must edit the Package; add Package {package} (cozystack.io/v1alpha1) \
         to the items",
        item.kind(),
        item.name()
    ))
    .about(item)
    .field(format!(
        "metadata.labels.{}",
        super::install::COZYSTACK_PACKAGE_LABEL
    ))
    .current(package)
}

//! Load-balancer announcer cutover mode (`LoadBalancerAnnouncer`): MetalLB L2 → Cilium LB-IPAM +
//! L2 announcements without losing a Service IP and without both answering ARP at once.
//!
//! Flow (kpt catalog style): read the items ([`inputs`]) → translate pools and advertisements
//! ([`translate`]) and Services ([`services`]) → edit Helm values ([`values`]) → prove coverage
//! ([`coverage`]) → emit the edits of the selected phase, or (announcer `metallb`) report them as
//! a plan without changing anything.

mod cilium;
mod config;
mod coverage;
mod inputs;
mod ipam;
mod selector;
mod services;
mod translate;
mod values;
mod version;

pub use config::*;

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use crate::krm::annotations::is_orchestrator_annotation;
use crate::krm::object::set_file;
use crate::krm::{Edit, KrmObject, KrmResult, Outcome, Severity};
use inputs::{InstallKind, Inventory, MANAGED_BY};
use version::CiliumVersion;

/// Runs the mode.
pub fn run(
    spec: &LoadBalancerAnnouncerSpec,
    items: &[Value],
    function_config: Option<&Value>,
) -> Outcome {
    let (inv, mut results) = inputs::read(items);
    let announcer = resolve_announcer(spec, &inv, items, &mut results);
    let mut outcome = if inv.pools.is_empty() && inv.adverts.is_empty() && inv.bgp.is_empty() {
        results.push(KrmResult::info(
            "no MetalLB IPAddressPool, L2Advertisement or BGP object among the items: nothing to migrate",
        ));
        Outcome {
            edits: Vec::new(),
            results,
        }
    } else {
        let plan_mode = announcer != Announcer::Cilium;
        let phase = if plan_mode {
            Phase::Cutover
        } else {
            spec.phase
        };
        let mut out = Cutover::new(spec, phase, plan_mode, &inv, items, function_config).run();
        results.append(&mut out.results);
        Outcome {
            edits: out.edits,
            results,
        }
    };
    if announcer != Announcer::Cilium {
        outcome = as_plan(outcome);
    } else if outcome.has_errors() {
        // The engine applies nothing when there is an error: drop the infos that describe
        // edits, keep errors and warnings, and say so once.
        outcome.results.retain(|r| r.severity != Severity::Info);
        outcome.results.push(KrmResult::info(
            "nothing was changed: fix the errors above and run again",
        ));
    }
    outcome
}

/// `spec.announcer`, else the platform values switch, else `metallb`.
fn resolve_announcer(
    spec: &LoadBalancerAnnouncerSpec,
    inv: &Inventory,
    items: &[Value],
    results: &mut Vec<KrmResult>,
) -> Announcer {
    let mut from_values = None;
    for (index, value) in &inv.switch {
        let parsed = match value.as_str() {
            "metallb" => Announcer::Metallb,
            "cilium" => Announcer::Cilium,
            other => {
                results.push(
                    KrmResult::error(format!(
                        "networking.loadBalancerAnnouncer is {other:?}: expected metallb or cilium"
                    ))
                    .about(&items[*index])
                    .field("networking.loadBalancerAnnouncer")
                    .current(other),
                );
                continue;
            }
        };
        match from_values {
            Some(prev) if prev != parsed => results.push(
                KrmResult::error(
                    "the items disagree on networking.loadBalancerAnnouncer (metallb and cilium)",
                )
                .about(&items[*index])
                .field("networking.loadBalancerAnnouncer"),
            ),
            _ => from_values = Some(parsed),
        }
    }
    match (spec.announcer, from_values) {
        (Some(a), Some(v)) if a != v => {
            results.push(KrmResult::warning(format!(
                "spec.announcer ({}) overrides networking.loadBalancerAnnouncer ({}) from the platform values",
                name(a),
                name(v)
            )));
            a
        }
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => Announcer::Metallb,
    }
}

fn name(a: Announcer) -> &'static str {
    match a {
        Announcer::Metallb => "metallb",
        Announcer::Cilium => "cilium",
    }
}

/// Plan mode (`announcer: metallb`): no edit at all. Every edit becomes an info result saying what
/// `cilium` would do, and errors become warnings tagged `planSeverity: error` — MetalLB stays in
/// charge, so a pipeline that runs the platform default must not fail on a cutover nobody asked
/// for, yet the reviewer sees exactly what blocks it.
fn as_plan(outcome: Outcome) -> Outcome {
    let mut results = Vec::new();
    for mut r in outcome.results {
        if r.severity == Severity::Error {
            r.severity = Severity::Warning;
            r.tags.insert("planSeverity".into(), "error".into());
        }
        r.message = format!("plan: {}", r.message);
        r.tags.insert("plan".into(), "true".into());
        results.push(r);
    }
    if !outcome.edits.is_empty() {
        results.push(
            KrmResult::info(
                "plan: announcer cilium applies this in two phases: prepare (speaker stopped, pools, Service \
                 annotations, Cilium values) then cutover (L2 policies, MetalLB removed)",
            )
            .tag("plan", "true"),
        );
    }
    for edit in outcome.edits {
        let r = match edit {
            Edit::Add { item } => {
                let mut shown = item.clone();
                strip_orchestrator(&mut shown);
                KrmResult::info(format!(
                    "plan: announcer cilium would add {} {}",
                    item.kind(),
                    item.name()
                ))
                .about_ref(item.resource_ref())
                .field("spec")
                .proposed(shown.get("spec").cloned().unwrap_or(Value::Null))
            }
            // Removals and changes are already described, item by item, by the results above.
            Edit::Replace { .. } | Edit::Remove { .. } => continue,
        };
        results.push(r.tag("plan", "true"));
    }
    Outcome {
        edits: Vec::new(),
        results,
    }
}

/// Info result describing a Service rewrite: the keys added, changed and removed.
fn service_change(old: &Value, new: &Value, phase: Phase, pool_label: &str) -> KrmResult {
    let map = |v: &Value, key: &str| -> BTreeMap<String, String> {
        v.get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_mapping)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())))
            .filter(|(k, _)| !is_orchestrator_annotation(k))
            .collect()
    };
    let (old_ann, new_ann) = (map(old, "annotations"), map(new, "annotations"));
    let mut set = Mapping::new();
    for (k, v) in &new_ann {
        if old_ann.get(k) != Some(v) {
            set.insert(k.as_str().into(), v.as_str().into());
        }
    }
    let removed: Vec<&str> = old_ann
        .keys()
        .filter(|k| !new_ann.contains_key(*k))
        .map(String::as_str)
        .collect();
    let mut parts = Vec::new();
    if !set.is_empty() {
        parts.push(format!(
            "annotations set: {}",
            set.keys()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(label) = map(new, "labels").get(pool_label)
        && map(old, "labels").get(pool_label) != Some(label)
    {
        parts.push(format!("label {pool_label}={label}"));
    }
    if !removed.is_empty() {
        parts.push(format!(
            "MetalLB annotations removed: {}",
            removed.join(", ")
        ));
    } else if phase == Phase::Prepare {
        parts.push("MetalLB annotations kept until phase cutover".into());
    }
    let r = KrmResult::info(format!(
        "Service rewritten for Cilium LB-IPAM: {}",
        parts.join("; ")
    ))
    .about(old)
    .field("metadata.annotations");
    if set.is_empty() {
        r
    } else {
        r.proposed(Value::Mapping(set))
    }
}

fn strip_orchestrator(item: &mut Value) {
    if let Some(meta) = item.get_mut("metadata").and_then(Value::as_mapping_mut) {
        let mut empty = false;
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_mapping_mut) {
            ann.retain(|k, _| !k.as_str().is_some_and(is_orchestrator_annotation));
            empty = ann.is_empty();
        }
        if empty {
            meta.remove("annotations");
        }
    }
}

/// One run of the cutover for a phase: collects edits per item so several changes to one item
/// compose (each input item is edited at most once in the final [`Outcome`]).
struct Cutover<'a> {
    spec: &'a LoadBalancerAnnouncerSpec,
    phase: Phase,
    plan_mode: bool,
    inv: &'a Inventory,
    items: &'a [Value],
    fc: Option<&'a Value>,
    changed: BTreeMap<usize, Option<Value>>,
    added: Vec<Value>,
    results: Vec<KrmResult>,
}

impl<'a> Cutover<'a> {
    fn new(
        spec: &'a LoadBalancerAnnouncerSpec,
        phase: Phase,
        plan_mode: bool,
        inv: &'a Inventory,
        items: &'a [Value],
        fc: Option<&'a Value>,
    ) -> Self {
        Cutover {
            spec,
            phase,
            plan_mode,
            inv,
            items,
            fc,
            changed: BTreeMap::new(),
            added: Vec::new(),
            results: Vec::new(),
        }
    }

    fn about_config(&self, r: KrmResult) -> KrmResult {
        match self.fc {
            Some(fc) => r.about(fc),
            None => r,
        }
    }

    /// The current (possibly already edited) version of an item.
    fn current(&self, index: usize) -> Option<&Value> {
        match self.changed.get(&index) {
            Some(v) => v.as_ref(),
            None => self.items.get(index),
        }
    }

    fn replace(&mut self, index: usize, item: Value) {
        self.changed.insert(index, Some(item));
    }

    fn remove(&mut self, index: usize, why: &str) {
        self.changed.insert(index, None);
        self.results.push(
            KrmResult::info(format!(
                "removed {} {}: {why}",
                self.items[index].kind(),
                self.items[index].name()
            ))
            .about(&self.items[index]),
        );
    }

    fn run(mut self) -> Outcome {
        let Some(version) = self.version() else {
            return self.finish();
        };
        for &i in &self.inv.bgp {
            self.results.push(
                KrmResult::error(
                    "MetalLB BGP configuration found: BGP is out of scope of the L2 cutover (Cilium's BGP \
                     control plane is configured differently); migrate or remove BGP first",
                )
                .about(&self.items[i])
                .field("kind"),
            );
        }
        let mut tr = translate::Translated::default();
        translate::pools(
            self.inv,
            self.items,
            &version,
            &self.spec.pool_label,
            &mut tr,
            &mut self.results,
        );
        translate::policies(
            self.inv,
            self.items,
            &self.spec.pool_label,
            &mut tr,
            &mut self.results,
        );
        let plans = services::plan(self.inv, self.items, &version, &mut self.results);
        self.cilium_values(&version, plans.len(), &tr);
        self.speaker();
        // Generated objects.
        let pools: Vec<cilium::IpPool> = tr.pools.iter().map(|g| g.object.clone()).collect();
        let policies: Vec<cilium::L2Policy> =
            tr.policies.iter().map(|g| g.object.clone()).collect();
        let dir = self.output_dir();
        for (i, p) in tr.pools.iter().enumerate() {
            self.emit(
                &p.object,
                p.source,
                &format!("{dir}cilium-loadbalancerippools.yaml"),
                i,
            );
        }
        if self.phase == Phase::Cutover {
            for (i, p) in tr.policies.iter().enumerate() {
                self.emit(
                    &p.object,
                    p.source,
                    &format!("{dir}cilium-l2announcementpolicies.yaml"),
                    i,
                );
            }
        }
        // Services.
        let pool_label = self.spec.pool_label.clone();
        for plan in &plans {
            if let Some(new) =
                services::rewrite(&self.items[plan.index], plan, self.phase, &pool_label)
            {
                self.results.push(service_change(
                    &self.items[plan.index],
                    &new,
                    self.phase,
                    &pool_label,
                ));
                self.replace(plan.index, new);
            }
        }
        // Coverage, always against the final state (Cutover rewrite, all policies).
        let items = self.items;
        let after = |plan: &services::ServicePlan| {
            services::rewrite(&items[plan.index], plan, Phase::Cutover, &pool_label)
                .unwrap_or_else(|| items[plan.index].clone())
        };
        let proof = coverage::prove(self.inv, self.items, &plans, &pools, &policies, &after);
        self.results.extend(proof);
        if self.phase == Phase::Cutover {
            self.remove_metallb();
        } else {
            self.results.push(KrmResult::info(
                "phase prepare: apply and verify (MetalLB speaker gone, pools present, Service IPs unchanged), \
                 then run again with phase: cutover",
            ));
        }
        self.finish()
    }

    fn finish(self) -> Outcome {
        let mut edits: Vec<Edit> = self
            .changed
            .into_iter()
            .map(|(index, v)| match v {
                Some(item) => Edit::Replace { index, item },
                None => Edit::Remove { index },
            })
            .collect();
        edits.extend(self.added.into_iter().map(|item| Edit::Add { item }));
        Outcome {
            edits,
            results: self.results,
        }
    }

    /// The Cilium version, from the config or the Cilium release; reports errors for versions
    /// the cutover cannot target.
    fn version(&mut self) -> Option<CiliumVersion> {
        if self.inv.cilium.len() > 1 {
            for r in &self.inv.cilium[1..] {
                self.results.push(
                    KrmResult::error("more than one Cilium release among the items")
                        .about(&self.items[r.index])
                        .field("spec.chart"),
                );
            }
        }
        let release = self.inv.cilium.first();
        let (text, source) = match (&self.spec.cilium_version, release) {
            (Some(v), _) => (v.clone(), None),
            (None, Some(r)) => match &r.version {
                Some(v) => (v.clone(), Some(r.index)),
                None => (String::new(), Some(r.index)),
            },
            (None, None) => (String::new(), None),
        };
        let about = |r: KrmResult, this: &Self| match source {
            Some(i) => {
                r.about(&this.items[i])
                    .field(if this.items[i].group() == "helm.cattle.io" {
                        "spec.version"
                    } else {
                        "spec.chart.spec.version"
                    })
            }
            None => this.about_config(r).field("spec.ciliumVersion"),
        };
        let Some(version) = CiliumVersion::parse(&text) else {
            let r = KrmResult::error(format!(
                "cannot tell the Cilium version{}: set ciliumVersion (it decides cilium.io/v2 vs v2alpha1 pools, \
                 annotation keys and known regressions)",
                if text.is_empty() {
                    String::new()
                } else {
                    format!(" from {text:?}")
                }
            ));
            let r = about(r, self);
            self.results.push(r);
            return None;
        };
        if !version.has_l2_announcements() {
            let r = about(
                KrmResult::error(format!("Cilium {version} has no L2 announcements (1.14+)")),
                self,
            );
            self.results.push(r);
            return None;
        }
        match version.is_broken_for_l2() {
            Some(true) => {
                let r = about(
                    KrmResult::error(format!(
                        "Cilium {version} has L2 announcement/LB-IPAM regressions on the upgrade path \
                         (cilium/cilium#44222, #44221, #44430): use 1.18.x or 1.19.2+"
                    ))
                    .current(text.as_str()),
                    self,
                );
                self.results.push(r);
            }
            None => {
                let r = about(
                    KrmResult::warning(format!(
                        "Cilium {version} without a patch number: 1.19.0 and 1.19.1 carry L2/LB-IPAM regressions; make sure it is 1.19.2+"
                    )),
                    self,
                );
                self.results.push(r);
            }
            Some(false) => {}
        }
        Some(version)
    }

    fn output_dir(&self) -> String {
        self.inv
            .pools
            .first()
            .and_then(|p| self.items[p.index].file_ref())
            .and_then(|f| f.path.rsplit_once('/').map(|(d, _)| format!("{d}/")))
            .unwrap_or_default()
    }

    /// Adds a generated object, or replaces the copy an earlier run generated.
    fn emit<T: serde::Serialize>(&mut self, object: &T, source: usize, path: &str, index: usize) {
        let mut value = match serde_yaml::to_value(object) {
            Ok(v) => v,
            Err(e) => {
                self.results.push(
                    KrmResult::error(format!(
                        "internal error: cannot serialize a generated object: {e}"
                    ))
                    .about(&self.items[source]),
                );
                return;
            }
        };
        let key = (value.kind().to_owned(), value.name().to_owned());
        if let Some(&existing) = self.inv.cilium_objects.get(&key) {
            let old = &self.items[existing];
            if old.label(MANAGED_BY.0) != Some(MANAGED_BY.1) {
                self.results.push(
                    KrmResult::error(format!(
                        "{} {} already exists and was not generated by cutover: rename or remove it",
                        key.0, key.1
                    ))
                    .about(old)
                    .field("metadata.name"),
                );
                return;
            }
            let mut stripped = old.clone();
            strip_orchestrator(&mut stripped);
            if stripped == value {
                return;
            }
            // Keep the orchestrator annotations of the existing copy (its file and index).
            if let Some(ann) = old
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(Value::as_mapping)
            {
                for (k, v) in ann {
                    if let Some(k) = k.as_str().filter(|k| is_orchestrator_annotation(k))
                        && let Some(meta) =
                            value.get_mut("metadata").and_then(Value::as_mapping_mut)
                    {
                        let anns = meta
                            .entry("annotations".into())
                            .or_insert_with(|| Value::Mapping(Mapping::new()));
                        if let Some(anns) = anns.as_mapping_mut() {
                            anns.insert(k.into(), v.clone());
                        }
                    }
                }
            }
            self.results.push(
                KrmResult::info(format!("{} {} regenerated", key.0, key.1))
                    .about(old)
                    .field("spec"),
            );
            self.replace(existing, value);
            return;
        }
        set_file(&mut value, path, index);
        self.results.push(
            KrmResult::info(format!(
                "{} {} added, translated from {} {}",
                key.0,
                key.1,
                self.items[source].kind(),
                self.items[source].name()
            ))
            .about(&self.items[source]),
        );
        self.added.push(value);
    }

    fn cilium_values(
        &mut self,
        version: &CiliumVersion,
        services: usize,
        tr: &translate::Translated,
    ) {
        let interfaces: Vec<(usize, Option<Vec<String>>)> = self
            .inv
            .adverts
            .iter()
            .map(|a| {
                (
                    a.index,
                    (!a.spec.interfaces.is_empty()).then(|| a.spec.interfaces.clone()),
                )
            })
            .collect();
        let _ = tr;
        let Some(release) = self.inv.cilium.first() else {
            // No resourceRef: the same warning must read the same whichever config form is used.
            self.results.push(KrmResult::warning(format!(
                "no Cilium HelmRelease or HelmChart among the items: set these Cilium values yourself before \
                 phase cutover: kubeProxyReplacement=true, l2announcements.enabled=true, \
                 k8sClientRateLimit.qps>={} and burst>={} ({services} LoadBalancer Services, one lease each), \
                 and devices covering the announced interfaces",
                version.default_rate_limit().0 + (services as u64).div_ceil(self.renew_secs()),
                2 * (version.default_rate_limit().0 + (services as u64).div_ceil(self.renew_secs()))
            )));
            return;
        };
        let Some(item) = self.current(release.index).cloned() else {
            return;
        };
        let out = values::cilium(
            &item,
            release,
            version,
            services,
            self.spec
                .lease_renew_deadline
                .as_ref()
                .map(|d| d.as_secs_ceil().max(1)),
        );
        self.results.extend(out.results);
        if let Some(new) = out.edited {
            self.replace(release.index, new);
        }
        if let Some(devices) = out.devices {
            for (index, ifs) in interfaces {
                let missing: Vec<String> = match &ifs {
                    None => vec!["(all interfaces)".into()],
                    Some(list) => list
                        .iter()
                        .filter(|i| !devices.iter().any(|d| values::device_covers(d, i)))
                        .cloned()
                        .collect(),
                };
                if !missing.is_empty() {
                    self.results.push(
                        KrmResult::warning(format!(
                            "Cilium answers ARP only on its devices ({}), but this advertisement announces on {}: \
                             add the uplink interfaces to Cilium's devices (kube-ovn variant) or nothing will be announced there",
                            devices.join(" "),
                            missing.join(", ")
                        ))
                        .about(&self.items[index])
                        .field("spec.interfaces"),
                    );
                }
            }
        }
    }

    fn renew_secs(&self) -> u64 {
        self.spec
            .lease_renew_deadline
            .as_ref()
            .map(|d| d.as_secs_ceil().max(1))
            .unwrap_or(values::DEFAULT_RENEW_SECS)
    }

    /// Phase prepare stops the speaker; phase cutover refuses to run while it still runs.
    fn speaker(&mut self) {
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
            let r = KrmResult::warning(
                "no MetalLB installation (HelmRelease, HelmChart, Flux Kustomization or speaker DaemonSet) \
                 among the items: stop the MetalLB speaker yourself before Cilium L2 policies are applied, \
                 or both will answer ARP",
            );
            let r = if self.phase == Phase::Prepare && !self.plan_mode {
                self.about_config(KrmResult {
                    severity: Severity::Error,
                    message: "phase prepare stops the MetalLB speaker, but no MetalLB installation (HelmRelease, \
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
            return;
        }
        for inst in &self.inv.install {
            let item = &self.items[inst.index];
            match self.phase {
                Phase::Prepare => {
                    if let Some((new, field, what)) = values::stop_speaker(item, inst) {
                        self.results.push(
                            KrmResult::info(format!("MetalLB speaker stopped: {what}"))
                                .about(item)
                                .field(field),
                        );
                        self.replace(inst.index, new);
                    }
                }
                Phase::Cutover => {
                    if !self.plan_mode && values::speaker_stopped(item, inst) == Some(false) {
                        self.results.push(
                            KrmResult::error(
                                "the MetalLB speaker still runs: a single apply creates the Cilium L2 policies before it \
                                 prunes MetalLB, so both would answer ARP. Run phase prepare first, apply it, then phase cutover",
                            )
                            .about(item)
                            .field("spec"),
                        );
                    }
                }
            }
        }
    }

    /// Phase cutover: MetalLB objects and installation leave; dependsOn entries on them go too.
    fn remove_metallb(&mut self) {
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
            let why = match inst.kind {
                InstallKind::HelmRelease { .. } => "MetalLB Helm release; Flux uninstalls MetalLB",
                InstallKind::HelmChart => "MetalLB HelmChart; helm-controller uninstalls MetalLB",
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
            };
            if matches!(
                inst.kind,
                InstallKind::HelmRelease { .. } | InstallKind::FluxKustomization
            ) {
                removed_flux.push((
                    item.kind().to_owned(),
                    item.namespace().unwrap_or("").to_owned(),
                    item.name().to_owned(),
                ));
            }
            self.remove(inst.index, why);
        }
        // Flux objects that depend on a removed one would wait forever.
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

#[cfg(test)]
mod tests;

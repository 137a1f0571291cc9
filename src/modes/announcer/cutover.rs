//! One run of the `cilium` cutover for a phase: translation, values, generated objects, the
//! coverage proof, and (in `metallb.rs`) the MetalLB speaker and removal.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::config::{LoadBalancerAnnouncerSpec, Phase};
use super::inputs::{AboutService, Inventory, MANAGED_BY};
use super::report::{service_change, strip_orchestrator};
use super::version::CiliumVersion;
use super::{cilium, coverage, policies, services, translate, values};
use crate::krm::annotations::is_orchestrator_annotation;
use crate::krm::object::set_file;
use crate::krm::{Edit, KrmObject, KrmResult, Outcome, PatchOp};

/// One run of the cutover for a phase: collects edits per item so several changes to one item
/// compose (each input item is edited at most once in the final [`Outcome`]).
pub(super) struct Cutover<'a> {
    pub(super) spec: &'a LoadBalancerAnnouncerSpec,
    pub(super) phase: Phase,
    pub(super) plan_mode: bool,
    pub(super) inv: &'a Inventory,
    pub(super) items: &'a [Value],
    pub(super) fc: Option<&'a Value>,
    pub(super) changed: BTreeMap<usize, Option<Value>>,
    /// Services rewritten in place (see [`services::patch`]), kept apart from `changed` so the
    /// Services need not be copied.
    pub(super) patched: BTreeMap<usize, Vec<PatchOp>>,
    pub(super) added: Vec<Value>,
    /// `(kind, name)` of every object generated in this run, to catch name collisions.
    pub(super) generated: std::collections::BTreeSet<(String, String)>,
    pub(super) results: Vec<KrmResult>,
}

impl<'a> Cutover<'a> {
    pub(super) fn new(
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
            patched: BTreeMap::new(),
            added: Vec::new(),
            generated: std::collections::BTreeSet::new(),
            results: Vec::new(),
        }
    }

    pub(super) fn about_config(&self, r: KrmResult) -> KrmResult {
        match self.fc {
            Some(fc) => r.about(fc),
            None => r,
        }
    }

    /// The current (possibly already edited) version of an item.
    pub(super) fn current(&self, index: usize) -> Option<&Value> {
        match self.changed.get(&index) {
            Some(v) => v.as_ref(),
            None => self.items.get(index),
        }
    }

    pub(super) fn replace(&mut self, index: usize, item: Value) {
        self.changed.insert(index, Some(item));
    }

    pub(super) fn remove(&mut self, index: usize, why: &str) {
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

    pub(super) fn run(mut self) -> Outcome {
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
        policies::policies(
            self.inv,
            self.items,
            &self.spec.pool_label,
            &mut tr,
            &mut self.results,
        );
        if tr.too_large {
            // The translation stopped at its size bound (see translate::MAX_SELECTOR_POOL_NAMES):
            // nothing to prove or emit.
            return self.finish();
        }
        self.ipv6(&version);
        let plans = services::plan(self.inv, &version, &mut self.results);
        self.cilium_values(&version, plans.len());
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
        // Services: each is rewritten, then checked by the coverage proof (always against the
        // final state: all pools and policies, and the labels, which every phase writes the same
        // way, read back from the Service's patch), and its plan dropped.
        let pool_label = self.spec.pool_label.clone();
        let mut proof = coverage::Proof::new(self.inv, self.items, &pools, &policies);
        let mut rewritten = 0usize;
        for plan in plans {
            let svc = &self.inv.services[plan.service];
            let ops = services::patch(svc, &plan, self.phase, &pool_label);
            if let Some(ops) = &ops {
                rewritten += 1;
                if rewritten <= coverage::MAX_SERVICE_LINES {
                    self.results.push(
                        service_change(&svc.meta(), ops, self.phase, &pool_label).about_svc(svc),
                    );
                }
            }
            let after = match (&ops, self.changed.get(&plan.index)) {
                (Some(ops), _) => services::labels_after(svc, ops),
                (None, Some(Some(v))) => super::selector::labels_of(v),
                _ => svc.labels(),
            };
            proof.check(&plan, after);
            if let Some(mut ops) = ops {
                ops.shrink_to_fit();
                self.patched.insert(plan.index, ops);
            }
        }
        if rewritten > coverage::MAX_SERVICE_LINES {
            self.results.push(KrmResult::info(format!(
                "{rewritten} Services rewritten for Cilium LB-IPAM ({} listed above)",
                coverage::MAX_SERVICE_LINES
            )));
        }
        self.results.extend(proof.finish());
        if self.phase == Phase::Cutover {
            self.remove_metallb();
        } else if self.phase == Phase::Prepare {
            self.results.push(KrmResult::info(
                "phase prepare: apply, check that every Service kept its IP and Cilium imported it \
                 (IPAMRequestSatisfied), then run again with phase: stop-speaker",
            ));
        } else {
            self.results.push(KrmResult::info(
                "phase stop-speaker: apply, wait until no speaker pod runs, then apply phase: cutover at once \
                 (nobody answers ARP in between)",
            ));
        }
        self.finish()
    }

    fn finish(self) -> Outcome {
        let mut patched = self.patched;
        let mut edits: Vec<Edit> = self
            .changed
            .into_iter()
            .map(|(index, v)| match (v, patched.remove(&index)) {
                // Each item is edited once: a patch of a replaced item goes on the replacement.
                (Some(mut item), ops) => {
                    for op in ops.iter().flatten() {
                        op.apply_to(&mut item);
                    }
                    Edit::Replace { index, item }
                }
                (None, _) => Edit::Remove { index },
            })
            .collect();
        edits.extend(
            patched
                .into_iter()
                .map(|(index, ops)| Edit::Patch { index, ops }),
        );
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
        if !self.generated.insert(key.clone()) {
            self.results.push(
                KrmResult::error(format!(
                    "two MetalLB objects translate to the same {} {} (Cilium objects are cluster-scoped): \
                     rename one of them",
                    key.0, key.1
                ))
                .about(&self.items[source])
                .field("metadata.name"),
            );
            return;
        }
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

    fn cilium_values(&mut self, version: &CiliumVersion, services: usize) {
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

    /// MetalLB answers NDP for IPv6 addresses of advertised pools; Cilium's L2 announcer only
    /// does from 1.19 (cilium/cilium#39648), so below that the IPv6 addresses would go dark.
    fn ipv6(&mut self, version: &CiliumVersion) {
        let mut sink = Vec::new();
        let known = policies::pool_names(self.inv);
        let advertised: std::collections::BTreeSet<String> = self
            .inv
            .adverts
            .iter()
            .filter_map(|ad| {
                policies::advertised_pools(ad, self.inv, &known, &self.items[ad.index], &mut sink)
            })
            .flatten()
            .collect();
        for pool in &self.inv.pools {
            let Some(i) = pool
                .addresses
                .iter()
                .position(|a| a.interval().family == super::ipam::Family::V6)
            else {
                continue;
            };
            if !advertised.contains(&pool.name) {
                continue;
            }
            let item = &self.items[pool.index];
            let field = format!("spec.addresses[{i}]");
            self.results.push(if version.announces_ipv6() {
                KrmResult::warning(
                    "IPv6 addresses are announced by NDP: make sure Cilium's IPv6 NDP announcements are enabled \
                     (agent option enable-ipv6-ndp; see cilium/cilium#44311 on solicited-node multicast)",
                )
                .about(item)
                .field(field)
            } else {
                KrmResult::error(format!(
                    "MetalLB answers NDP for this pool's IPv6 addresses; Cilium {version} L2 announcements \
                     are IPv4 only (NDP arrived in 1.19), so those Services would lose IPv6 reachability"
                ))
                .about(item)
                .field(field)
            });
        }
    }

    fn renew_secs(&self) -> u64 {
        self.spec
            .lease_renew_deadline
            .as_ref()
            .map(|d| d.as_secs_ceil().max(1))
            .unwrap_or(values::DEFAULT_RENEW_SECS)
    }
}

//! One run of the `cilium` cutover for a phase: translation, values, generated objects, the
//! coverage proof, and (in `metallb.rs`) the MetalLB speaker and removal.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::Check;
use super::config::{LoadBalancerAnnouncerSpec, Phase};
use super::inventory::{Inventory, MANAGED_BY};
use super::report::{service_change, strip_orchestrator};
use super::service::AboutService;
use super::version::CiliumVersion;
use super::{cilium, coverage, policies, services, translate, values, values_annotations};
use crate::krm::annotations::is_orchestrator_annotation;
use crate::krm::names::{OBJECT_NAME_RULE, is_object_name};
use crate::krm::object::set_file;
use crate::krm::{Edit, KrmObject, KrmResult, Outcome, PatchOp, Severity};

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
    /// Phase prepare found the speaker already stopped (a `phase-order` warning): the next step
    /// is phase cutover, not stop-speaker.
    pub(super) speaker_stopped_before: bool,
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
            speaker_stopped_before: false,
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

    /// Tags the results pushed since `from` with `check` (unless they carry one) and, for a step
    /// that edits for the phase, with `phase` too: `Some(true)` on every result, `Some(false)`
    /// on its infos (the edits; its errors and warnings hold in any phase).
    fn tag_step(&mut self, from: usize, check: Check, phase: Option<bool>) {
        let name = self.phase.as_str();
        for r in &mut self.results[from..] {
            r.tags.entry("check".into()).or_insert_with(|| check.into());
            let tagged = match phase {
                Some(all) => all || r.severity == Severity::Info,
                None => false,
            };
            if tagged {
                r.tags
                    .entry("phase".into())
                    .or_insert_with(|| name.to_owned());
            }
        }
    }

    /// The cutover as a pipeline: the config and Cilium's version, the translation of MetalLB's
    /// pools and L2 advertisements, then the plan of every Service and the edits.
    pub(super) fn run(mut self) -> Outcome {
        if !is_label_key(&self.spec.pool_label) {
            let r = KrmResult::error(
                "poolLabel is not a label key: an optional DNS subdomain prefix (at most 253 characters) and \
                 '/', then a name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a \
                 letter or digit (the API server refuses any other key on a Service, and every generated \
                 selector names it)",
            );
            let r = self
                .about_config(r)
                .field("spec.poolLabel")
                .tag("check", Check::Input);
            self.results.push(r);
            return self.finish();
        }
        let Some(version) = self.version() else {
            self.tag_step(0, Check::CiliumVersion, None);
            return self.finish();
        };
        self.tag_step(0, Check::CiliumVersion, None);
        let tr = self.translate(&version);
        if tr.too_large {
            // The translation stopped at its size bound (see translate::MAX_SELECTOR_POOL_NAMES):
            // nothing to prove or emit.
            return self.finish();
        }
        self.plan_and_edit(&version, &tr);
        self.finish()
    }

    /// MetalLB's BGP configuration refused, its pools and L2 advertisements translated, and the
    /// preconditions of the transitions checked.
    fn translate(&mut self, version: &CiliumVersion) -> translate::Translated {
        let mark = self.results.len();
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
        self.tag_step(mark, Check::Bgp, None);
        let mut tr = translate::Translated::default();
        let mark = self.results.len();
        translate::pools(
            self.inv,
            self.items,
            version,
            &self.spec.pool_label,
            &mut tr,
            &mut self.results,
        );
        self.tag_step(mark, Check::Pools, None);
        let mark = self.results.len();
        policies::policies(
            self.inv,
            self.items,
            &self.spec.pool_label,
            &mut tr,
            &mut self.results,
        );
        self.tag_step(mark, Check::L2Policies, None);
        let mark = self.results.len();
        self.preconditions(tr.pools.len(), version);
        self.tag_step(mark, Check::Transitions, None);
        tr
    }

    /// Every Service planned and the values checked, then the edits: the generated objects, the
    /// Services rewritten under the coverage proof, and MetalLB removed (phase `cutover`) or
    /// the next step said.
    fn plan_and_edit(&mut self, version: &CiliumVersion, tr: &translate::Translated) {
        let mark = self.results.len();
        self.ipv6(version);
        self.tag_step(mark, Check::Ipv6, None);
        let protocol_value = self.protocol_value();
        let mark = self.results.len();
        let plans = services::plan(
            self.inv,
            version,
            protocol_value,
            self.spec.accept_local_traffic_policy_change,
            &mut self.results,
        );
        self.tag_step(mark, Check::Services, None);
        // Chart values first: the Services charts render in the cluster hold leases too.
        let unseen = self.values_annotations(version);
        let mark = self.results.len();
        self.cilium_values(version, plans.len() + unseen);
        self.tag_step(mark, Check::CiliumValues, Some(false));
        let mark = self.results.len();
        self.speaker();
        self.tag_step(mark, Check::Speaker, Some(true));
        // Generated objects.
        let pools: Vec<cilium::IpPool> = tr.pools.iter().map(|g| g.object.clone()).collect();
        let policies: Vec<cilium::L2Policy> =
            tr.policies.iter().map(|g| g.object.clone()).collect();
        let mark = self.results.len();
        self.emit_generated(tr);
        self.tag_step(mark, Check::GeneratedObjects, Some(false));
        let mut proof = coverage::Proof::new(self.inv, self.items, &pools, &policies);
        proof.unseen(unseen);
        let mark = self.results.len();
        self.rewrite_services(plans, &mut proof);
        self.tag_step(mark, Check::ServiceRewrite, Some(false));
        self.results.extend(proof.finish());
        let mark = self.results.len();
        if self.phase == Phase::Cutover {
            self.remove_metallb();
            self.tag_step(mark, Check::Removal, Some(false));
        } else {
            let next = self.next_step();
            self.results.push(KrmResult::info(next));
            self.tag_step(mark, Check::NextStep, Some(true));
        }
    }

    /// Emits the generated Cilium pools (every phase) and L2 announcement policies (phase
    /// `cutover`) into the output directory.
    fn emit_generated(&mut self, tr: &translate::Translated) {
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
    }

    /// Services: each is rewritten, then checked by the coverage proof (always against the
    /// final state: all pools and policies, and the labels, which every phase writes the same
    /// way, read back from the Service's patch), and its plan dropped.
    fn rewrite_services(&mut self, plans: Vec<services::ServicePlan>, proof: &mut coverage::Proof) {
        let pool_label = self.spec.pool_label.clone();
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
    }

    /// What the operator does after applying phase prepare or stop-speaker. When the phase was
    /// run out of order (a `phase-order` warning) the usual next phase would be wrong: it says
    /// what the warning says instead.
    fn next_step(&self) -> String {
        let phase = self.phase.as_str();
        if super::generated_l2_policy(self.inv, self.items).is_some() {
            format!(
                "phase {phase} after phase cutover: Cilium already answers ARP, there is no next phase to run. \
                 To stay on Cilium, run phase: cutover again; to hand the IPs back to MetalLB, revert the cutover \
                 change and keep the speaker stopped until the policies are gone (see the runbook's rollback)"
            )
        } else if self.speaker_stopped_before {
            "phase prepare with the MetalLB speaker already stopped: do not run phase stop-speaker next. \
             Run again with phase: cutover and apply it now (nobody answers ARP until then), or revert the \
             stop-speaker change to give MetalLB the IPs back"
                .into()
        } else if self.phase == Phase::Prepare {
            "phase prepare: apply, check that every Service kept its IP and Cilium imported it \
             (IPAMRequestSatisfied), then run again with phase: stop-speaker"
                .into()
        } else {
            "phase stop-speaker: apply, wait until no speaker pod runs, then apply phase: cutover at once. \
             Nobody answers ARP in between: a Linux client whose neighbour entry for an IP is stale \
             drops its traffic 8 s after it next sends (5 s delay_first_probe_time, then 3 unicast probes \
             1 s apart), so keep the window from this apply to Cilium's first gratuitous ARP under 5 s \
             (runbook: the ARP-less window)"
                .into()
        }
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
        // The input's names are object names, but a policy's `-N` suffix can lengthen one past
        // the API server's limit, which would refuse the apply.
        if !is_object_name(&key.1) {
            self.results.push(
                KrmResult::error(format!(
                    "the {} generated from this object would be named {:?} ({} characters), \
                     which is not {}: shorten the object's name",
                    key.0,
                    key.1,
                    key.1.len(),
                    OBJECT_NAME_RULE
                ))
                .about(&self.items[source])
                .field("metadata.name"),
            );
            return;
        }
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

    /// Translates MetalLB annotations in the chart values of every HelmRelease and Package that
    /// is not the MetalLB installation; returns how many rendered Services they belong to.
    fn values_annotations(&mut self, version: &CiliumVersion) -> usize {
        let keys = services::CiliumKeys::for_version(version);
        let mut services = 0;
        for &index in &self.inv.value_carriers {
            if self.inv.install.iter().any(|i| i.index == index) {
                continue;
            }
            let Some(item) = self.current(index) else {
                continue;
            };
            let out = values_annotations::translate(item, &keys, self.phase, &self.spec.pool_label);
            services += out.services;
            self.results.extend(out.results);
            if let Some(new) = out.edited {
                self.replace(index, new);
            }
        }
        services
    }

    pub(super) fn renew_secs(&self) -> u64 {
        self.spec
            .lease_renew_deadline
            .as_ref()
            .map(|d| d.as_secs_ceil().max(1))
            .unwrap_or(values::DEFAULT_RENEW_SECS)
    }
}

/// Whether `key` is a label key (k8s.io/apimachinery `pkg/util/validation/validation.go`
/// `IsQualifiedName`): `[prefix/]name`, the prefix a DNS-1123 subdomain of at most 253
/// characters, the name at most 63 characters of `[A-Za-z0-9_.-]` starting and ending
/// alphanumeric.
fn is_label_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let alnum = |c: &u8| c.is_ascii_alphanumeric();
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && name.as_bytes().first().is_some_and(alnum)
        && name.as_bytes().last().is_some_and(alnum);
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                let b = part.as_bytes();
                !b.is_empty()
                    && b.iter()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                    && b.first().is_some_and(|c| c.is_ascii_alphanumeric())
                    && b.last().is_some_and(|c| c.is_ascii_alphanumeric())
            })
    });
    name_ok && prefix_ok
}

#[cfg(test)]
mod label_key_tests {
    use super::is_label_key;

    #[test]
    fn label_keys_as_the_api_server_reads_them() {
        for ok in ["cutover.dev/address-pool", "pool", "a.b-c/x_y.z", "x/Y9"] {
            assert!(is_label_key(ok), "{ok}");
        }
        let long_name = "a".repeat(64);
        let long_prefix = format!("{}/x", "a".repeat(254));
        for bad in [
            "",
            "/x",
            "x/",
            "###",
            "a b",
            "-x",
            "x-",
            "Cutover.dev/x",
            "a/b/c",
            "\\t",
            long_name.as_str(),
            long_prefix.as_str(),
        ] {
            assert!(!is_label_key(bad), "{bad}");
        }
    }
}

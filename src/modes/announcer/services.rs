//! Service rewrite: MetalLB annotations → Cilium LB-IPAM annotations plus the pool label, edited in
//! place on the Service's YAML so everything else survives byte for byte.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::config::Phase;
use super::inventory::{Inventory, METALLB_CLASS};
use super::ipam::parse_ip;
use super::service::{AboutService, LbService};
use super::sharing;
use super::version::CiliumVersion;
use crate::krm::{KrmResult, PatchOp};

/// Current MetalLB annotation prefix (v0.14.9+).
pub const METALLB_PREFIX: &str = "metallb.io/";
/// Deprecated MetalLB annotation prefix, still read by MetalLB.
pub const METALLB_OLD_PREFIX: &str = "metallb.universe.tf/";
/// Services with this label belong to another service proxy; Cilium ignores them.
pub const SERVICE_PROXY_NAME: &str = "service.kubernetes.io/service-proxy-name";
/// Cilium annotation that permits sharing between ETP=Local Services with different pods.
pub const PERMIT_DIFFERENT_PODS: &str = "lbipam.cilium.io/sharing-permit-different-pods";

/// Cilium LB-IPAM annotation keys for one Cilium version.
#[derive(Debug, Clone, Copy)]
pub struct CiliumKeys {
    /// Requested IPs.
    pub ips: &'static str,
    /// Sharing key.
    pub sharing_key: &'static str,
    /// Namespaces allowed to share.
    pub cross_namespace: &'static str,
}

impl CiliumKeys {
    /// `lbipam.cilium.io/*` from 1.16, the `io.cilium/lb-ipam-*` aliases before.
    pub fn for_version(v: &CiliumVersion) -> CiliumKeys {
        if v.annotation_prefix_is_new() {
            CiliumKeys {
                ips: "lbipam.cilium.io/ips",
                sharing_key: "lbipam.cilium.io/sharing-key",
                cross_namespace: "lbipam.cilium.io/sharing-cross-namespace",
            }
        } else {
            CiliumKeys {
                ips: "io.cilium/lb-ipam-ips",
                sharing_key: "io.cilium/lb-ipam-sharing-key",
                cross_namespace: "io.cilium/lb-ipam-sharing-cross-namespace",
            }
        }
    }
}

/// What MetalLB does with one Service today, and what the rewrite changes.
#[derive(Debug, Clone)]
pub struct ServicePlan {
    /// Index in the items.
    pub index: usize,
    /// Position in [`Inventory::services`].
    pub service: usize,
    /// Pool the Service's IP comes from under MetalLB (requested by annotation, or the pool
    /// containing its IP); `None` = any auto-assign pool (no IP yet).
    pub pool: Option<String>,
    /// IPs: requested, else from `status.loadBalancer.ingress`.
    pub ips: Vec<String>,
    /// Value of the pool label to set.
    pub label: Option<String>,
    /// Annotations to set.
    pub add: SortedPairs,
    /// The sharing rule by which Cilium would split the Service's sharing group (see
    /// [`super::sharing`]), when it would.
    pub split: Option<&'static str>,
    /// Where `ips` come from.
    pub source: IpSource,
}

/// Where a Service's IPs are known from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpSource {
    /// Requested (`loadBalancerIPs`, `spec.loadBalancerIP`, or an earlier run's
    /// `lbipam.cilium.io/ips`): both controllers give exactly these.
    Requested,
    /// Held in the cluster: the Service item's own `status`, or the observed state.
    Live,
    /// The cluster shows the Service without an IP.
    NoneLive,
    /// Neither requested nor known: no `status` and no observed state for it.
    Unknown,
}

/// The Service's IPs and where they come from; `None` after an error on them (an entry that
/// is no IP, or a requested IP the cluster does not hold).
fn service_ips(
    inv: &Inventory,
    svc: &LbService,
    keys: &CiliumKeys,
    results: &mut Vec<KrmResult>,
) -> Option<(Vec<String>, IpSource)> {
    let (requested, field) = match metallb_annotation_key(svc, "loadBalancerIPs") {
        Some((key, text)) => (Some(split_ips(text)), format!("metadata.annotations.{key}")),
        None => match svc.kept_annotation(keys.ips) {
            Some(text) => (
                Some(split_ips(text)),
                format!("metadata.annotations.{}", keys.ips),
            ),
            None => (None, String::new()),
        },
    };
    let live: Option<Vec<String>> = match &inv.observed {
        Some(o) => o
            .service_ips(svc.namespace(), svc.name())
            .map(<[String]>::to_vec),
        None => None,
    }
    .or_else(|| svc.has_status().then(|| svc.ingress_ips()));
    let (ips, source, field) = match (requested.filter(|r| !r.is_empty()), svc.spec_lb_ip()) {
        (Some(r), _) => (r, IpSource::Requested, field),
        (None, Some(ip)) => (
            vec![ip.to_owned()],
            IpSource::Requested,
            "spec.loadBalancerIP".to_owned(),
        ),
        (None, None) => match &live {
            Some(l) if !l.is_empty() => (
                l.clone(),
                IpSource::Live,
                "status.loadBalancer.ingress".to_owned(),
            ),
            Some(_) => (Vec::new(), IpSource::NoneLive, String::new()),
            None => (Vec::new(), IpSource::Unknown, String::new()),
        },
    };
    // Parsed once, here: a proof cannot admit an IP it cannot read.
    if let Some(bad) = ips.iter().find(|ip| parse_ip(ip).is_none()) {
        results.push(
            KrmResult::error(format!(
                "{bad:?} is not an IP address: LB-IPAM ignores it (`getSVCRequestedIPs`) and MetalLB \
                 refuses the Service, so its IP cannot be proven kept; fix the value"
            ))
            .about_svc(svc)
            .field(field)
            .current(ips.join(",")),
        );
        return None;
    }
    if source == IpSource::Requested
        && let Some(held) = live.filter(|l| !l.is_empty())
    {
        let want: std::collections::BTreeSet<&String> = ips.iter().collect();
        if held.iter().collect::<std::collections::BTreeSet<_>>() != want {
            results.push(
                KrmResult::error(format!(
                    "requests {} but the cluster gives it {}: LB-IPAM would allocate the requested IPs, so the \
                     Service's IP would change; make the request match what it holds",
                    ips.join(","),
                    held.join(",")
                ))
                .about_svc(svc)
                .field(field)
                .current(ips.join(",")),
            );
            return None;
        }
    }
    Some((ips, source))
}

/// A MetalLB annotation by suffix with the key found (current prefix first).
fn metallb_annotation_key<'a>(svc: &'a LbService, suffix: &str) -> Option<(String, &'a str)> {
    [METALLB_PREFIX, METALLB_OLD_PREFIX]
        .iter()
        .find_map(|prefix| {
            let key = format!("{prefix}{suffix}");
            svc.kept_annotation(&key).map(|v| (key, v))
        })
}

/// A small string map kept as a vector sorted by key: a plan sets one to four annotations, and
/// 10k plans each holding a `BTreeMap` node (544 bytes) were a tenth of a run's peak memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortedPairs(Vec<(String, String)>);

impl SortedPairs {
    /// Sets `key` (replacing its value if present).
    pub fn insert(&mut self, key: String, value: String) {
        match self.0.binary_search_by(|(k, _)| k.as_str().cmp(&key)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&String> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| &self.0[i].1)
    }
    /// True without entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a SortedPairs {
    type Item = (&'a String, &'a String);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, String)>,
        fn(&'a (String, String)) -> (&'a String, &'a String),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl FromIterator<(String, String)> for SortedPairs {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        let mut out = SortedPairs::default();
        for (k, v) in iter {
            out.insert(k, v);
        }
        out
    }
}

/// A MetalLB annotation by suffix: the current key first, then the deprecated one (as MetalLB
/// reads them). Returns the key found and its value.
pub fn metallb_annotation<'a>(svc: &'a LbService, suffix: &str) -> Option<&'a str> {
    svc.metallb_annotation(suffix)
}

/// True for Services MetalLB serves (type LoadBalancer, no class or MetalLB's).
pub fn served_by_metallb(svc: &LbService) -> bool {
    matches!(svc.class(), None | Some(METALLB_CLASS))
}

fn split_ips(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Plans the rewrite of every Service MetalLB serves. `protocol_value` is the Cilium Helm value
/// [`super::sharing::PROTOCOL_DIFFERENTIATION_VALUE`], when set.
pub fn plan(
    inv: &Inventory,
    version: &CiliumVersion,
    protocol_value: Option<bool>,
    accept_local: bool,
    results: &mut Vec<KrmResult>,
) -> Vec<ServicePlan> {
    let keys = CiliumKeys::for_version(version);
    let mut plans = Vec::with_capacity(inv.services.len());
    let pools: BTreeMap<&str, &super::inventory::Pool> =
        inv.pools.iter().map(|p| (p.name.as_str(), p)).collect();
    for (si, svc) in inv.services.iter().enumerate() {
        if !served_by_metallb(svc) {
            continue;
        }
        if let Some(refused) = refused(svc) {
            results.push(refused);
            continue;
        }
        let Some((ips, source)) = service_ips(inv, svc, &keys, results) else {
            continue;
        };
        let Some((pool, label)) = pool_of(inv, &pools, svc, &ips, results) else {
            continue;
        };
        let add = annotations_to_add(&keys, svc, &ips);
        if svc.etp_local() {
            results.push(local_traffic_policy(svc, accept_local));
        }
        plans.push(ServicePlan {
            index: svc.index,
            service: si,
            pool,
            ips,
            label,
            add,
            split: None,
            source,
        });
    }
    let cx = sharing::Context {
        version,
        rules: sharing::SharingRules::for_version(version),
        protocol_value,
        keys: &keys,
    };
    sharing::check(inv, &cx, &mut plans, results);
    plans
}

/// Why a Service MetalLB serves cannot be handed to Cilium at all, if it cannot.
fn refused(svc: &LbService) -> Option<KrmResult> {
    if svc.class() == Some(METALLB_CLASS) {
        let r = KrmResult::error(format!(
            "loadBalancerClass {METALLB_CLASS} is immutable and Cilium ignores Services of that class: \
             delete the Service and recreate it without loadBalancerClass (pin its IP with \
             metallb.io/loadBalancerIPs first so it keeps the address), then run cutover again"
        ));
        return Some(
            r.about_svc(svc)
                .field("spec.loadBalancerClass")
                .current(METALLB_CLASS),
        );
    }
    let proxy = svc.label(SERVICE_PROXY_NAME)?;
    let r = KrmResult::error(format!(
        "{SERVICE_PROXY_NAME}={proxy}: Cilium (its own proxy name empty) filters such Services out of \
         what LB-IPAM and the L2 announcer see, so the IP would be neither kept nor announced \
         (cozystack's cozy-proxy VM Services); move them to another announcer first"
    ));
    Some(
        r.about_svc(svc)
            .field(format!("metadata.labels.{SERVICE_PROXY_NAME}"))
            .current(proxy),
    )
}

/// The MetalLB pool a Service is served from (the one its `address-pool` annotation names, or
/// the one holding its first IP) and the pool label it must carry for Cilium (an opt-in pool's
/// name); `None`, with an error, when the annotation names a pool that is not there.
fn pool_of(
    inv: &Inventory,
    pools: &BTreeMap<&str, &super::inventory::Pool>,
    svc: &LbService,
    ips: &[String],
    results: &mut Vec<KrmResult>,
) -> Option<(Option<String>, Option<String>)> {
    if let Some(name) = metallb_annotation(svc, "address-pool") {
        if !pools.contains_key(name) {
            let why = if inv.rejected_pools.contains(name) {
                "which has an error"
            } else {
                "which is not among the items"
            };
            results.push(
                KrmResult::error(format!(
                    "address-pool names pool {name:?}, {why}: cannot tell which Cilium pool should serve the Service"
                ))
                .about_svc(svc)
                .field("metadata.annotations"),
            );
            return None;
        }
        return Some((Some(name.to_owned()), Some(name.to_owned())));
    }
    let found = ips.first().and_then(|ip| parse_ip(ip)).and_then(|ip| {
        inv.pools
            .iter()
            .find(|p| p.addresses.iter().any(|a| a.interval().contains(ip)))
    });
    // An IP in an opt-in pool needs the label: without it, Cilium's selectors would not admit
    // the Service to the pool and LB-IPAM would strip the IP.
    let label = found.filter(|p| !p.auto_assign()).map(|p| p.name.clone());
    Some((found.map(|p| p.name.clone()), label))
}

/// The Cilium annotations a Service gets: its IPs pinned, its sharing key.
fn annotations_to_add(keys: &CiliumKeys, svc: &LbService, ips: &[String]) -> SortedPairs {
    let mut add = SortedPairs::default();
    // Requested IPs are translated; IPs the cluster holds are pinned: a Service that
    // requests its IP keeps it through LB-IPAM's start-up, operator restarts and pool edits
    // (cilium/cilium#39033), and never takes another member's IP of a sharing key
    // (`satisfySpecificIPRequests` vs `satisfyGenericIPv4Requests` in
    // operator/pkg/lbipam/lbipam.go). See the transition model.
    if !ips.is_empty() {
        add.insert(keys.ips.to_owned(), ips.join(","));
    }
    if let Some(key) = metallb_annotation(svc, "allow-shared-ip") {
        add.insert(keys.sharing_key.to_owned(), key.to_owned());
    }
    add
}

/// `externalTrafficPolicy: Local`: the announcing nodes change (an error unless accepted).
fn local_traffic_policy(svc: &LbService, accept_local: bool) -> KrmResult {
    let message = "externalTrafficPolicy: Local: MetalLB announces only from nodes with a ready endpoint \
                   (`ShouldAnnounce`); Cilium L2 elects any selected node (before 1.20.2 regardless of \
                   endpoints), which then drops the traffic, so the announcing nodes change";
    if accept_local {
        KrmResult::warning(format!(
            "{message} (accepted by acceptLocalTrafficPolicyChange)"
        ))
    } else {
        KrmResult::error(format!(
            "{message}: switch the Service to externalTrafficPolicy: Cluster first, or set \
             acceptLocalTrafficPolicyChange: true to accept the change"
        ))
    }
    .about_svc(svc)
    .field("spec.externalTrafficPolicy")
    .current("Local")
}

#[cfg(test)]
fn mapping_at<'a>(root: &'a mut Value, keys: &[&str]) -> Option<&'a mut Mapping> {
    let mut cur = root.as_mapping_mut()?;
    for key in keys {
        let entry = cur
            .entry(Value::from(*key))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if !entry.is_mapping() {
            *entry = Value::Mapping(Mapping::new());
        }
        cur = entry.as_mapping_mut()?;
    }
    Some(cur)
}

/// The changes a plan makes to the Service item, as patch operations the engine applies to the
/// item in place (no copy of the Service): the pool label, the Cilium annotations, and in phase
/// `cutover` the removal of the MetalLB annotations (before it they stay: the MetalLB controller
/// still runs and must keep its view). `None` when nothing changes. The result is exactly
/// [`rewrite`]'s (checked by `patch_equals_rewrite`).
pub fn patch(
    svc: &LbService,
    plan: &ServicePlan,
    phase: Phase,
    pool_label: &str,
) -> Option<Vec<PatchOp>> {
    let mut ops = Vec::new();
    if let Some(value) = &plan.label
        && svc.label(pool_label) != Some(value.as_str())
    {
        ops.push(PatchOp::set_label(pool_label, value));
    }
    let needs_annotations = !plan.add.is_empty() || phase == Phase::Cutover;
    let mut annotation_ops = false;
    if needs_annotations {
        for (k, v) in &plan.add {
            if svc.kept_annotation(k) != Some(v.as_str()) {
                ops.push(PatchOp::set_annotation(k, v));
                annotation_ops = true;
            }
        }
        if phase == Phase::Cutover {
            for k in svc.kept_annotation_keys() {
                if k.starts_with(METALLB_PREFIX) || k.starts_with(METALLB_OLD_PREFIX) {
                    ops.push(PatchOp::remove_annotation(k));
                    annotation_ops = true;
                }
            }
        }
    }
    if ops.is_empty() {
        return None;
    }
    // `rewrite` turns an `annotations:` that is there but not a mapping (`annotations: ~`) into
    // `{}` whenever it looks at the annotations, even when it sets none.
    if needs_annotations && !annotation_ops && svc.annotations_not_mapping() {
        ops.push(PatchOp::Set {
            path: vec!["metadata".into(), "annotations".into()],
            value: Value::Mapping(Mapping::new()),
        });
    }
    Some(ops)
}

/// The Service's labels after `ops` (string values, as [`super::selector::labels_of`] reads
/// them from the patched item).
pub fn labels_after(svc: &LbService, ops: &[PatchOp]) -> super::selector::Labels {
    let mut labels = svc.labels();
    for op in ops {
        if let [m, l, key] = op.path()
            && m == "metadata"
            && l == "labels"
        {
            match op {
                PatchOp::Set { value, .. } => match value.as_str() {
                    Some(v) => labels.insert(key.to_string(), v.to_owned()),
                    None => labels.remove(&**key),
                },
                PatchOp::Remove { .. } => labels.remove(&**key),
            };
        }
    }
    labels
}

/// The item's `metadata` with only the given keys, after `ops`: what a patched item's labels or
/// annotations will be, without copying the whole item.
pub fn patched_metadata(item: &Value, keys: &[&str], ops: &[PatchOp]) -> Value {
    let mut meta = Mapping::new();
    if let Some(m) = item.get("metadata").and_then(Value::as_mapping) {
        for key in keys {
            if let Some(v) = m.get(*key) {
                meta.insert(Value::from(*key), v.clone());
            }
        }
    }
    let mut out = Value::Mapping(Mapping::from_iter([(
        Value::from("metadata"),
        Value::Mapping(meta),
    )]));
    for op in ops {
        op.apply_to(&mut out);
    }
    out
}

/// Applies a plan to a copy of the Service item: the reference [`patch`] is checked against.
#[cfg(test)]
pub fn rewrite(item: &Value, plan: &ServicePlan, phase: Phase, pool_label: &str) -> Option<Value> {
    let mut out = item.clone();
    let mut changed = false;
    if let Some(value) = &plan.label
        && let Some(labels) = mapping_at(&mut out, &["metadata", "labels"])
    {
        let v = Value::from(value.as_str());
        if labels.get(pool_label) != Some(&v) {
            labels.insert(Value::from(pool_label), v);
            changed = true;
        }
    }
    let needs_annotations = !plan.add.is_empty() || phase == Phase::Cutover;
    if needs_annotations && let Some(ann) = mapping_at(&mut out, &["metadata", "annotations"]) {
        for (k, v) in &plan.add {
            let v = Value::from(v.as_str());
            if ann.get(k.as_str()) != Some(&v) {
                ann.insert(Value::from(k.as_str()), v);
                changed = true;
            }
        }
        if phase == Phase::Cutover {
            let before = ann.len();
            ann.retain(|k, _| {
                !k.as_str().is_some_and(|k| {
                    k.starts_with(METALLB_PREFIX) || k.starts_with(METALLB_OLD_PREFIX)
                })
            });
            changed |= ann.len() != before;
        }
    }
    if !changed {
        return None;
    }
    // Do not leave an empty `annotations: {}`/`labels: {}` we created ourselves.
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_mapping_mut) {
        for key in ["annotations", "labels"] {
            let created_empty = meta
                .get(key)
                .and_then(Value::as_mapping)
                .is_some_and(Mapping::is_empty)
                && item.get("metadata").and_then(|m| m.get(key)).is_none();
            if created_empty {
                meta.remove(key);
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applying [`patch`]'s operations (computed from the [`LbService`] read from the item, as the
    /// function does) gives exactly [`rewrite`]'s item, key order included, on Services with and
    /// without labels and annotations, null ones, and in every phase. Items the Service decode
    /// rejects (a number as label value) never reach the patch.
    #[test]
    fn patch_equals_rewrite() {
        let metas = [
            "",
            "metadata: ~\n",
            "metadata: {name: s}\n",
            "metadata: {name: s, labels: ~, annotations: ~}\n",
            "metadata: {name: s, annotations: ~}\n",
            "metadata: {name: s, labels: {pool: p1}, annotations: {a: b}}\n",
            "metadata: {annotations: {metallb.io/address-pool: p1, x: y, metallb.universe.tf/allow-shared-ip: k, lbipam.cilium.io/ips: 10.0.0.1}, labels: {pool: 5}, name: s}\n",
            "metadata: {annotations: {lbipam.cilium.io/ips: '10.0.0.1', lbipam.cilium.io/sharing-key: k}, labels: {pool: p1}}\n",
        ];
        let adds = [
            BTreeMap::new(),
            BTreeMap::from([("lbipam.cilium.io/ips".to_string(), "10.0.0.1".to_string())]),
            BTreeMap::from([
                ("lbipam.cilium.io/ips".to_string(), "10.0.0.1".to_string()),
                ("lbipam.cilium.io/sharing-key".to_string(), "k".to_string()),
            ]),
        ];
        let mut read = 0;
        for meta in metas {
            let item: Value = serde_yaml::from_str(&format!(
                "apiVersion: v1\nkind: Service\n{meta}spec: {{type: LoadBalancer}}\n"
            ))
            .unwrap_or(Value::Null);
            let (inv, _) = super::super::inputs::read(std::slice::from_ref(&item));
            let Some(svc) = inv.services.first() else {
                continue;
            };
            read += 1;
            for label in [None, Some("p1".to_string())] {
                for add in &adds {
                    for phase in [Phase::Prepare, Phase::StopSpeaker, Phase::Cutover] {
                        let plan = ServicePlan {
                            index: 0,
                            service: 0,
                            pool: None,
                            ips: Vec::new(),
                            label: label.clone(),
                            add: add.clone().into_iter().collect(),
                            split: None,
                            source: IpSource::Live,
                        };
                        let want = rewrite(&item, &plan, phase, "pool");
                        let got = patch(svc, &plan, phase, "pool").map(|ops| {
                            let mut out = item.clone();
                            for op in &ops {
                                assert!(op.apply_to(&mut out));
                            }
                            out
                        });
                        let show = |v: &Option<Value>| {
                            v.as_ref().map(|v| serde_yaml::to_string(v).unwrap())
                        };
                        assert_eq!(
                            show(&got),
                            show(&want),
                            "{meta} {label:?} {add:?} {phase:?}"
                        );
                    }
                }
            }
        }
        assert_eq!(read, metas.len() - 1, "only the numeric label is rejected");
    }
}

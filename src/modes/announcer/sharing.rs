//! IP sharing: where Cilium LB-IPAM is stricter than MetalLB.
//!
//! MetalLB shares one IP between the Services of an `allow-shared-ip` key whose ports do not
//! clash per protocol and that are both `Cluster` or point at the same pods. Cilium LB-IPAM
//! decides per pair of Services in `isCompatible` (cilium/cilium
//! `operator/pkg/lbipam/service_store.go`), and each of its rules changed over the releases. A
//! MetalLB sharing group that LB-IPAM would split loses an IP: the Service judged incompatible
//! gets another IP, or none when it requests the shared one. The rules live in one table,
//! [`HISTORY`]; [`check`] applies them to the planned Services.

use std::collections::{BTreeMap, BTreeSet};

use super::Check;
use super::inventory::Inventory;
use super::service::Protocol;
use super::service::{AboutService, LbService};
use super::services::{CiliumKeys, IpSource, PERMIT_DIFFERENT_PODS, ServicePlan};
use super::version::CiliumVersion;
use crate::krm::KrmResult;

/// The Cilium Helm value that turns on LB-IPAM's per-protocol port comparison in 1.17 and 1.18
/// (written to the `bpf-lb-proto-diff` key of the `cilium-config` ConfigMap, read by the agent
/// and the operator).
pub const PROTOCOL_DIFFERENTIATION_VALUE: &str = "loadBalancer.protocolDifferentiation.enabled";

/// How LB-IPAM compares the ports of two Services that would share an IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortRule {
    /// By port number alone: TCP/53 and UDP/53 clash (the datapath could not tell protocols
    /// apart, cilium/cilium#9207).
    NumberOnly,
    /// By port and protocol only when [`PROTOCOL_DIFFERENTIATION_VALUE`] is `true`: the agent's
    /// `bpf-lb-proto-diff` flag defaults to true, but the operator never registered it, so it
    /// read `false` unless the chart wrote the key (cilium/cilium#39172, fixed by #40643).
    ProtocolIfEnabled,
    /// By port and protocol unless [`PROTOCOL_DIFFERENTIATION_VALUE`] is `false` (the operator
    /// flag defaults to true, cilium/cilium#40643 and #40642).
    ProtocolUnlessDisabled,
    /// By port and protocol, always (the flag was removed, cilium/cilium#40505).
    Protocol,
}

/// What LB-IPAM of one Cilium release does with a sharing group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharingRules {
    /// Sharing keys exist at all (`io.cilium/lb-ipam-sharing-key`).
    pub sharing_key: bool,
    /// Services of different namespaces may share when both list each other in
    /// `sharing-cross-namespace`.
    pub cross_namespace: bool,
    /// How ports are compared.
    pub ports: PortRule,
    /// `externalTrafficPolicy: Local` Services with different selectors may share when both
    /// carry `sharing-permit-different-pods`.
    pub permit_different_pods: bool,
}

/// One change of LB-IPAM's sharing behaviour.
#[derive(Debug, Clone, Copy)]
enum Change {
    SharingKey,
    CrossNamespace,
    Ports(PortRule),
    PermitDifferentPods,
}

/// The releases where LB-IPAM's sharing rules changed: `(major, minor, patch)` of the first
/// release with the change. Read in cilium/cilium at the release branch points of 1.14 to 1.19
/// (`operator/pkg/lbipam/service_store.go` `isCompatible`, `operator/pkg/lbipam/lbipam.go`,
/// `operator/pkg/lbipam/cell.go`, `pkg/option/config.go`,
/// `install/kubernetes/cilium/templates/cilium-configmap.yaml`) and in the release notes of the
/// patch releases that carried a backport.
const HISTORY: &[((u32, u32, u32), Change)] = &[
    // cilium/cilium#28806: sharing keys and `isCompatible` (absent at the 1.14 branch point).
    ((1, 15, 0), Change::SharingKey),
    ((1, 15, 0), Change::Ports(PortRule::NumberOnly)),
    // cilium/cilium#30055: `io.cilium/lb-ipam-sharing-cross-namespace` (absent at the 1.15
    // branch point; `lbipam.cilium.io/sharing-cross-namespace` with it from 1.16).
    ((1, 16, 0), Change::CrossNamespace),
    // cilium/cilium#34691: `isCompatible(osv, lbProtoDiff)`, lbProtoDiff from the operator's
    // `option.Config.LBProtoDiffEnabled()`.
    ((1, 17, 0), Change::Ports(PortRule::ProtocolIfEnabled)),
    // cilium/cilium#40643 in 1.17.7 (its release notes) and #40642 for 1.18 (merged before
    // 1.18.0: absent from the 1.18.1 notes, which list everything after 1.18.0).
    ((1, 17, 7), Change::Ports(PortRule::ProtocolUnlessDisabled)),
    // cilium/cilium#40505: `bpf-lb-proto-diff` removed, `isCompatible(osv)` compares protocols.
    ((1, 19, 0), Change::Ports(PortRule::Protocol)),
    // cilium/cilium#45819: first shipped in 1.21.0-pre.3; absent from every release branch up to
    // 1.19 and from the 1.20 development branch of 2026-03.
    ((1, 21, 0), Change::PermitDifferentPods),
];

impl SharingRules {
    /// The rules of a release; a version without a patch number counts as its `.0`, the
    /// strictest of its series.
    pub fn for_version(v: &CiliumVersion) -> SharingRules {
        let at = (v.major, v.minor, v.patch.unwrap_or(0));
        let mut rules = SharingRules {
            sharing_key: false,
            cross_namespace: false,
            ports: PortRule::NumberOnly,
            permit_different_pods: false,
        };
        for (since, change) in HISTORY {
            if at < *since {
                continue;
            }
            match change {
                Change::SharingKey => rules.sharing_key = true,
                Change::CrossNamespace => rules.cross_namespace = true,
                Change::Ports(p) => rules.ports = *p,
                Change::PermitDifferentPods => rules.permit_different_pods = true,
            }
        }
        rules
    }

    /// Whether ports are compared with their protocol, given the Cilium Helm value
    /// [`PROTOCOL_DIFFERENTIATION_VALUE`] (`None` when unset).
    pub fn compares_protocols(&self, helm_value: Option<bool>) -> bool {
        match self.ports {
            PortRule::NumberOnly => false,
            PortRule::ProtocolIfEnabled => helm_value == Some(true),
            PortRule::ProtocolUnlessDisabled => helm_value != Some(false),
            PortRule::Protocol => true,
        }
    }
}

/// Why LB-IPAM refuses to put two Services on one IP.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Split {
    /// No sharing keys before 1.15.
    NoSharingKey,
    /// Different namespaces before 1.16.
    Namespace,
    /// A port both use: `(port, protocol of a, protocol of b)`.
    Port(i32, Protocol, Protocol),
    /// One `Local`, one `Cluster`.
    TrafficPolicy,
    /// Both `Local`; one has no selector.
    NoSelector,
    /// Both `Local` with different selectors, before `sharing-permit-different-pods`.
    Selectors,
}

impl Split {
    fn rule(&self) -> &'static str {
        match self {
            Split::NoSharingKey => "sharing-key",
            Split::Namespace => "namespace",
            Split::Port(..) => "ports",
            Split::TrafficPolicy => "external-traffic-policy",
            Split::NoSelector | Split::Selectors => "selector",
        }
    }
}

/// The most namespaces cutover lists in one `sharing-cross-namespace`. A group spanning more
/// gets `*` (any namespace: `ciliumSvcLBISKCNWildward` in cilium/cilium
/// `operator/pkg/lbipam/lbipam.go`), which is what MetalLB's global `allow-shared-ip` keys
/// allow anyway. Listing them all would repeat the list on every member, so the output would
/// grow as members × namespaces.
pub const MAX_LISTED_NAMESPACES: usize = 16;

/// What the check needs to know besides the Services.
pub struct Context<'a> {
    /// The target release.
    pub version: &'a CiliumVersion,
    /// Its rules.
    pub rules: SharingRules,
    /// [`PROTOCOL_DIFFERENTIATION_VALUE`] in the Cilium release values, when set.
    pub protocol_value: Option<bool>,
    /// Annotation keys of the release.
    pub keys: &'a CiliumKeys,
}

/// The sharing annotations the Services need (cross-namespace permission, different-pods
/// permission), and an error for every MetalLB sharing group LB-IPAM would split; the plans of
/// its members are marked (`ServicePlan::split`) so the coverage proof does not count them as
/// kept.
pub fn check(
    inv: &Inventory,
    cx: &Context<'_>,
    plans: &mut [ServicePlan],
    results: &mut Vec<KrmResult>,
) {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (pi, p) in plans.iter().enumerate() {
        if let Some(k) = p.add.get(cx.keys.sharing_key) {
            groups.entry(k.clone()).or_default().push(pi);
        }
    }
    for (key, members) in groups {
        let svc = |pi: usize| &inv.services[plans[pi].service];
        if members.len() > 1 {
            results.push(
                KrmResult::warning(format!(
                    "sharing key {key:?} under L2: Cilium elects one announcing node per Service, not per IP, \
                     so the shared IP can be answered from two nodes (cilium/cilium#48419)"
                ))
                .about_svc(svc(members[0]))
                .field("metadata.annotations")
                .tag("sharingKey", key.as_str()),
            );
        }
        permissions(inv, cx, plans, &key, &members, results);
        for group in by_shared_ip(inv, plans, &members) {
            if let Some(split) = first_split(inv, cx, plans, &group) {
                for &pi in &group {
                    plans[pi].split = Some(split.rule());
                }
                let r = split_error(inv, cx, plans, &key, &group, &split);
                results.push(r);
            }
        }
    }
}

/// Adds the permissions cutover can give: `sharing-cross-namespace` listing the group's
/// namespaces (MetalLB keys are global, Cilium's per namespace; `*` past
/// [`MAX_LISTED_NAMESPACES`]) and, where the release has it, `sharing-permit-different-pods`
/// for `Local` members with different selectors.
fn permissions(
    inv: &Inventory,
    cx: &Context<'_>,
    plans: &mut [ServicePlan],
    key: &str,
    members: &[usize],
    results: &mut Vec<KrmResult>,
) {
    let svcs: Vec<&LbService> = members
        .iter()
        .map(|&pi| &inv.services[plans[pi].service])
        .collect();
    let namespaces: BTreeSet<&str> = svcs.iter().map(|s| s.namespace()).collect();
    if namespaces.len() > 1 && cx.rules.cross_namespace {
        let list = if namespaces.len() > MAX_LISTED_NAMESPACES {
            results.push(
                KrmResult::warning(format!(
                    "sharing key {key:?} spans {} namespaces, more than the {MAX_LISTED_NAMESPACES} cutover \
                     lists: its Services get {} \"*\" (any namespace may share with them, as MetalLB's \
                     global key allows)",
                    namespaces.len(),
                    cx.keys.cross_namespace
                ))
                .about_svc(svcs[0])
                .field("metadata.annotations")
                .tag("check", Check::Sharing)
                .tag("sharingKey", key),
            );
            "*".to_owned()
        } else {
            namespaces.iter().copied().collect::<Vec<_>>().join(",")
        };
        for &pi in members {
            plans[pi]
                .add
                .insert(cx.keys.cross_namespace.to_owned(), list.clone());
        }
    }
    let selectors: BTreeSet<Vec<(&str, &str)>> = svcs
        .iter()
        .filter(|s| s.etp_local())
        .filter_map(|s| s.selector().filter(|sel| !sel.is_empty()))
        .collect();
    if selectors.len() > 1 && cx.rules.permit_different_pods {
        for &pi in members {
            plans[pi]
                .add
                .insert(PERMIT_DIFFERENT_PODS.to_owned(), "true".into());
        }
    }
}

/// The members that hold one IP together today: members whose IPs overlap, transitively.
/// Members without an IP yet lose nothing and are left out. Groups come in the order of their
/// last member, members in order.
fn by_shared_ip(inv: &Inventory, plans: &[ServicePlan], members: &[usize]) -> Vec<Vec<usize>> {
    // Union-find over the members' positions, joined through the first member seen with each
    // IP: linear in the IPs, where merging group lists member by member was quadratic in the
    // number of groups.
    let mut parent: Vec<usize> = (0..members.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut first_with: BTreeMap<&str, usize> = BTreeMap::new();
    let mut has_ip = vec![false; members.len()];
    for (pos, &pi) in members.iter().enumerate() {
        for ip in &plans[pi].ips {
            has_ip[pos] = true;
            let other = *first_with.entry(ip.as_str()).or_insert(pos);
            let (a, b) = (root(&mut parent, pos), root(&mut parent, other));
            parent[a.max(b)] = a.min(b);
        }
    }
    // Members whose IP nobody knows are judged by intent: MetalLB gives a key's Services one IP
    // whenever its own rules let them share, so each joins the first member it is compatible with
    // by MetalLB's rules (known IP or not).
    for pos in 0..members.len() {
        if has_ip[pos] || plans[members[pos]].source != IpSource::Unknown {
            continue;
        }
        let me = &inv.services[plans[members[pos]].service];
        let mate = (0..members.len()).find(|&other| {
            other != pos
                && (has_ip[other] || plans[members[other]].source == IpSource::Unknown)
                && metallb_shares(me, &inv.services[plans[members[other]].service])
        });
        if let Some(other) = mate {
            has_ip[pos] = true;
            has_ip[other] = true;
            let (a, b) = (root(&mut parent, pos), root(&mut parent, other));
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for pos in (0..members.len()).filter(|&p| has_ip[p]) {
        let r = root(&mut parent, pos);
        groups.entry(r).or_default().push(members[pos]);
    }
    let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|m| m.len() > 1).collect();
    groups.sort_by_key(|m| m.last().copied());
    groups
}

/// MetalLB's own sharing rule for two Services of one `allow-shared-ip` key
/// (metallb/metallb `internal/allocator/allocator.go`: `sharingOK` compares the sharing key and
/// the backend key — the selector of a `Local` Service, empty for `Cluster` — and the port check
/// refuses a port both use with the same protocol).
fn metallb_shares(a: &LbService, b: &LbService) -> bool {
    let ports_ok = !a.ports().iter().any(|p| b.ports().contains(p));
    let policy_ok = match (a.etp_local(), b.etp_local()) {
        (false, false) => true,
        (true, true) => a.selector() == b.selector(),
        _ => false,
    };
    ports_ok && policy_ok
}

/// The first rule, in `isCompatible`'s order, by which LB-IPAM keeps two members of `group`
/// apart (their annotations as the plans leave them). LB-IPAM decides pair by pair; each rule
/// is checked here over the whole group at once, so a group of thousands on one IP costs time
/// in proportion to its members, not to their pairs. For two members it is exactly the pair's
/// `isCompatible`.
fn first_split(
    inv: &Inventory,
    cx: &Context<'_>,
    plans: &[ServicePlan],
    group: &[usize],
) -> Option<Split> {
    let svcs: Vec<&LbService> = group
        .iter()
        .map(|&pi| &inv.services[plans[pi].service])
        .collect();
    if !cx.rules.sharing_key {
        return Some(Split::NoSharingKey);
    }
    // Two members of different namespaces share only when each lists the other's namespace
    // (or `*`): every member must list every namespace of the group but its own.
    let namespaces: BTreeSet<&str> = svcs.iter().map(|s| s.namespace()).collect();
    if namespaces.len() > 1 {
        let lists_the_others = |pi: usize, own: &str| {
            plans[pi]
                .add
                .get(cx.keys.cross_namespace)
                .is_some_and(|list| {
                    let listed: BTreeSet<&str> = list.split(',').collect();
                    listed.contains("*")
                        || namespaces.iter().all(|n| *n == own || listed.contains(n))
                })
        };
        let permitted = cx.rules.cross_namespace
            && group
                .iter()
                .zip(&svcs)
                .all(|(&pi, s)| lists_the_others(pi, s.namespace()));
        if !permitted {
            return Some(Split::Namespace);
        }
    }
    if let Some(split) = port_clash(cx, &svcs) {
        return Some(split);
    }
    if svcs.iter().any(|s| s.etp_local() != svcs[0].etp_local()) {
        return Some(Split::TrafficPolicy);
    }
    if svcs[0].etp_local() {
        let selectors: Vec<Vec<(&str, &str)>> = svcs
            .iter()
            .map(|s| s.selector().unwrap_or_default())
            .collect();
        if selectors.iter().any(Vec::is_empty) {
            return Some(Split::NoSelector);
        }
        let permitted = cx.rules.permit_different_pods
            && group
                .iter()
                .all(|&pi| plans[pi].add.get(PERMIT_DIFFERENT_PODS).is_some());
        if selectors.iter().any(|s| *s != selectors[0]) && !permitted {
            return Some(Split::Selectors);
        }
    }
    None
}

/// A port two members both use (by number, or by number and protocol where the release
/// compares protocols): the first member that clashes with an earlier one, and the first of
/// its ports, in the earlier member's port order, that clashes.
fn port_clash(cx: &Context<'_>, svcs: &[&LbService]) -> Option<Split> {
    let protocols = cx.rules.compares_protocols(cx.protocol_value);
    let clashes = |a: Protocol, b: Protocol| !protocols || a == b;
    // The first member using each port with each protocol (TCP, UDP, SCTP).
    let mut first_user: BTreeMap<i32, [Option<usize>; 3]> = BTreeMap::new();
    for (j, s) in svcs.iter().enumerate() {
        let earlier = s.ports().iter().find_map(|&(port, proto)| {
            let users = first_user.get(&port)?;
            PROTOCOLS
                .iter()
                .zip(users)
                .find_map(|(&p, user)| user.filter(|_| clashes(p, proto)))
        });
        if let Some(i) = earlier {
            // The pair's clash as `isCompatible` finds it: ports of `i` in order, each against
            // the protocols `j` uses it with, in the order `j` lists them.
            let mut of_j: BTreeMap<i32, Vec<Protocol>> = BTreeMap::new();
            for &(port, proto) in s.ports() {
                let seen = of_j.entry(port).or_default();
                if !seen.contains(&proto) {
                    seen.push(proto);
                }
            }
            return svcs[i].ports().iter().find_map(|&(port, proto_i)| {
                let proto_j = of_j.get(&port)?.iter().find(|&&p| clashes(proto_i, p))?;
                Some(Split::Port(port, proto_i, *proto_j))
            });
        }
        for &(port, proto) in s.ports() {
            first_user.entry(port).or_default()[proto as usize].get_or_insert(j);
        }
    }
    None
}

/// The protocols in the order of their slots in [`port_clash`].
const PROTOCOLS: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];

/// The error for a sharing group Cilium would split: its members, their IPs, why, and the ways
/// out.
fn split_error(
    inv: &Inventory,
    cx: &Context<'_>,
    plans: &[ServicePlan],
    key: &str,
    group: &[usize],
    split: &Split,
) -> KrmResult {
    let svcs: Vec<&LbService> = group
        .iter()
        .map(|&pi| &inv.services[plans[pi].service])
        .collect();
    let names = svcs
        .iter()
        .map(|s| format!("{}/{}", s.namespace(), s.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let ips: BTreeSet<&str> = group
        .iter()
        .flat_map(|&pi| plans[pi].ips.iter().map(String::as_str))
        .collect();
    let ips = ips.into_iter().collect::<Vec<_>>().join(",");
    let (why, ways_out) = split_reason(split, cx);
    KrmResult::error(format!(
        "sharing key {key:?}: MetalLB shares {ips} between {names}; Cilium would split the group (rule {}): {why}. \
         One of them would get another IP, or none if it requests this one (read from cilium/cilium \
         operator/pkg/lbipam/service_store.go isCompatible). Ways out: {ways_out}",
        split.rule()
    ))
    .about_svc(svcs[0])
    .field("metadata.annotations")
    .tag("check", Check::Sharing)
    .tag("rule", split.rule())
    .tag("sharingKey", key)
}

/// Why Cilium would split the group, and the ways out, for the split found.
fn split_reason(split: &Split, cx: &Context<'_>) -> (String, String) {
    let v = cx.version;
    match split {
    Split::NoSharingKey => (
        format!("Cilium {v} LB-IPAM has no sharing keys (they arrived in 1.15)"),
        "run Cilium 1.15 or later".to_owned(),
    ),
    Split::Namespace => (
        format!(
            "they live in different namespaces and Cilium {v} LB-IPAM shares only within one \
             (sharing-cross-namespace arrived in 1.16)"
        ),
        "move them into one namespace; or run Cilium 1.16 or later, where cutover adds \
         sharing-cross-namespace to every member"
            .to_owned(),
    ),
    Split::Port(port, pa, pb) if pa != pb => protocol_split_reason(*port, *pa, *pb, cx),
    Split::Port(port, pa, _) => (
        format!("two of them use {}/{port}", pa.as_str()),
        "give them different ports (MetalLB would not share this IP either: check the Services' status)"
            .to_owned(),
    ),
    Split::TrafficPolicy => (
        "their externalTrafficPolicy differs (Local and Cluster)".to_owned(),
        "give them the same externalTrafficPolicy".to_owned(),
    ),
    Split::NoSelector => (
        "they are externalTrafficPolicy: Local and one has no selector; LB-IPAM never shares such a Service"
            .to_owned(),
        "give it a selector, or use externalTrafficPolicy: Cluster".to_owned(),
    ),
    Split::Selectors => (
        format!(
            "they are externalTrafficPolicy: Local with different selectors, which Cilium {v} LB-IPAM refuses \
             ({PERMIT_DIFFERENT_PODS} arrived in 1.21)"
        ),
        "give them the same selector; use externalTrafficPolicy: Cluster; or run Cilium 1.21 or later, where \
         cutover adds sharing-permit-different-pods to every member"
            .to_owned(),
    ),
}
}

/// Two members use one port number with different protocols, which this Cilium compares by
/// number only.
fn protocol_split_reason(
    port: i32,
    pa: Protocol,
    pb: Protocol,
    cx: &Context<'_>,
) -> (String, String) {
    let v = cx.version;
    let how = match cx.rules.ports {
        PortRule::NumberOnly => format!(
            "Cilium {v} LB-IPAM compares port numbers only (protocol differentiation arrived in 1.17)"
        ),
        PortRule::ProtocolIfEnabled => format!(
            "Cilium {v} LB-IPAM compares port numbers only unless {PROTOCOL_DIFFERENTIATION_VALUE} is true \
             in the Cilium values (its operator reads bpf-lb-proto-diff from cilium-config, which the chart \
             writes only when the value is set; on by default from 1.17.7 and 1.18, cilium/cilium#40643)"
        ),
        PortRule::ProtocolUnlessDisabled => format!(
            "{PROTOCOL_DIFFERENTIATION_VALUE} is false in the Cilium values, so Cilium {v} LB-IPAM compares \
             port numbers only"
        ),
        PortRule::Protocol => unreachable!("protocols always differ here"),
    };
    let enable = match cx.rules.ports {
        PortRule::NumberOnly => {
            "run Cilium 1.17.7, 1.18 or later (protocol differentiation on by default; always on from 1.19)"
                .to_owned()
        }
        _ => format!(
            "set {PROTOCOL_DIFFERENTIATION_VALUE}: true in the Cilium values; or run Cilium 1.19 or later \
             (protocol differentiation always on)"
        ),
    };
    (
        format!(
            "both use port {port} ({}, {}) and {how}",
            pa.as_str(),
            pb.as_str()
        ),
        format!(
            "merge them into one Service with both ports (a mixed-protocol LoadBalancer Service); or {enable}"
        ),
    )
}

#[cfg(test)]
mod tests;

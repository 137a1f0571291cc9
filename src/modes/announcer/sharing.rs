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

use super::inventory::Inventory;
use super::service::Protocol;
use super::service::{AboutService, LbService};
use super::services::{CiliumKeys, PERMIT_DIFFERENT_PODS, ServicePlan};
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
        for group in by_shared_ip(plans, &members) {
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
                .tag("check", "sharing")
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
fn by_shared_ip(plans: &[ServicePlan], members: &[usize]) -> Vec<Vec<usize>> {
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
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for pos in (0..members.len()).filter(|&p| has_ip[p]) {
        let r = root(&mut parent, pos);
        groups.entry(r).or_default().push(members[pos]);
    }
    let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|m| m.len() > 1).collect();
    groups.sort_by_key(|m| m.last().copied());
    groups
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
    let v = cx.version;
    let (why, ways_out) = match split {
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
        Split::Port(port, pa, pb) if pa != pb => {
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
                format!("both use port {port} ({}, {}) and {how}", pa.as_str(), pb.as_str()),
                format!(
                    "merge them into one Service with both ports (a mixed-protocol LoadBalancer Service); or {enable}"
                ),
            )
        }
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
    };
    KrmResult::error(format!(
        "sharing key {key:?}: MetalLB shares {ips} between {names}; Cilium would split the group (rule {}): {why}. \
         One of them would get another IP, or none if it requests this one (read from cilium/cilium \
         operator/pkg/lbipam/service_store.go isCompatible). Ways out: {ways_out}",
        split.rule()
    ))
    .about_svc(svcs[0])
    .field("metadata.annotations")
    .tag("check", "sharing")
    .tag("rule", split.rule())
    .tag("sharingKey", key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(v: &str) -> SharingRules {
        SharingRules::for_version(&CiliumVersion::parse(v).unwrap())
    }

    #[test]
    fn the_table_per_release() {
        assert!(!rules("1.14.9").sharing_key);
        let r = rules("1.15.0");
        assert!(r.sharing_key && !r.cross_namespace && r.ports == PortRule::NumberOnly);
        let r = rules("1.16.3");
        assert!(r.cross_namespace && r.ports == PortRule::NumberOnly);
        assert_eq!(rules("1.17.0").ports, PortRule::ProtocolIfEnabled);
        assert_eq!(rules("1.17.6").ports, PortRule::ProtocolIfEnabled);
        assert_eq!(rules("1.17").ports, PortRule::ProtocolIfEnabled);
        assert_eq!(rules("1.17.7").ports, PortRule::ProtocolUnlessDisabled);
        assert_eq!(rules("1.18.0").ports, PortRule::ProtocolUnlessDisabled);
        assert_eq!(rules("1.19.2").ports, PortRule::Protocol);
        assert!(!rules("1.20.2").permit_different_pods);
        assert!(rules("1.21.0-pre.3").permit_different_pods);
    }

    /// The grouping as first written (each member merged into the list of groups it touches,
    /// quadratic in the number of groups): the reference for [`by_shared_ip`].
    fn by_shared_ip_pairwise(plans: &[ServicePlan], members: &[usize]) -> Vec<Vec<usize>> {
        let mut groups: Vec<(BTreeSet<&str>, Vec<usize>)> = Vec::new();
        for &pi in members {
            let ips: BTreeSet<&str> = plans[pi].ips.iter().map(String::as_str).collect();
            if ips.is_empty() {
                continue;
            }
            let (joined, rest): (Vec<_>, Vec<_>) =
                groups.into_iter().partition(|(g, _)| !g.is_disjoint(&ips));
            let mut merged = (ips, vec![pi]);
            for (g, m) in joined {
                merged.0.extend(g);
                merged.1.extend(m);
            }
            merged.1.sort_unstable();
            groups = rest;
            groups.push(merged);
        }
        groups
            .into_iter()
            .map(|(_, m)| m)
            .filter(|m| m.len() > 1)
            .collect()
    }

    /// The union-find grouping gives the same groups, in the same order, as merging group by
    /// group, on 2 000 pseudo-random sets of up to 12 members with up to 3 of 8 IPs each.
    #[test]
    fn shared_ip_groups_match_the_pairwise_merge() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as usize
        };
        for _ in 0..2_000 {
            let count = 1 + next(12);
            let plans: Vec<ServicePlan> = (0..count)
                .map(|i| ServicePlan {
                    index: i,
                    service: i,
                    pool: None,
                    ips: (0..next(4))
                        .map(|_| format!("10.0.0.{}", next(8)))
                        .collect(),
                    label: None,
                    add: Default::default(),
                    split: None,
                })
                .collect();
            let members: Vec<usize> = (0..count).filter(|_| next(4) != 0).collect();
            assert_eq!(
                by_shared_ip(&plans, &members),
                by_shared_ip_pairwise(&plans, &members),
                "{:?}",
                members.iter().map(|&m| &plans[m].ips).collect::<Vec<_>>()
            );
        }
    }

    /// LB-IPAM's `isCompatible` for one pair, as cutover first checked every pair of a group
    /// (quadratic in its members): the reference for [`first_split`].
    fn pair_split(
        inv: &Inventory,
        cx: &Context<'_>,
        a: &ServicePlan,
        b: &ServicePlan,
    ) -> Option<Split> {
        let (sa, sb) = (&inv.services[a.service], &inv.services[b.service]);
        if !cx.rules.sharing_key {
            return Some(Split::NoSharingKey);
        }
        let permits = |p: &ServicePlan, ns: &str| {
            p.add
                .get(cx.keys.cross_namespace)
                .is_some_and(|list| list.split(',').any(|n| n == ns || n == "*"))
        };
        if sa.namespace() != sb.namespace()
            && !(cx.rules.cross_namespace
                && permits(a, sb.namespace())
                && permits(b, sa.namespace()))
        {
            return Some(Split::Namespace);
        }
        let protocols = cx.rules.compares_protocols(cx.protocol_value);
        for &(pa, proto_a) in sa.ports() {
            for &(pb, proto_b) in sb.ports() {
                if pa == pb && (!protocols || proto_a == proto_b) {
                    return Some(Split::Port(pa, proto_a, proto_b));
                }
            }
        }
        if sa.etp_local() != sb.etp_local() {
            return Some(Split::TrafficPolicy);
        }
        if sa.etp_local() {
            let (sel_a, sel_b) = (
                sa.selector().unwrap_or_default(),
                sb.selector().unwrap_or_default(),
            );
            if sel_a.is_empty() || sel_b.is_empty() {
                return Some(Split::NoSelector);
            }
            let permitted = |p: &ServicePlan| p.add.get(PERMIT_DIFFERENT_PODS).is_some();
            if sel_a != sel_b && !(cx.rules.permit_different_pods && permitted(a) && permitted(b)) {
                return Some(Split::Selectors);
            }
        }
        None
    }

    /// On 3 000 pseudo-random groups of 2 to 6 Services (two namespaces, one or two of six ports
    /// over TCP and UDP, Local or Cluster, three selectors, random permissions, six releases):
    /// [`first_split`] splits exactly the groups some pair splits, and for two members gives
    /// exactly the pair's split.
    #[test]
    fn group_split_matches_the_pairs() {
        use crate::modes::announcer::services::CiliumKeys;
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as usize
        };
        let (mut pairs_split, mut groups_split) = (0, 0);
        for _ in 0..3_000 {
            let count = 2 + next(5);
            let items: Vec<serde_yaml::Value> = (0..count)
                .map(|i| {
                    let ports: Vec<String> = (0..1 + next(2))
                        .map(|_| {
                            format!(
                                "{{port: {}, protocol: {}}}",
                                [53, 80, 443, 853, 5353, 8080][next(6)],
                                ["TCP", "UDP"][next(2)]
                            )
                        })
                        .collect();
                    let selector = ["", "selector: {app: x}, ", "selector: {app: y}, "][next(3)];
                    let etp = ["Cluster", "Local"][next(2)];
                    serde_yaml::from_str(&format!(
                        "{{apiVersion: v1, kind: Service, metadata: {{name: s{i}, namespace: {}, annotations: {{metallb.io/allow-shared-ip: k}}}}, \
                         spec: {{type: LoadBalancer, {selector}externalTrafficPolicy: {etp}, ports: [{}]}}}}",
                        ["a", "b"][next(2)],
                        ports.join(", ")
                    ))
                    .unwrap()
                })
                .collect();
            let (inv, errors) = crate::modes::announcer::inputs::read(&items);
            assert!(errors.is_empty(), "{errors:?}");
            let version = CiliumVersion::parse(
                ["1.14.0", "1.15.0", "1.16.0", "1.17.0", "1.19.0", "1.21.0"][next(6)],
            )
            .unwrap();
            let keys = CiliumKeys::for_version(&version);
            let cx = Context {
                version: &version,
                rules: SharingRules::for_version(&version),
                protocol_value: [None, Some(true), Some(false)][next(3)],
                keys: &keys,
            };
            let plans: Vec<ServicePlan> = (0..count)
                .map(|i| {
                    let mut add = crate::modes::announcer::services::SortedPairs::default();
                    if let Some(list) =
                        [None, Some("a,b"), Some("a"), Some("b"), Some("*")][next(5)]
                    {
                        add.insert(keys.cross_namespace.to_owned(), list.to_owned());
                    }
                    if next(2) == 0 {
                        add.insert(PERMIT_DIFFERENT_PODS.to_owned(), "true".to_owned());
                    }
                    ServicePlan {
                        index: i,
                        service: i,
                        pool: None,
                        ips: vec!["10.0.0.5".to_owned()],
                        label: None,
                        add,
                        split: None,
                    }
                })
                .collect();
            let group: Vec<usize> = (0..count).collect();
            let got = first_split(&inv, &cx, &plans, &group);
            let any_pair = (0..count).any(|i| {
                (i + 1..count).any(|j| pair_split(&inv, &cx, &plans[i], &plans[j]).is_some())
            });
            assert_eq!(got.is_some(), any_pair, "{items:?} {plans:?} {got:?}");
            if count == 2 {
                assert_eq!(
                    got,
                    pair_split(&inv, &cx, &plans[0], &plans[1]),
                    "{items:?} {plans:?}"
                );
                pairs_split += usize::from(got.is_some());
            }
            groups_split += usize::from(got.is_some());
        }
        // Both outcomes are exercised.
        assert!(
            pairs_split > 100 && groups_split > 1_000 && groups_split < 2_900,
            "{pairs_split} {groups_split}"
        );
    }

    #[test]
    fn protocol_comparison_follows_the_helm_value() {
        assert!(!rules("1.16.9").compares_protocols(Some(true)));
        assert!(!rules("1.17.4").compares_protocols(None));
        assert!(rules("1.17.4").compares_protocols(Some(true)));
        assert!(rules("1.18.4").compares_protocols(None));
        assert!(!rules("1.18.4").compares_protocols(Some(false)));
        assert!(rules("1.19.5").compares_protocols(Some(false)));
    }
}

//! The sharing rules per Cilium release, and the fast grouping and group-wide check compared
//! with the quadratic versions they replaced, on pseudo-random inputs.

use super::*;
use crate::test_rng::XorShift;

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
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut next = |n: u64| rng.below(n);
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
                source: super::super::services::IpSource::Live,
            })
            .collect();
        let members: Vec<usize> = (0..count).filter(|_| next(4) != 0).collect();
        assert_eq!(
            by_shared_ip(&Inventory::default(), &plans, &members),
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
        && !(cx.rules.cross_namespace && permits(a, sb.namespace()) && permits(b, sa.namespace()))
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
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut next = |n: u64| rng.below(n);
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
                if let Some(list) = [None, Some("a,b"), Some("a"), Some("b"), Some("*")][next(5)] {
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
                    source: super::super::services::IpSource::Live,
                }
            })
            .collect();
        let group: Vec<usize> = (0..count).collect();
        let got = first_split(&inv, &cx, &plans, &group);
        let any_pair = (0..count)
            .any(|i| (i + 1..count).any(|j| pair_split(&inv, &cx, &plans[i], &plans[j]).is_some()));
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

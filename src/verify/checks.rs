//! One function per invariant a gate checks; each returns a finding per object that fails it.

use super::*;

pub(super) fn finding(check: Check, message: String) -> Finding {
    Finding { check, message }
}

/// The plan's Services that had IPs, with their live object (`None`: gone).
pub(super) fn kept<'a>(
    ctx: &'a Context<'_>,
) -> impl Iterator<Item = (String, &'a BTreeSet<IpAddr>, Option<&'a Service>)> {
    ctx.plan
        .services
        .iter()
        .filter(|(_, ips)| !ips.is_empty())
        .map(|(k, ips)| (format!("{}/{}", k.0, k.1), ips, ctx.live.services.get(k)))
}

pub(super) fn show(ips: &BTreeSet<IpAddr>) -> String {
    ips.iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) fn class(svc: &Service) -> Option<&str> {
    svc.spec.as_ref()?.load_balancer_class.as_deref()
}

/// Every Service still has the IPs observed before `prepare` (as a set: order and spelling of
/// an address do not matter; a hostname ingress is ignored).
pub fn ips_kept(ctx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, want, svc) in kept(ctx) {
        let Some(svc) = svc else {
            out.push(finding(
                Check::IpsKept,
                format!("Service {name} is gone (observed {})", show(want)),
            ));
            continue;
        };
        let ty = svc.spec.as_ref().and_then(|s| s.type_.as_deref());
        if ty != Some("LoadBalancer") {
            out.push(finding(
                Check::IpsKept,
                format!(
                    "Service {name} is no longer type LoadBalancer ({}; observed {})",
                    ty.unwrap_or("no type"),
                    show(want)
                ),
            ));
            continue;
        }
        let have: BTreeSet<IpAddr> = svc
            .status
            .iter()
            .flat_map(|s| s.load_balancer.iter())
            .flat_map(|lb| lb.ingress.iter().flatten())
            .filter_map(|i| i.ip.as_deref()?.parse().ok())
            .collect();
        if have.is_empty() {
            out.push(finding(
                Check::IpsKept,
                format!(
                    "Service {name} lost its IPs: observed {}, now none",
                    show(want)
                ),
            ));
        } else if &have != want {
            out.push(finding(
                Check::IpsKept,
                format!(
                    "Service {name} IPs changed: observed {}, now {}",
                    show(want),
                    show(&have)
                ),
            ));
        }
    }
    out
}

pub(super) fn condition<'a>(conditions: &'a [Condition], types: &[&str]) -> Option<&'a Condition> {
    conditions
        .iter()
        .find(|c| types.contains(&c.type_.as_str()))
}

/// LB-IPAM took every Service it serves (no class, or a Cilium class): condition
/// `cilium.io/IPAMRequestSatisfied` True. False carries LB-IPAM's reason (`no_pool`,
/// `out_of_ips`, `already_allocated`, `pool_selector_mismatch`,
/// `already_allocated_incompatible_service`).
pub fn ipam_satisfied(ctx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, _, svc) in kept(ctx) {
        let Some(svc) = svc else { continue };
        if class(svc).is_some_and(|c| !CILIUM_CLASSES.contains(&c)) {
            continue;
        }
        let conditions = svc
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        match condition(conditions, &IPAM_SATISFIED) {
            None => out.push(finding(
                Check::IpamSatisfied,
                format!(
                    "Service {name}: LB-IPAM has not taken it yet (no {} condition)",
                    IPAM_SATISFIED[0]
                ),
            )),
            Some(c) if c.status == "True" => {}
            Some(c) => out.push(finding(
                Check::IpamSatisfied,
                format!(
                    "Service {name}: {} is {} with reason {}: {}",
                    c.type_, c.status, c.reason, c.message
                ),
            )),
        }
    }
    out
}

/// No `CiliumLoadBalancerIPPool` is Conflicting (LB-IPAM allocates nothing from it).
pub fn no_pool_conflict(ctx: &Context<'_>) -> Vec<Finding> {
    ctx.live
        .pools
        .iter()
        .filter_map(|p| {
            let c = condition(&p.status.conditions, &POOL_CONFLICT)?;
            (c.status == "True").then(|| {
                finding(
                    Check::NoPoolConflict,
                    format!(
                        "CiliumLoadBalancerIPPool {} is Conflicting ({}): {}",
                        p.metadata.name, c.reason, c.message
                    ),
                )
            })
        })
        .collect()
}

/// Cilium's L2 Leases in the Cilium namespace, with their Service part of the name.
pub(super) fn l2_leases<'a>(ctx: &'a Context<'_>) -> impl Iterator<Item = (&'a str, &'a Lease)> {
    ctx.live
        .leases
        .iter()
        .filter(|((ns, name), _)| ns == ctx.cilium_namespace && name.starts_with(LEASE_PREFIX))
        .map(|((_, name), l)| (name.as_str(), l))
}

pub(super) fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .as_deref()
        .filter(|h| !h.is_empty())
}

/// While MetalLB announces, nobody else may: no `CiliumL2AnnouncementPolicy` exists and no
/// `cilium-l2announce-*` Lease has a holder.
pub fn no_foreign_announcer(ctx: &Context<'_>) -> Vec<Finding> {
    let mut out: Vec<Finding> = ctx
        .live
        .policies
        .iter()
        .map(|p| {
            finding(
                Check::NoForeignAnnouncer,
                format!(
                    "CiliumL2AnnouncementPolicy {} exists: Cilium may answer ARP while MetalLB does",
                    p.metadata.name
                ),
            )
        })
        .collect();
    for (name, lease) in l2_leases(ctx) {
        if let Some(node) = holder(lease) {
            out.push(finding(
                Check::NoForeignAnnouncer,
                format!(
                    "Lease {}/{name} is held by {node}: Cilium announces while MetalLB does",
                    ctx.cilium_namespace
                ),
            ));
        }
    }
    out
}

/// A MetalLB pod of `component` in phase Running or Pending: chart labels
/// `app.kubernetes.io/name: metallb` + `app.kubernetes.io/component`, or the manifests' `app:
/// metallb` + `component` (the predicate [`observed::wrap`] uses).
pub(super) fn metallb_pods<'a>(
    ctx: &'a Context<'_>,
    component: &'a str,
) -> impl Iterator<Item = &'a Pod> {
    ctx.live.pods.iter().filter(move |pod| {
        let labels = pod.metadata.labels.as_ref();
        let label = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        observed::running_metallb_component(label, phase) == Some(component)
    })
}

pub(super) fn pod_finding(check: Check, what: &str, pod: &Pod) -> Finding {
    let (ns, name) = key(&pod.metadata);
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("?");
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .map(|n| format!(" on node {n}"))
        .unwrap_or_default();
    finding(
        check,
        format!("MetalLB {what} pod {ns}/{name} is still {phase}{node}"),
    )
}

/// No MetalLB speaker pod is Running or Pending.
pub fn speaker_stopped(ctx: &Context<'_>) -> Vec<Finding> {
    metallb_pods(ctx, "speaker")
        .map(|p| pod_finding(Check::SpeakerStopped, "speaker", p))
        .collect()
}

/// No MetalLB controller pod is Running or Pending.
pub fn controller_stopped(ctx: &Context<'_>) -> Vec<Finding> {
    metallb_pods(ctx, "controller")
        .map(|p| pod_finding(Check::ControllerStopped, "controller", p))
        .collect()
}

/// Each Service Cilium's L2 announcer serves (no class or its class) has its Lease
/// `cilium-l2announce-<ns>-<name>` held by a node, unexpired at `now`
/// (`renewTime + leaseDurationSeconds`), and the node carries no
/// `node.kubernetes.io/exclude-from-external-load-balancers` (live, or in the plan's nodes).
///
/// The holder must also be a node Cilium may announce the Service from: one a
/// `CiliumL2AnnouncementPolicy` with `loadBalancerIPs` selects for it (the transition model's
/// [`l2announcer::announcers_by`], read from the live objects) — one of the plan's expected
/// policies when the plan carries an expected end state ([`holder_problem`]).
pub fn lease_held(ctx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut cluster: Cluster = model::snapshot(&ctx.live.items).cluster;
    // A held Lease means the agents run the L2 announcer; the flag lives in Cilium's values,
    // which the live objects do not carry.
    cluster.flags.l2_announcements = true;
    for ((ns, svc_name), want) in &ctx.plan.services {
        if want.is_empty() {
            continue;
        }
        let svc = ctx.live.services.get(&(ns.clone(), svc_name.clone()));
        if svc.and_then(class).is_some_and(|c| c != L2_CLASS) {
            continue;
        }
        let lease_name = format!("{LEASE_PREFIX}{ns}-{svc_name}");
        let at = format!("{}/{lease_name}", ctx.cilium_namespace);
        let push = |out: &mut Vec<Finding>, m: String| {
            out.push(finding(
                Check::LeaseHeld,
                format!("Service {ns}/{svc_name}: {m}"),
            ));
        };
        let key = (ctx.cilium_namespace.to_owned(), lease_name);
        let Some(lease) = ctx.live.leases.get(&key) else {
            push(&mut out, format!("no Lease {at}: no node announces it"));
            continue;
        };
        let Some(node) = holder(lease) else {
            push(&mut out, format!("Lease {at} has no holder"));
            continue;
        };
        let spec = lease.spec.as_ref();
        let renew = spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0);
        let duration = spec.and_then(|s| s.lease_duration_seconds);
        match (renew, duration) {
            (Some(renew), Some(secs)) => {
                let until = renew
                    .checked_add(SignedDuration::from_secs(i64::from(secs)))
                    .unwrap_or(renew);
                if until < ctx.now {
                    push(
                        &mut out,
                        format!(
                            "Lease {at} held by {node} expired at {until} (renewed {renew}, {secs}s; now {})",
                            ctx.now
                        ),
                    );
                    continue;
                }
            }
            _ => {
                push(
                    &mut out,
                    format!("Lease {at} held by {node} has no renewTime or leaseDurationSeconds"),
                );
                continue;
            }
        }
        if let Some(m) = holder_problem(ctx, &cluster, (ns.as_str(), svc_name.as_str()), node, &at)
        {
            push(&mut out, m);
        }
    }
    out
}

/// What is wrong with `node` holding the Service's Lease `at`, if anything: a node MetalLB
/// excluded, no Node, or a node no policy selects for the Service. With an expected end state
/// in the plan only its policies count: those it lists for the Service (`announcedBy`), or,
/// for a Service it does not list, any of its `ciliumL2Policies`.
fn holder_problem(
    ctx: &Context<'_>,
    cluster: &Cluster,
    (ns, svc_name): (&str, &str),
    node: &str,
    at: &str,
) -> Option<String> {
    let live_node = ctx.live.nodes.get(node);
    let labelled = live_node
        .and_then(|n| n.metadata.labels.as_ref())
        .is_some_and(|l| l.contains_key(EXCLUDE_LB_LABEL));
    if labelled || ctx.plan.excluded_nodes.contains(node) {
        return Some(format!(
            "Lease {at} is held by {node}, a node MetalLB never announced from ({EXCLUDE_LB_LABEL}{})",
            if labelled {
                ""
            } else {
                " or NetworkUnavailable, per the plan"
            }
        ));
    }
    if live_node.is_none() {
        return Some(format!(
            "Lease {at} is held by {node}, which is no Node of the cluster"
        ));
    }
    let key = SvcKey {
        namespace: ns.to_owned(),
        name: svc_name.to_owned(),
    };
    let expected = ctx.plan.expected.as_ref();
    let planned: Option<&BTreeSet<String>> = expected.map(|e| {
        e.announced_by
            .get(&format!("{ns}/{svc_name}"))
            .unwrap_or(&e.cilium_l2_policies)
    });
    let candidates =
        l2announcer::announcers_by(cluster, &key, |p| planned.is_none_or(|set| set.contains(p)));
    if candidates.contains(node) {
        return None;
    }
    let allowed: Vec<&str> = candidates.iter().map(String::as_str).collect();
    let selected = if allowed.is_empty() {
        "none".to_owned()
    } else {
        allowed.join(",")
    };
    Some(match planned {
        None => format!(
            "Lease {at} is held by {node}, which no CiliumL2AnnouncementPolicy selects for it (selected: {selected})"
        ),
        Some(set) => format!(
            "Lease {at} is held by {node}, which none of the plan's CiliumL2AnnouncementPolicies for it ({}) selects (selected: {selected})",
            set.iter().map(String::as_str).collect::<Vec<_>>().join(",")
        ),
    })
}

/// With an expected end state in the plan: its Cilium pools and L2 policies exist, and no
/// other L2 policy does (one the cutover did not write may announce from nodes it did not
/// choose).
pub fn expected_objects(ctx: &Context<'_>) -> Vec<Finding> {
    let Some(expected) = ctx.plan.expected.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let names = |objs: &[CiliumObject]| -> BTreeSet<String> {
        objs.iter().map(|o| o.metadata.name.clone()).collect()
    };
    let (pools, policies) = (names(&ctx.live.pools), names(&ctx.live.policies));
    for (kind, want, have) in [
        ("CiliumLoadBalancerIPPool", &expected.cilium_pools, &pools),
        (
            "CiliumL2AnnouncementPolicy",
            &expected.cilium_l2_policies,
            &policies,
        ),
    ] {
        for name in want.difference(have) {
            out.push(finding(
                Check::ExpectedObjects,
                format!("{kind} {name} of the plan's expected end state is missing"),
            ));
        }
    }
    for name in policies.difference(&expected.cilium_l2_policies) {
        out.push(finding(
            Check::ExpectedObjects,
            format!(
                "CiliumL2AnnouncementPolicy {name} is not in the plan's expected end state: it may announce from nodes the cutover did not choose"
            ),
        ));
    }
    out
}

/// No MetalLB `IPAddressPool` or `L2Advertisement` is left.
pub fn metallb_removed(ctx: &Context<'_>) -> Vec<Finding> {
    ctx.live
        .metallb
        .iter()
        .map(|(kind, o)| {
            let ns = o.metadata.namespace.as_deref().unwrap_or("default");
            finding(
                Check::MetallbRemoved,
                format!(
                    "MetalLB {kind} {ns}/{} is left: remove MetalLB",
                    o.metadata.name
                ),
            )
        })
        .collect()
}

//! Each gate judged in every state the transition model reaches while its phase is applied:
//! whenever gate N passes (the chain would apply phase N+1 then), phase N+1 applied from that
//! state keeps every invariant; and gate N passes once phase N settled (the chain does not
//! stall). The states are turned into the live objects the gate Job's `kubectl get` returns
//! (`cutover::verify::model_items`, restricted to the kinds the gate reads).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use cutover::modes::announcer::model::{Snapshot, Visited, explore_visiting};
use cutover::verify::{self, Context, Gate, Live, Plan};
use k8s_openapi::jiff::Timestamp;

use cutover::modes::announcer::orchestrate::{LIVE_RESOURCES, METALLB_RESOURCES};

use super::model::{applied, identity, load, observe, run_items};
use super::*;

const CILIUM_NAMESPACE: &str = "kube-system";

/// The kinds of `LIVE_RESOURCES` (the chain gates' `kubectl get`).
fn read_by_gate(kinds: &str, item: &Value) -> bool {
    let kind = item["kind"].as_str().unwrap_or("");
    let resource = match kind {
        "Service" => "services",
        "Node" => "nodes",
        "Pod" => "pods",
        "Lease" => "leases.coordination.k8s.io",
        "CiliumLoadBalancerIPPool" => "ciliumloadbalancerippools.cilium.io",
        "CiliumL2AnnouncementPolicy" => "ciliuml2announcementpolicies.cilium.io",
        "IPAddressPool" => "ipaddresspools.metallb.io",
        "L2Advertisement" => "l2advertisements.metallb.io",
        other => panic!("model_items wrote a {other}"),
    };
    kinds.split(',').any(|k| k == resource)
}

/// The findings of `gate` in a visited state.
fn judge(gate: Gate, kinds: &str, plan: &Plan, v: &Visited<'_>) -> Vec<String> {
    let now: Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
    let items = verify::model_items(v.cluster, v.lbipam, CILIUM_NAMESPACE, now)
        .into_iter()
        .filter(|i| read_by_gate(kinds, i))
        .collect();
    let live = Live::from_items(items).unwrap();
    let ctx = Context {
        plan,
        live: &live,
        cilium_namespace: CILIUM_NAMESPACE,
        now,
    };
    verify::check(gate, &ctx)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn fingerprint(s: &Snapshot) -> u64 {
    let mut h = DefaultHasher::new();
    s.cluster.hash(&mut h);
    s.cilium.hash(&mut h);
    h.finish()
}

/// One phase: its transition's options, the package before and after, and its gate.
struct Phase {
    gate: Gate,
    before: Vec<Value>,
    after: Vec<Value>,
    options: Options,
}

/// Explores `phases[i]` from `live`; in every state where its gate passes, explores
/// `phases[i + 1]` from there (each distinct state once) and asserts no invariant breaks;
/// asserts the gate passes once the phase settled. Returns the settled state and how many
/// states passed the gate.
fn phase_gated(
    case: &str,
    phases: &[Phase],
    i: usize,
    live: Snapshot,
    plan: &Plan,
    kinds: &str,
) -> (Snapshot, usize) {
    let p = &phases[i];
    let t = Transition::from_snapshots(
        live,
        snapshot(&p.before),
        snapshot(&p.after),
        p.options.clone(),
    );
    let mut passing: Vec<Snapshot> = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut settled: Vec<Vec<String>> = Vec::new();
    let mut start_findings = None;
    let (mut explored, mut early) = (0, 0);
    let report = explore_visiting(&t, &mut |v| {
        let findings = judge(p.gate, kinds, plan, v);
        start_findings.get_or_insert(findings.clone());
        if v.quiet {
            settled.push(findings.clone());
        }
        if findings.is_empty() {
            explored += 1;
            early += usize::from(!v.applied);
            let s = v.snapshot();
            if seen.insert(fingerprint(&s)) {
                passing.push(s);
            }
        }
    });
    let gate = p.gate.name();
    assert!(report.violations.is_empty(), "{case} {gate}: {report}");
    // The gate is no formality: it fails where its phase starts (prepare's only when the
    // live state holds no Cilium pool: a case recorded mid-prepare already passes it).
    let fresh = i > 0 || t.live().cilium_pools.is_empty();
    assert!(
        !fresh || start_findings.is_some_and(|f| !f.is_empty()),
        "{case}: gate {gate} passes before its phase is applied"
    );
    assert!(
        !settled.is_empty(),
        "{case} {gate}: no settled state reached"
    );
    for findings in &settled {
        assert!(
            findings.is_empty(),
            "{case}: gate {gate} does not pass once its phase settled (the chain stalls): {findings:?}"
        );
    }
    if let Some(next) = phases.get(i + 1) {
        for s in &passing {
            let t = Transition::from_snapshots(
                s.clone(),
                snapshot(&next.before),
                snapshot(&next.after),
                next.options.clone(),
            );
            let r = explore(&t);
            assert!(
                r.violations.is_empty(),
                "{case}: gate {gate} passed in a state from which {} breaks an invariant: {r}",
                next.gate.name()
            );
        }
    }
    eprintln!(
        "{case}: gate {gate}: passed in {explored} explored states ({early} before every change was applied), {} distinct clusters",
        passing.len()
    );
    (t.settled(), passing.len())
}

fn gates_through_the_model(case: &str, version: &str) {
    let live = load(case, "live.yaml");
    let before = load(case, "before.yaml");
    let observed = observe(&live);
    let mut items = before.clone();
    items.push(observed);
    let handed = run_items(&items, &handover_spec(version));
    let step = |step: &str| orchestrate_spec(version, step);
    let chain = run_items(&handed, &step("chain"));
    // The gates' plan: the chain's plan ConfigMap (observed state and expected end state).
    let cm = chain
        .iter()
        .find(|i| i["kind"] == "ConfigMap" && is_chain(i))
        .unwrap();
    let plan = Plan::parse(cm["data"]["plan.yaml"].as_str().unwrap()).unwrap();
    assert!(
        plan.expected.is_some(),
        "{case}: the plan has no expected end state"
    );
    let cleaned = run_items(
        &run_items(&chain, &step("cleanup-handover")),
        &step("cleanup"),
    );
    let all = ["prepare", "stop-speaker", "cutover"];
    let p1 = applied(&before, &chain, &all[..1]);
    let p2 = applied(&before, &chain, &all[..2]);
    let p3 = applied(&before, &chain, &all);
    // After the cleanup: what it removed is gone (pruned, or with MetalLB's CRDs).
    let kept: HashSet<_> = cleaned.iter().map(identity).collect();
    let p4: Vec<Value> = applied(&before, &cleaned, &all)
        .into_iter()
        .filter(|i| kept.contains(&identity(i)))
        .collect();
    assert!(p3.iter().any(|i| i["kind"] == "IPAddressPool"));
    assert!(
        !p4.iter()
            .any(|i| i["kind"] == "IPAddressPool" || i["kind"] == "L2Advertisement")
    );
    let mut o = Options::new(CiliumVersion::parse(version).unwrap());
    o.services_first = true;
    let mut window = o.clone();
    window.may_leave_unannounced = true;
    let phases = [
        Phase {
            gate: Gate::Prepare,
            before: before.clone(),
            after: p1.clone(),
            options: o,
        },
        Phase {
            gate: Gate::StopSpeaker,
            before: p1,
            after: p2.clone(),
            options: window.clone(),
        },
        Phase {
            gate: Gate::Cutover,
            before: p2,
            after: p3.clone(),
            options: window.clone(),
        },
        Phase {
            gate: Gate::Cleanup,
            before: p3,
            after: p4,
            options: window,
        },
    ];
    let mut state = snapshot(&live);
    for i in 0..phases.len() {
        // What each gate Job's `kubectl get` reads: the cleanup's adds MetalLB's objects.
        let kinds = match phases[i].gate {
            Gate::Cleanup => format!("{LIVE_RESOURCES},{}", METALLB_RESOURCES.replace(' ', ",")),
            _ => LIVE_RESOURCES.to_owned(),
        };
        let (settled, passing) = phase_gated(case, &phases, i, state, &plan, &kinds);
        assert!(
            passing > 0,
            "{case}: gate {} never passes",
            phases[i].gate.name()
        );
        state = settled;
    }
}

#[test]
fn every_state_a_gate_passes_in_is_safe_for_the_next_phase_sharing_auto_on_1_16_2() {
    gates_through_the_model("sharing-auto", "1.16.2");
}

#[test]
fn every_state_a_gate_passes_in_is_safe_for_the_next_phase_operator_restart_on_1_18_1() {
    gates_through_the_model("operator-restart", "1.18.1");
}

/// `model_items` is the other way of `snapshot`: every state of a phase read back from its live
/// objects is the same cluster (the objects, statuses and processes the gates look at).
#[test]
fn model_items_read_back_as_the_state_they_came_from() {
    let (case, version) = ("sharing-auto", "1.16.2");
    let live = load(case, "live.yaml");
    let before = load(case, "before.yaml");
    let mut items = before.clone();
    items.push(observe(&live));
    let prepared = run_items(
        &items,
        &format!("  ciliumVersion: {version}\n  phase: prepare\n"),
    );
    let mut o = Options::new(CiliumVersion::parse(version).unwrap());
    o.services_first = true;
    let t = Transition::new(&live, &before, &prepared, o);
    let now: Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
    let mut states = 0;
    explore_visiting(&t, &mut |v| {
        states += 1;
        let back = snapshot(&verify::model_items(
            v.cluster,
            v.lbipam,
            CILIUM_NAMESPACE,
            now,
        ))
        .cluster;
        let c = v.cluster;
        let status = |c: &cutover::modes::announcer::model::state::Cluster| -> Vec<_> {
            c.services
                .iter()
                .map(|(k, s)| (k.clone(), s.status.clone(), s.spec.class.clone()))
                .collect()
        };
        assert_eq!(status(&back), status(c));
        let nodes = |c: &cutover::modes::announcer::model::state::Cluster| -> Vec<_> {
            c.nodes
                .iter()
                .map(|n| (n.name.clone(), n.labels.clone(), n.network_unavailable))
                .collect()
        };
        assert_eq!(nodes(&back), nodes(c));
        assert_eq!(back.policies, c.policies);
        assert_eq!(
            back.mlb_pools.keys().collect::<Vec<_>>(),
            c.mlb_pools.keys().collect::<Vec<_>>()
        );
        assert_eq!(
            back.adverts.keys().collect::<Vec<_>>(),
            c.adverts.keys().collect::<Vec<_>>()
        );
        let pools = |c: &cutover::modes::announcer::model::state::Cluster| -> Vec<_> {
            c.cilium_pools
                .iter()
                .map(|(n, p)| {
                    (
                        n.clone(),
                        p.blocks.iter().map(|b| b.interval).collect::<Vec<_>>(),
                        p.selector.clone(),
                    )
                })
                .collect()
        };
        assert_eq!(pools(&back), pools(c));
    });
    assert!(states > 1, "{states}");
}

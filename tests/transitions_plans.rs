//! The function's own plans through the transition model. For each situation of
//! `tests/transitions/<case>/` (a live cluster and the package before a phase), the real binary
//! runs the phase on the package plus the `ObservedState` that `cutover observe` writes from the
//! live objects; then either it refuses, or the model explores every order in which Flux's apply
//! and the controllers may interleave from the live state to the function's output and finds no
//! violation: no IP changes or leaves its status, no IP has two announcers, no IP goes
//! unannounced outside the ARP window, Cilium announces from no node MetalLB never did.
//!
//! Flux applies the objects of one Kustomization in its kind order, Services before custom
//! resources (fluxcd/pkg `ssa/sort.go`), so the runs use `services_first`: the runbook requires
//! the Services and the generated pools to be applied by one Kustomization (or the pins to be
//! applied before phase prepare).

mod common;

use common::transitions::{load, observe};
use cutover::modes::announcer::model::{CiliumVersion, Options, Report, Transition, explore};
use serde_yaml::Value;

/// What one run of the function gives: exit code, output items (local config dropped: nothing
/// applies it) and results.
struct Plan {
    code: i32,
    items: Vec<Value>,
    results: Vec<Value>,
}

fn plan(case: &str, live: &str, before: &str, spec: &str) -> Plan {
    let live = load(case, live);
    let mut items: Vec<String> = load(case, before)
        .iter()
        .map(|v| serde_yaml::to_string(v).unwrap())
        .collect();
    items.push(serde_yaml::to_string(&observe(&live)).unwrap());
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    let fc = format!(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: announcer\nspec:\n  announcer: cilium\n{spec}"
    );
    let run = common::run_fn(common::resource_list(&refs, Some(&fc)).as_bytes());
    common::assert_announcer_checks(&run);
    let list = run.resource_list();
    let items = list["items"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["annotations"]["config.kubernetes.io/local-config"] != "true")
        .cloned()
        .collect();
    Plan {
        code: run.code,
        items,
        results: run.results(),
    }
}

fn errors(p: &Plan) -> Vec<String> {
    p.results
        .iter()
        .filter(|r| r["severity"] == "error")
        .map(|r| r["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn options(version: &str) -> Options {
    let mut o = Options::new(CiliumVersion::parse(version).unwrap());
    o.services_first = true;
    o
}

fn explore_plan(case: &str, live: &str, before: &str, plan: &Plan, o: Options) -> Report {
    assert_eq!(plan.code, 0, "{case}: {:?}", errors(plan));
    let t = Transition::new(&load(case, live), &load(case, before), &plan.items, o);
    let r = explore(&t);
    eprintln!("{case}: {r}");
    assert!(r.exhaustive, "{case}: not exhaustive ({} states)", r.states);
    r
}

/// The plan for `spec` from a case's `live` and `before` files, explored from the same files.
fn plan_explored(case: &str, live: &str, before: &str, spec: &str, o: Options) -> Report {
    let p = plan(case, live, before, spec);
    explore_plan(case, live, before, &p, o)
}

fn assert_safe(case: &str, r: &Report) {
    assert!(r.violations.is_empty(), "{case}: {r}");
    assert!(r.after_settling.is_empty(), "{case}: {r}");
}

/// Two Services sharing an auto-assigned IP on 1.16.2: the function pins both members, and no
/// order strips or moves the IP.
#[test]
fn sharing_auto_assigned_on_1_16_2_is_pinned_safely() {
    let c = "sharing-auto";
    let spec = "  ciliumVersion: 1.16.2\n";
    let r = plan_explored(c, "live.yaml", "before.yaml", spec, options("1.16.2"));
    assert_safe(c, &r);
}

/// Why the pins must land first (the function's warning on it): applied by another
/// Kustomization, in any order, the pool can wake LB-IPAM before the pins arrive, and 1.16.2
/// then splits the group.
#[test]
fn sharing_auto_assigned_on_1_16_2_needs_the_pins_first() {
    let c = "sharing-auto";
    let p = plan(c, "live.yaml", "before.yaml", "  ciliumVersion: 1.16.2\n");
    assert!(
        p.results.iter().any(|r| r["severity"] == "warning"
            && r["message"]
                .as_str()
                .unwrap()
                .contains("pins reach the cluster first")),
        "{:?}",
        p.results
    );
    let mut o = options("1.16.2");
    o.services_first = false;
    let r = explore_plan(c, "live.yaml", "before.yaml", &p, o);
    assert!(!r.violations.is_empty(), "{r}");
}

/// One sharing key over several IPs on 1.19.2: pinned, no member swaps its IP.
#[test]
fn sharing_key_over_several_ips_is_pinned_safely() {
    let c = "sharing-multi-ip";
    let spec = "  ciliumVersion: 1.19.2\n";
    let r = plan_explored(c, "live.yaml", "before.yaml", spec, options("1.19.2"));
    assert_safe(c, &r);
}

/// Several pools, LB-IPAM dormant: refused; with the operator stopped during the apply, safe in
/// every order (even without Flux's kind order).
#[test]
fn dormant_lbipam_with_several_pools_needs_the_operator_stopped() {
    let c = "dormant-pools";
    let p = plan(c, "live.yaml", "before.yaml", "  ciliumVersion: 1.19.2\n");
    assert_eq!(p.code, 1);
    assert!(
        errors(&p)
            .iter()
            .any(|e| e.contains("while LB-IPAM holds none")),
        "{:?}",
        errors(&p)
    );
    let mut o = options("1.19.2");
    o.services_first = false;
    o.operator_stopped_during_apply = true;
    let spec = "  ciliumVersion: 1.19.2\n  ciliumOperatorStopped: true\n";
    let r = plan_explored(c, "live.yaml", "before.yaml", spec, o);
    assert_safe(c, &r);
}

/// A live Cilium pool cutover did not make, overlapping MetalLB's range: no plan is safe (the
/// model shows the pinned plan strips too); the function refuses, naming the pool.
#[test]
fn a_live_foreign_pool_is_refused() {
    let c = "conflicting-pool";
    let p = plan(c, "live.yaml", "before.yaml", "  ciliumVersion: 1.19.2\n");
    assert_eq!(p.code, 1);
    assert!(
        errors(&p)
            .iter()
            .any(|e| e.contains("CiliumLoadBalancerIPPool") && e.contains("Conflicting")),
        "{:?}",
        errors(&p)
    );
}

/// A live L2 policy during prepare: Cilium would answer beside MetalLB; refused.
#[test]
fn a_live_foreign_policy_is_refused() {
    let c = "live-policy";
    let p = plan(c, "live.yaml", "before.yaml", "  ciliumVersion: 1.19.2\n");
    assert_eq!(p.code, 1);
    assert!(
        errors(&p)
            .iter()
            .any(|e| e.contains("CiliumL2AnnouncementPolicy") && e.contains("answers ARP")),
        "{:?}",
        errors(&p)
    );
}

/// Phase cutover on 1.19.2 from a case's `live-controller-stopped.yaml` and
/// `before-controller-stopped.yaml` (the speaker and the controller stopped), explored.
fn cutover_with_the_controller_stopped(case: &str, o: Options) -> Report {
    plan_explored(
        case,
        "live-controller-stopped.yaml",
        "before-controller-stopped.yaml",
        "  ciliumVersion: 1.19.2\n  phase: cutover\n",
        o,
    )
}

/// The three phases from the live cluster of `cutover-controller`, each phase's output explored
/// from the state the previous one settled in: prepare keeps MetalLB answering, stop-speaker
/// stops the speaker and the controller (the ARP window opens), cutover prunes the pools with the
/// controller gone and Cilium answers.
#[test]
fn stop_speaker_then_cutover_from_the_live_cluster() {
    let c = "cutover-controller";
    let mut o = options("1.19.2");
    o.may_leave_unannounced = true;
    // stop-speaker, on the package cutover-controller's live state was applied from.
    let spec = "  ciliumVersion: 1.19.2\n  phase: stop-speaker\n";
    let stop = plan_explored(c, "live.yaml", "before.yaml", spec, o.clone());
    assert!(stop.violations.is_empty(), "{c}: {stop}");
    // cutover on the package with the speaker and the controller stopped.
    let r = cutover_with_the_controller_stopped(c, o);
    assert_safe(c, &r);
}

/// Nodes MetalLB excludes: the function's policies keep Cilium off them in every order.
#[test]
fn excluded_nodes_stay_excluded() {
    let c = "excluded-nodes";
    let mut o = options("1.19.2");
    o.may_leave_unannounced = true;
    let r = cutover_with_the_controller_stopped(c, o);
    assert_safe(c, &r);
}

/// Phase prepare changes Cilium's values (operator restart) on 1.18.1: every Service is pinned,
/// none moves.
#[test]
fn operator_restart_on_1_18_1_moves_no_pinned_service() {
    let c = "operator-restart";
    let spec = "  ciliumVersion: 1.18.1\n";
    let r = plan_explored(c, "live.yaml", "before.yaml", spec, options("1.18.1"));
    assert_safe(c, &r);
}

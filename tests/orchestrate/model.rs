//! The chain executed in the transition model: the three Kustomizations applied in `dependsOn`
//! order, each from the state the previous one settled in; the order the chain guards against;
//! and rolling back.

use super::*;

pub(crate) use common::transitions::{load, observe};

pub(crate) fn run_items(items: &[Value], spec: &str) -> Vec<Value> {
    let texts: Vec<String> = items
        .iter()
        .map(|v| serde_yaml::to_string(v).unwrap())
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let fc = format!(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: announcer\nspec:\n  announcer: cilium\n{spec}"
    );
    let run = common::run_fn(common::resource_list(&refs, Some(&fc)).as_bytes());
    common::assert_announcer_checks(&run);
    assert_eq!(run.code, 0, "{}\n{:?}", run.stderr, run.results());
    run.resource_list()["items"].as_sequence().unwrap().clone()
}

pub(crate) fn identity(item: &Value) -> (String, String, String) {
    (
        item["kind"].as_str().unwrap_or("").to_owned(),
        item["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
        item["metadata"]["name"].as_str().unwrap_or("").to_owned(),
    )
}

/// What is on the cluster once the chain's Kustomizations up to `phases` were applied: the
/// package's objects as they were, replaced by the chain's version where a phase applied so far
/// took them over, plus what those phases created. Chain objects (gates, units) and local config
/// are not the model's business.
pub(crate) fn applied(before: &[Value], chain: &[Value], phases: &[&str]) -> Vec<Value> {
    let mut out: BTreeMap<(String, String, String), Value> =
        before.iter().map(|i| (identity(i), i.clone())).collect();
    for item in chain {
        let p = path(item);
        let Some(rest) = p.strip_prefix("cilium-l2-cutover/") else {
            continue;
        };
        let phase = rest.split('/').next().unwrap();
        if is_chain(item) || !phases.contains(&phase) {
            continue;
        }
        out.insert(identity(item), item.clone());
    }
    out.into_values().collect()
}

/// A transitions case (the live cluster before phase prepare, and the package) and the chain
/// the function writes for it after the hand-over step.
fn chain_of(case: &str, version: &str) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    let live = load(case, "live.yaml");
    let before = load(case, "before.yaml");
    let mut items = before.clone();
    items.push(observe(&live));
    let handed = run_items(&items, &handover_spec(version));
    let chain = run_items(&handed, &orchestrate_spec(version, "chain"));
    (live, before, chain)
}

/// Runs the chain on a transitions case (live cluster before phase prepare) and explores each
/// Kustomization's apply in `dependsOn` order, each from the state the previous one settled in.
fn chain_through_the_model(case: &str, version: &str) {
    let (live, before, chain) = chain_of(case, version);
    let chain_spec = orchestrate_spec(version, "chain");
    // Running the chain on its own output changes nothing.
    assert_eq!(
        run_items(&chain, &chain_spec),
        chain,
        "{case}: not idempotent"
    );
    let p0 = before.clone();
    let p1 = applied(&before, &chain, &["prepare"]);
    let p2 = applied(&before, &chain, &["prepare", "stop-speaker"]);
    let p3 = applied(&before, &chain, &["prepare", "stop-speaker", "cutover"]);
    assert!(p1.iter().all(|i| i["kind"] != "CiliumL2AnnouncementPolicy"));
    assert!(p3.iter().any(|i| i["kind"] == "CiliumL2AnnouncementPolicy"));
    let mut o = Options::new(CiliumVersion::parse(version).unwrap());
    // Services and pools are in one Kustomization (prepare): Flux applies Services first.
    o.services_first = true;
    // Gate prepare: IPs kept, MetalLB alone answers, in every order and once settled.
    let t1 = Transition::new(&live, &p0, &p1, o.clone());
    let r1 = explore(&t1);
    assert!(!r1.changes.is_empty(), "{case}: prepare changes nothing");
    assert!(r1.exhaustive, "{case}: {r1}");
    assert!(
        r1.violations.is_empty() && r1.after_settling.is_empty(),
        "{case} prepare: {r1}"
    );
    // Gate stop-speaker: IPs kept, nobody but MetalLB ever answered; the ARP window opens.
    o.may_leave_unannounced = true;
    let t2 = Transition::from_snapshots(t1.settled(), snapshot(&p1), snapshot(&p2), o.clone());
    let r2 = explore(&t2);
    assert!(r2.violations.is_empty(), "{case} stop-speaker: {r2}");
    // Gate cutover: IPs kept, Cilium alone answers for every IP once settled.
    let t3 = Transition::from_snapshots(t2.settled(), snapshot(&p2), snapshot(&p3), o);
    let r3 = explore(&t3);
    assert!(!r3.changes.is_empty(), "{case}: cutover changes nothing");
    assert!(
        r3.violations.is_empty() && r3.after_settling.is_empty(),
        "{case} cutover: {r3}"
    );
}

#[test]
fn the_chain_keeps_every_invariant_sharing_auto_on_1_16_2() {
    chain_through_the_model("sharing-auto", "1.16.2");
}

#[test]
fn the_chain_keeps_every_invariant_operator_restart_on_1_18_1() {
    chain_through_the_model("operator-restart", "1.18.1");
}

/// Why the chain orders the phases: the cutover payload applied while the speaker still runs
/// (its Kustomization without `dependsOn` on stop-speaker) has MetalLB and Cilium answer at once.
#[test]
fn the_cutover_payload_before_stop_speaker_breaks_one_announcer() {
    let (case, version) = ("operator-restart", "1.18.1");
    let (live, before, chain) = chain_of(case, version);
    let p1 = applied(&before, &chain, &["prepare"]);
    let skipped = applied(&before, &chain, &["prepare", "cutover"]);
    let mut o = Options::new(CiliumVersion::parse(version).unwrap());
    o.services_first = true;
    let t1 = Transition::new(&live, &before, &p1, o.clone());
    let t = Transition::from_snapshots(t1.settled(), snapshot(&p1), snapshot(&skipped), o);
    let r = explore(&t);
    assert!(
        !r.of(cutover::modes::announcer::model::Invariant::OneAnnouncer)
            .is_empty(),
        "{r}"
    );
}

/// Rollback: reverting the whole chain commit after gate prepare takes the pins off and
/// reverts Cilium's values (an operator restart); on 1.18.1 the restart race re-allocates an
/// IP LB-IPAM already holds. Why the runbook rolls back to the prepare state and keeps its
/// pins, pools and values, instead of reverting the chain commit; that return (policies
/// first, then MetalLB's speaker and controller) keeps every invariant, doing both at once does
/// not.
#[test]
fn reverting_the_whole_chain_after_prepare_can_move_an_ip() {
    let (case, version) = ("operator-restart", "1.18.1");
    let (live, before, chain) = chain_of(case, version);
    let p1 = applied(&before, &chain, &["prepare"]);
    let p2 = applied(&before, &chain, &["prepare", "stop-speaker"]);
    let p3 = applied(&before, &chain, &["prepare", "stop-speaker", "cutover"]);
    let mut o = Options::new(CiliumVersion::parse(version).unwrap());
    o.services_first = true;
    let t1 = Transition::new(&live, &before, &p1, o.clone());
    let revert =
        Transition::from_snapshots(t1.settled(), snapshot(&p1), snapshot(&before), o.clone());
    let r = explore(&revert);
    assert!(
        !r.of(cutover::modes::announcer::model::Invariant::IpKept)
            .is_empty(),
        "{r}"
    );
    // Going back from cutover to the prepare state (policies first, pins kept) keeps every IP
    // and never has two announcers.
    o.may_leave_unannounced = true;
    let t2 = Transition::from_snapshots(t1.settled(), snapshot(&p1), snapshot(&p2), o.clone());
    let t3 = Transition::from_snapshots(t2.settled(), snapshot(&p2), snapshot(&p3), o.clone());
    let back = Transition::from_snapshots(t3.settled(), snapshot(&p3), snapshot(&p2), o.clone());
    let r = explore(&back);
    assert!(r.violations.is_empty(), "{r}");
    // Then MetalLB's speaker and controller back (the stop-speaker payload's objects as they were
    // after the hand-over): MetalLB alone answers again for every IP, none changes. The same
    // straight after the stop-speaker gate, before cutover was applied.
    for (from, what) in [
        (back.settled(), "after cutover"),
        (t2.settled(), "after stop-speaker"),
    ] {
        let speaker_back =
            Transition::from_snapshots(from, snapshot(&p2), snapshot(&p1), o.clone());
        let r = explore(&speaker_back);
        assert!(
            !r.changes.is_empty(),
            "{what}: the speaker's return changes nothing"
        );
        assert!(
            r.violations.is_empty() && r.after_settling.is_empty(),
            "{what}: {r}"
        );
    }
    // Both at once (the runbook's order skipped): in some order the speaker answers while a
    // policy still makes Cilium answer.
    let at_once = Transition::from_snapshots(t3.settled(), snapshot(&p3), snapshot(&p1), o);
    let r = explore(&at_once);
    assert!(
        !r.of(cutover::modes::announcer::model::Invariant::OneAnnouncer)
            .is_empty(),
        "{r}"
    );
}

//! Transition model regressions: one live snapshot and the packages before and after one Flux
//! apply per situation (under `tests/transitions/<case>/`), explored in every order. For each
//! situation, the plan the function emits today shows a violation in some order, and the fixed
//! plan shows none in any explored order (or, where no plan is safe, the fix is shown to fail
//! too). Each test names the upstream rule it rests on.

mod common;

use common::transitions::load;
use cutover::modes::announcer::model::CiliumVersion;
use cutover::modes::announcer::model::explore::{Change, ObjRef};
use cutover::modes::announcer::model::state::SvcKey;
use cutover::modes::announcer::model::{Invariant, Options, Report, Transition, explore, snapshot};

fn opts(version: &str) -> Options {
    Options::new(CiliumVersion::parse(version).unwrap())
}

fn run(case: &str, live: &str, before: &str, after: &str, o: Options) -> Report {
    let t = Transition::new(
        &load(case, live),
        &load(case, before),
        &load(case, after),
        o,
    );
    let r = explore(&t);
    eprintln!("{case} {live} {before} -> {after}:\n{r}");
    assert!(
        r.exhaustive,
        "{case}: the search was not exhaustive ({} states)",
        r.states
    );
    r
}

fn svc(ns: &str, name: &str) -> SvcKey {
    SvcKey {
        namespace: ns.into(),
        name: name.into(),
    }
}

fn broken(r: &Report, inv: Invariant, s: &SvcKey) -> bool {
    r.of(inv).iter().any(|v| v.finding.service == *s)
}

/// cilium/cilium#34783 (`stripOrImportIngresses` does not register the imported IP under the
/// sharing key; fixed in 1.16.3): on 1.16.2 the second member of an auto-assigned shared IP is
/// stripped and gets a new IP. `satisfySpecificIPRequests` joins the holders without the
/// key index, so pinning each member's IP keeps it — once LB-IPAM sees the pins before it
/// wakes.
#[test]
fn sharing_auto_assigned_on_1_16_2() {
    let c = "sharing-auto";
    let naive = run(c, "live.yaml", "before.yaml", "naive.yaml", opts("1.16.2"));
    assert!(
        broken(&naive, Invariant::IpKept, &svc("web", "a"))
            || broken(&naive, Invariant::IpKept, &svc("web", "b"))
    );
    let mut o = opts("1.16.2");
    o.services_first = true;
    let fixed = run(c, "live.yaml", "before.yaml", "fixed.yaml", o.clone());
    assert!(fixed.violations.is_empty(), "{fixed}");
    // The naive plan breaks even when the Services go first: the bug is the import's.
    let naive = run(c, "live.yaml", "before.yaml", "naive.yaml", o);
    assert!(!naive.of(Invariant::IpKept).is_empty());
    assert!(naive.changes.contains(&Change::L2On));
    // In any apply order, the pool may wake LB-IPAM before the pins land; with the operator
    // stopped during the apply the pins are always read first.
    let early = run(c, "live.yaml", "before.yaml", "fixed.yaml", opts("1.16.2"));
    assert!(!early.of(Invariant::IpKept).is_empty(), "{early}");
    let mut o = opts("1.16.2");
    o.operator_stopped_during_apply = true;
    let fixed = run(c, "live.yaml", "before.yaml", "fixed.yaml", o.clone());
    assert!(fixed.violations.is_empty(), "{fixed}");
    let naive = run(c, "live.yaml", "before.yaml", "naive.yaml", o);
    assert!(!naive.of(Invariant::IpKept).is_empty(), "{naive}");
}

/// Through 1.19.x `satisfyGenericIPv4Requests` gives a member whose import collided the FIRST
/// compatible IP registered under its sharing key (fixed by cilium/cilium#46262): with one key
/// over two IPs, a member of the second IP may move to the first. Pinned members take the
/// specific-request path and join their own IP's holders.
#[test]
fn sharing_key_over_several_ips_on_1_19() {
    let c = "sharing-multi-ip";
    let mut o = opts("1.19.2");
    o.services_first = true;
    let naive = run(c, "live.yaml", "before.yaml", "naive.yaml", o.clone());
    let moved: Vec<String> = naive
        .of(Invariant::IpKept)
        .iter()
        .map(|v| v.finding.detail.clone())
        .collect();
    assert!(
        moved
            .iter()
            .any(|d| d.starts_with("status is [10.0.0.5], live it was [10.0.0.6]")),
        "{naive}"
    );
    let fixed = run(c, "live.yaml", "before.yaml", "fixed.yaml", o);
    assert!(fixed.violations.is_empty(), "{fixed}");
    let mut o = opts("1.19.2");
    o.operator_stopped_during_apply = true;
    let fixed = run(c, "live.yaml", "before.yaml", "fixed.yaml", o);
    assert!(fixed.violations.is_empty(), "{fixed}");
    // The same plan on a release with the fix (cilium/cilium#46262, modelled from 1.20.0) keeps
    // every IP unpinned.
    let mut o = opts("1.20.0");
    o.services_first = true;
    let later = run(c, "live.yaml", "before.yaml", "naive.yaml", o);
    assert!(later.violations.is_empty(), "{later}");
}

/// `initialize` wakes LB-IPAM on the first pool event and revalidates every Service with only
/// that pool known (cilium/cilium lbipam.go, every branch 1.15–1.19): a Service of a pool not
/// seen yet is stripped and, from an auto-assign pool that admits it, gets a new IP that
/// MetalLB's running controller accepts. Pinning alone still strips it (`findRangeOfIP` finds
/// no range, the status is patched without the IP); with the operator stopped during the
/// apply, LB-IPAM lists every pool before any Service.
#[test]
fn dormant_lbipam_with_several_pools() {
    let c = "dormant-pools";
    let naive = run(c, "live.yaml", "before.yaml", "naive.yaml", opts("1.18.2"));
    assert!(
        naive.of(Invariant::IpKept).iter().any(|v| v
            .finding
            .detail
            .starts_with("status is [10.0.0.")
            && v.finding.service == svc("web", "s1")),
        "{naive}"
    );
    let mut o = opts("1.18.2");
    o.services_first = true;
    let pinned = run(c, "live.yaml", "before.yaml", "pinned.yaml", o.clone());
    assert!(
        pinned
            .of(Invariant::IpKept)
            .iter()
            .any(|v| v.finding.detail.starts_with("status is []")),
        "pinning alone should leave a transient strip: {pinned}"
    );
    // Transient: once the second pool is handled, the pinned IP is back.
    assert!(pinned.after_settling.is_empty(), "{pinned}");
    o.operator_stopped_during_apply = true;
    let safe = run(c, "live.yaml", "before.yaml", "pinned.yaml", o.clone());
    assert!(safe.violations.is_empty(), "{safe}");
    assert!(safe.changes.contains(&Change::OperatorStart));
    assert!(!safe.changes.contains(&Change::OperatorRestart));
    // In any apply order too: nothing reads the pins before the operator starts.
    o.services_first = false;
    let safe = run(c, "live.yaml", "before.yaml", "pinned.yaml", o.clone());
    assert!(safe.violations.is_empty(), "{safe}");
    // Here the stopped operator alone suffices: every IP imports once all pools are known.
    let unpinned = run(c, "live.yaml", "before.yaml", "naive.yaml", o);
    assert!(unpinned.violations.is_empty(), "{unpinned}");
}

/// `settleConflicts` marks the NEWER of two overlapping pools Conflicting and disables its
/// ranges; `findRangeOfIP` skips disabled ranges. A live pool cutover did not make that
/// overlaps the MetalLB range but does not select the Service leaves the generated pool
/// unable to import: the IP is stripped at the operator restart `prepare` causes, pinned or
/// not. There is no safe plan (the function refuses it).
#[test]
fn live_cilium_pool_overlapping_a_metallb_range() {
    let c = "conflicting-pool";
    for after in ["naive.yaml", "pinned.yaml"] {
        let r = run(c, "live.yaml", "before.yaml", after, opts("1.19.2"));
        assert!(
            broken(&r, Invariant::IpKept, &svc("web", "a")),
            "{after}: {r}"
        );
        assert!(
            r.of(Invariant::IpKept)
                .iter()
                .any(|v| v.finding.detail.starts_with("status is []")),
            "{after}: {r}"
        );
    }
}

/// `pkg/l2announcer/l2announcer.go`: a policy without `serviceSelector` selects every
/// Service. Turning `l2announcements.enabled` on in `prepare` while such a policy exists makes
/// Cilium answer ARP beside MetalLB's running speaker.
#[test]
fn l2_policy_live_during_prepare() {
    let c = "live-policy";
    let naive = run(c, "live.yaml", "before.yaml", "naive.yaml", opts("1.19.2"));
    assert!(
        broken(&naive, Invariant::OneAnnouncer, &svc("web", "a")),
        "{naive}"
    );
    let fixed = run(c, "live.yaml", "before.yaml", "fixed.yaml", opts("1.19.2"));
    assert!(fixed.violations.is_empty(), "{fixed}");
}

/// MetalLB `controller/service.go` `convergeBalancer` (v0.16.1): with no pool left it clears
/// the status (`clearServiceState`, written by `SetBalancer`). `cutover` prunes the
/// IPAddressPools; if the controller still runs, it can see that before it stops. Stopping
/// the controller in `stop-speaker` (`controller.enabled: false`) leaves nobody to clear it.
#[test]
fn cutover_prunes_pools_while_the_controller_runs() {
    let c = "cutover-controller";
    let mut o = opts("1.19.2");
    o.may_leave_unannounced = true;
    let naive = run(c, "live.yaml", "before.yaml", "fixed.yaml", o.clone());
    assert!(
        naive
            .of(Invariant::IpKept)
            .iter()
            .any(|v| v.finding.detail.starts_with("status is []")),
        "{naive}"
    );
    // A flap: LB-IPAM re-asserts the IP it holds once the controller is gone.
    assert!(naive.after_settling.is_empty(), "{naive}");
    let fixed = run(
        c,
        "live-controller-stopped.yaml",
        "before-controller-stopped.yaml",
        "fixed.yaml",
        o,
    );
    assert!(fixed.violations.is_empty(), "{fixed}");
    assert!(!fixed.changes.contains(&Change::ControllerStops));
}

/// MetalLB's `speakersForPool` (v0.15.3) skips nodes labelled
/// `node.kubernetes.io/exclude-from-external-load-balancers`; Cilium's L2 announcer has no such
/// rule. A generated policy without a node selector announces from them; a `DoesNotExist`
/// requirement on the label keeps the announcing set.
#[test]
fn excluded_nodes() {
    let c = "excluded-nodes";
    let mut o = opts("1.19.2");
    o.may_leave_unannounced = true;
    let (live, before) = (
        "live-controller-stopped.yaml",
        "before-controller-stopped.yaml",
    );
    let naive = run(c, live, before, "naive.yaml", o.clone());
    let new_node = naive.of(Invariant::NoNewNode);
    assert!(
        new_node
            .iter()
            .any(|v| v.finding.detail.contains("\"cp1\"")),
        "{naive}"
    );
    let fixed = run(c, live, before, "fixed.yaml", o);
    assert!(fixed.violations.is_empty(), "{fixed}");
    assert!(fixed.after_settling.is_empty(), "{fixed}");
}

/// Changing Cilium's values restarts the operator; below 1.18.2 a restart may re-allocate the
/// IPs of Services that request none (cilium/cilium#43131, fixed by cilium/cilium#41147 and
/// #41122). Services that pin their IP keep it (cilium/cilium#39033).
#[test]
fn operator_restart_on_1_18_1() {
    let c = "operator-restart";
    let r = run(c, "live.yaml", "before.yaml", "after.yaml", opts("1.18.1"));
    assert!(r.changes.contains(&Change::OperatorRestart));
    assert!(broken(&r, Invariant::IpKept, &svc("web", "free")), "{r}");
    assert!(!broken(&r, Invariant::IpKept, &svc("web", "pinned")), "{r}");
    let fixed = run(c, "live.yaml", "before.yaml", "after.yaml", opts("1.18.2"));
    assert!(fixed.violations.is_empty(), "{fixed}");
}

/// `stop-speaker` with `controller.enabled: false`: the speaker and the controller stop, the IP
/// stays, and the ARP window opens — a violation of (c) unless the transition declares it.
#[test]
fn stop_speaker_opens_the_arp_window() {
    let c = "stop-speaker";
    let r = run(c, "live.yaml", "before.yaml", "after.yaml", opts("1.19.2"));
    assert_eq!(
        r.changes,
        vec![Change::SpeakerStops, Change::ControllerStops]
    );
    assert_eq!(r.violations.len(), 1, "{r}");
    assert_eq!(r.violations[0].invariant(), Invariant::Announced);
    assert_eq!(r.violations[0].trace.len(), 1);
    let mut o = opts("1.19.2");
    o.may_leave_unannounced = true;
    let r = run(c, "live.yaml", "before.yaml", "after.yaml", o);
    assert!(r.violations.is_empty(), "{r}");
}

/// Past the state bound the explorer samples seeded random walks and shrinks what it finds:
/// the dormant-pools violation is found again, as short as the exhaustive search's, and the
/// same seed gives the same report.
#[test]
fn random_walks_find_and_shrink() {
    let c = "dormant-pools";
    let mut o = opts("1.18.2");
    o.max_states = 5;
    o.walks = 50;
    o.max_depth = 30;
    let t = Transition::new(
        &load(c, "live.yaml"),
        &load(c, "before.yaml"),
        &load(c, "naive.yaml"),
        o,
    );
    let r = explore(&t);
    assert!(!r.exhaustive);
    let kept = r.of(Invariant::IpKept);
    assert!(!kept.is_empty(), "{r}");
    assert!(kept.iter().all(|v| v.trace.len() <= 3), "{r}");
    let again = explore(&t);
    assert_eq!(r.violations, again.violations);
}

/// Phases chain: the settled state of `stop-speaker` is the live state of `cutover`. The ARP
/// window is still open once `stop-speaker` settles; once `cutover` settles, Cilium answers
/// for the IP and nothing was broken on the way.
#[test]
fn stop_speaker_then_cutover() {
    let mut o = opts("1.19.2");
    o.may_leave_unannounced = true;
    let stop = Transition::new(
        &load("stop-speaker", "live.yaml"),
        &load("stop-speaker", "before.yaml"),
        &load("stop-speaker", "after.yaml"),
        o.clone(),
    );
    let r = explore(&stop);
    assert!(r.violations.is_empty(), "{r}");
    let open: Vec<Invariant> = r.after_settling.iter().map(|f| f.invariant).collect();
    assert_eq!(open, vec![Invariant::Announced]);
    let cutover = Transition::from_snapshots(
        stop.settled(),
        snapshot(&load("stop-speaker", "after.yaml")),
        snapshot(&load("cutover-controller", "fixed.yaml")),
        o,
    );
    assert!(
        cutover.live().services[&svc("web", "a")].status
            == stop.live().services[&svc("web", "a")].status
    );
    let r = explore(&cutover);
    assert!(r.exhaustive);
    assert!(
        r.changes
            .contains(&Change::Prune(ObjRef::MetalLbPool("default-pool".into())))
    );
    assert!(!r.changes.contains(&Change::ControllerStops));
    assert!(r.violations.is_empty(), "{r}");
    assert!(r.after_settling.is_empty(), "{r}");
}

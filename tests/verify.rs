//! `cutover verify`: the real binary on recorded live states (tests/verify/<gate>/live.yaml,
//! `kubectl get … -o yaml` as documented in docs/operations/cilium-l2-cutover.md) against the
//! plan `cutover observe` wrote from the state before prepare (tests/verify/plan.yaml). Each
//! gate passes on its recorded state; each way it fails is that state with one edit, asserted
//! on exit code and finding line.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Run, run_cmd, run_with_stdin};

/// The time the recorded Leases are judged at: 10 s after their renewal (duration 15 s).
const NOW: &str = "2026-12-01T12:00:30Z";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/verify")
}

fn plan() -> String {
    dir().join("plan.yaml").display().to_string()
}

fn live(gate: &str) -> String {
    std::fs::read_to_string(dir().join(gate).join("live.yaml")).unwrap()
}

/// `live` with `from` replaced by `to` (which must change it).
fn edit(live: &str, from: &str, to: &str) -> String {
    assert!(live.contains(from), "{from:?} is not in the fixture");
    live.replacen(from, to, 1)
}

fn verify(gate: &str, input: &str, extra: &[&str]) -> Run {
    let mut cmd = Command::new(common::bin());
    cmd.args(["verify", gate, "--plan", &plan()]);
    if !extra.iter().any(|a| a.starts_with("--now")) {
        cmd.args(["--now", NOW]);
    }
    cmd.args(extra);
    run_with_stdin(cmd, input.as_bytes())
}

fn stdout(run: &Run) -> String {
    run.stdout_str().to_owned()
}

/// Asserts exit 1 with exactly the given finding lines (after the gate prefix), then the
/// FAILED summary.
fn assert_findings(gate: &str, input: &str, findings: &[&str]) {
    let run = verify(gate, input, &[]);
    let out = stdout(&run);
    assert_eq!(run.code, 1, "{out}{}", run.stderr);
    let lines: Vec<&str> = out.lines().collect();
    let want: Vec<String> = findings
        .iter()
        .map(|f| format!("cutover verify: {gate}: {f}"))
        .collect();
    assert_eq!(lines[..lines.len() - 1], want[..], "{out}");
    assert_eq!(
        lines[lines.len() - 1],
        format!(
            "cutover verify: {gate}: FAILED: {} finding(s) (2 Services with observed IPs)",
            findings.len()
        )
    );
}

#[test]
fn the_plan_is_what_cutover_observe_writes_from_the_state_before_prepare() {
    let before = std::fs::read(dir().join("before.yaml")).unwrap();
    let run = run_with_stdin(
        {
            let mut c = Command::new(common::bin());
            c.arg("observe");
            c
        },
        &before,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan = std::fs::read_to_string(dir().join("plan.yaml")).unwrap();
    assert_eq!(stdout(&run), plan);
}

#[test]
fn each_gate_passes_on_its_recorded_state() {
    for gate in ["prepare", "stop-speaker", "cutover", "cleanup"] {
        let run = verify(gate, &live(gate), &[]);
        assert_eq!(run.code, 0, "{gate}: {}{}", stdout(&run), run.stderr);
        assert_eq!(
            stdout(&run),
            format!("cutover verify: {gate}: passed (2 Services with observed IPs)\n")
        );
        assert!(run.stderr.is_empty(), "{}", run.stderr);
    }
}

/// Every gate checks the IPs: stripped, changed, partly changed, or the Service gone.
#[test]
fn every_gate_fails_when_an_ip_is_stripped_or_changed() {
    for gate in ["prepare", "stop-speaker", "cutover", "cleanup"] {
        let state = live(gate);
        let stripped = edit(&state, "ingress: [{ip: 10.0.0.5}]", "ingress: []");
        assert_findings(
            gate,
            &stripped,
            &["Service shop/web lost its IPs: observed 10.0.0.5, now none"],
        );
        let changed = edit(
            &state,
            "ingress: [{ip: 10.0.0.5}]",
            "ingress: [{ip: 10.0.0.9}]",
        );
        assert_findings(
            gate,
            &changed,
            &["Service shop/web IPs changed: observed 10.0.0.5, now 10.0.0.9"],
        );
        let half = edit(&state, "{ip: \"fd00::6\"}", "{ip: \"fd00::7\"}");
        assert_findings(
            gate,
            &half,
            &["Service infra/dns IPs changed: observed 10.0.0.6,fd00::6, now 10.0.0.6,fd00::7"],
        );
    }
    // Gone altogether: the other checks of the Service say nothing more about it.
    let gone = edit(&live("prepare"), "name: web\n", "name: web-renamed\n");
    assert_findings(
        "prepare",
        &gone,
        &["Service shop/web is gone (observed 10.0.0.5)"],
    );
    // The same address spelt otherwise is the same IP.
    let spelt = edit(&live("prepare"), "{ip: \"fd00::6\"}", "{ip: \"fd00:0::6\"}");
    assert_eq!(verify("prepare", &spelt, &[]).code, 0);
}

#[test]
fn prepare_fails_until_lb_ipam_satisfied_each_service_and_names_the_reason() {
    let state = live("prepare");
    for reason in [
        "no_pool",
        "out_of_ips",
        "already_allocated",
        "pool_selector_mismatch",
        "already_allocated_incompatible_service",
    ] {
        // The first condition in the file is shop/web's.
        let unsatisfied = edit(
            &state,
            "status: \"True\", reason: satisfied, message: \"\"",
            &format!(
                "status: \"False\", reason: {reason}, message: \"IP '10.0.0.5' cannot be given\""
            ),
        );
        assert_findings(
            "prepare",
            &unsatisfied,
            &[&format!(
                "Service shop/web: cilium.io/IPAMRequestSatisfied is False with reason {reason}: IP '10.0.0.5' cannot be given"
            )],
        );
    }
    let untouched = edit(
        &state,
        "\n    - {type: cilium.io/IPAMRequestSatisfied, status: \"True\", reason: satisfied, message: \"\", lastTransitionTime: \"2026-12-01T11:50:00Z\"}",
        " []",
    );
    assert_findings(
        "prepare",
        &untouched,
        &[
            "Service shop/web: LB-IPAM has not taken it yet (no cilium.io/IPAMRequestSatisfied condition)",
        ],
    );
    // A Service of another load-balancer class is none of LB-IPAM's business.
    let other_class = edit(
        &untouched,
        "spec: {type: LoadBalancer,",
        "spec: {type: LoadBalancer, loadBalancerClass: example.com/other,",
    );
    assert_eq!(verify("prepare", &other_class, &[]).code, 0);
}

#[test]
fn prepare_fails_on_a_conflicting_pool() {
    let conflicting = edit(
        &live("prepare"),
        "{type: cilium.io/PoolConflict, status: \"False\", reason: resolved, message: \"\"",
        "{type: cilium.io/PoolConflict, status: \"True\", reason: cidr_overlap, message: \"Pool overlaps with CIDR of pool 'lan-old'\"",
    );
    assert_findings(
        "prepare",
        &conflicting,
        &[
            "CiliumLoadBalancerIPPool cutover-lan is Conflicting (cidr_overlap): Pool overlaps with CIDR of pool 'lan-old'",
        ],
    );
}

/// While MetalLB announces, a CiliumL2AnnouncementPolicy or a held cilium-l2announce Lease is
/// a second announcer; an unheld Lease, or a Lease in another namespace, is not.
#[test]
fn prepare_fails_on_a_foreign_announcer() {
    let prepare = live("prepare");
    let cutover = live("cutover");
    let policy_start = cutover.find("- apiVersion: cilium.io/v2alpha1").unwrap();
    let with_policy = format!("{prepare}{}", &cutover[policy_start..]);
    assert_findings(
        "prepare",
        &with_policy,
        &[
            "CiliumL2AnnouncementPolicy cutover-lan exists: Cilium may answer ARP while MetalLB does",
        ],
    );
    let lease_start = cutover
        .find("- apiVersion: coordination.k8s.io/v1\n  kind: Lease\n  metadata: {name: cilium-l2announce-shop-web")
        .unwrap();
    let lease_end = cutover[lease_start..]
        .find("leaseTransitions: 0}\n")
        .unwrap()
        + lease_start
        + "leaseTransitions: 0}\n".len();
    let lease = &cutover[lease_start..lease_end];
    assert_findings(
        "prepare",
        &format!("{prepare}{lease}"),
        &[
            "Lease kube-system/cilium-l2announce-shop-web is held by w1: Cilium announces while MetalLB does",
        ],
    );
    let unheld = lease.replace("holderIdentity: w1", "holderIdentity: \"\"");
    assert_eq!(
        verify("prepare", &format!("{prepare}{unheld}"), &[]).code,
        0
    );
    let run = verify(
        "prepare",
        &format!("{prepare}{lease}"),
        &["--cilium-namespace", "cilium"],
    );
    assert_eq!(run.code, 0, "{}", stdout(&run));
}

#[test]
fn stop_speaker_fails_while_a_metallb_pod_runs() {
    let state = live("stop-speaker");
    let speaker = edit(
        &state,
        "status: {phase: Succeeded}",
        "status: {phase: Running}",
    );
    assert_findings(
        "stop-speaker",
        &speaker,
        &["MetalLB speaker pod metallb-system/metallb-speaker-old is still Running on node w1"],
    );
    let pending = edit(
        &state,
        "status: {phase: Succeeded}",
        "status: {phase: Pending}",
    );
    assert_findings(
        "stop-speaker",
        &pending,
        &["MetalLB speaker pod metallb-system/metallb-speaker-old is still Pending on node w1"],
    );
    let controller = edit(
        &speaker,
        "labels: {app: metallb, component: speaker}",
        "labels: {app: metallb, component: controller}",
    );
    assert_findings(
        "stop-speaker",
        &controller,
        &["MetalLB controller pod metallb-system/metallb-speaker-old is still Running on node w1"],
    );
    // The chart's labels count as well: prepare's state still has MetalLB's three pods.
    assert_findings(
        "stop-speaker",
        &live("prepare"),
        &[
            "MetalLB speaker pod metallb-system/metallb-speaker-a is still Running on node w1",
            "MetalLB speaker pod metallb-system/metallb-speaker-b is still Running on node w2",
            "MetalLB controller pod metallb-system/metallb-controller-7d9f is still Running on node w1",
        ],
    );
}

#[test]
fn cutover_fails_unless_each_lease_is_held_unexpired_by_an_allowed_node() {
    let state = live("cutover");
    let missing = edit(
        &state,
        "name: cilium-l2announce-shop-web,",
        "name: cilium-l2announce-shop-web-old,",
    );
    assert_findings(
        "cutover",
        &missing,
        &[
            "Service shop/web: no Lease kube-system/cilium-l2announce-shop-web: no node announces it",
        ],
    );
    let unheld = edit(&state, "holderIdentity: w1", "holderIdentity: \"\"");
    assert_findings(
        "cutover",
        &unheld,
        &["Service shop/web: Lease kube-system/cilium-l2announce-shop-web has no holder"],
    );
    let excluded = edit(&state, "holderIdentity: w1", "holderIdentity: cp1");
    assert_findings(
        "cutover",
        &excluded,
        &[
            "Service shop/web: Lease kube-system/cilium-l2announce-shop-web is held by cp1, a node MetalLB never announced from (node.kubernetes.io/exclude-from-external-load-balancers)",
        ],
    );
    let unknown = edit(&state, "holderIdentity: w1", "holderIdentity: w9");
    assert_findings(
        "cutover",
        &unknown,
        &[
            "Service shop/web: Lease kube-system/cilium-l2announce-shop-web is held by w9, which is no Node of the cluster",
        ],
    );
    // The holder must be a node a policy selects for the Service (the transition model's
    // candidates): here the policy selects infra's Services only.
    let narrowed = edit(
        &state,
        "    loadBalancerIPs: true\n",
        "    loadBalancerIPs: true\n    serviceSelector: {matchLabels: {io.kubernetes.service.namespace: infra}}\n",
    );
    assert_findings(
        "cutover",
        &narrowed,
        &[
            "Service shop/web: Lease kube-system/cilium-l2announce-shop-web is held by w1, which no CiliumL2AnnouncementPolicy selects for it (selected: none)",
        ],
    );
    let worker = edit(
        &state,
        "      matchExpressions: [{key: node.kubernetes.io/exclude-from-external-load-balancers, operator: DoesNotExist}]\n",
        "      matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [w2]}]\n",
    );
    let worker = edit(
        &worker,
        "metadata: {name: w2}",
        "metadata: {name: w2, labels: {kubernetes.io/hostname: w2}}",
    );
    assert_findings(
        "cutover",
        &worker,
        &[
            "Service shop/web: Lease kube-system/cilium-l2announce-shop-web is held by w1, which no CiliumL2AnnouncementPolicy selects for it (selected: w2)",
        ],
    );
    // Both Leases were renewed at 12:00:20 for 15 s.
    let run = verify("cutover", &state, &["--now=2026-12-01T12:00:36Z"]);
    assert_eq!(run.code, 1);
    let out = stdout(&run);
    assert!(
        out.contains("cutover verify: cutover: Service shop/web: Lease kube-system/cilium-l2announce-shop-web held by w1 expired at 2026-12-01T12:00:35Z (renewed 2026-12-01T12:00:20Z, 15s; now 2026-12-01T12:00:36Z)\n"),
        "{out}"
    );
    assert!(
        out.ends_with("FAILED: 2 finding(s) (2 Services with observed IPs)\n"),
        "{out}"
    );
    assert_eq!(
        verify("cutover", &state, &["--now", "2026-12-01T12:00:35Z"]).code,
        0
    );
    // The Leases in another namespace are not Cilium's.
    let run = verify("cutover", &state, &["--cilium-namespace", "cilium"]);
    assert_eq!(run.code, 1);
    assert_eq!(stdout(&run).lines().count(), 3, "{}", stdout(&run));
}

#[test]
fn cleanup_fails_while_metallb_objects_are_left_and_cutover_does_not_read_them() {
    let prepare = live("prepare");
    let start = prepare.find("- apiVersion: metallb.io/v1beta1").unwrap();
    let left = format!("{}{}", live("cleanup"), &prepare[start..]);
    // The cutover gate is about Cilium announcing; MetalLB's objects are the cleanup's.
    assert_eq!(verify("cutover", &left, &[]).code, 0);
    assert_findings(
        "cleanup",
        &left,
        &[
            "MetalLB IPAddressPool metallb-system/lan is left: remove MetalLB",
            "MetalLB L2Advertisement metallb-system/lan is left: remove MetalLB",
        ],
    );
}

#[test]
fn bad_arguments_are_a_usage_error() {
    let plan = plan();
    for args in [
        &["verify"][..],
        &["verify", "prepare"],
        &["verify", "nope", "--plan", &plan],
        &["verify", "prepare", "--plan"],
        &["verify", "prepare", "--plan", &plan, "--plan", &plan],
        &["verify", "prepare", "--plan", &plan, "--frobnicate"],
        &["verify", "prepare", "cutover", "--plan", &plan],
        &["verify", "cutover", "--plan", &plan, "--now", "yesterday"],
        &["verify", "cutover", "--plan", &plan, "--cilium-namespace="],
        &["verify", "prepare", "--plan", "/nonexistent/plan.yaml"],
    ] {
        let run = run_with_stdin(
            {
                let mut c = Command::new(common::bin());
                c.args(args);
                c
            },
            live("prepare").as_bytes(),
        );
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}");
        assert!(
            run.stderr.starts_with("cutover verify: "),
            "{args:?}: {}",
            run.stderr
        );
    }
    let help = run_cmd(Command::new(common::bin()).args(["verify", "--help"]));
    assert_eq!(help.code, 0);
    assert!(
        help.stdout_str()
            .contains("cutover verify GATE --plan FILE")
    );
    let help = run_cmd(Command::new(common::bin()).arg("--help"));
    assert!(
        help.stdout_str()
            .contains("cutover verify GATE --plan FILE")
    );
}

#[test]
fn unreadable_input_fails_with_a_message_never_a_panic() {
    for (input, needle) in [
        ("{{{ not: yaml", "cannot read stdin: not YAML"),
        ("\u{0}\u{1}binary", "cannot read stdin"),
        ("kind: Service", "expected a List"),
        (
            "kind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: web}, spec: {ports: 80}}\n",
            "cannot read stdin: items[0] (Service web)",
        ),
        (
            "kind: List\nitems:\n- {apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: l}, spec: {renewTime: soon}}\n",
            "cannot read stdin: items[0] (Lease l)",
        ),
    ] {
        let run = verify("cutover", input, &[]);
        assert_eq!(run.code, 1, "{input:?}");
        assert!(run.stdout.is_empty(), "{input:?}: {}", stdout(&run));
        assert!(
            run.stderr.starts_with("cutover verify: cutover: ") && run.stderr.contains(needle),
            "{input:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    // An empty List is read (and every observed Service is gone).
    let run = verify(
        "stop-speaker",
        "apiVersion: v1\nkind: List\nitems: []\n",
        &[],
    );
    assert_eq!(run.code, 1);
    assert_eq!(stdout(&run).lines().count(), 3);
    // A plan that does not read is named.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("plan.yaml");
    std::fs::write(
        &bad,
        "kind: ObservedState\nservices: {shop/web: not-an-ip}\n",
    )
    .unwrap();
    let mut cmd = Command::new(common::bin());
    cmd.args(["verify", "prepare", "--plan"]).arg(&bad);
    let run = run_with_stdin(cmd, live("prepare").as_bytes());
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("cannot read the plan")
            && run.stderr.contains("\"not-an-ip\" is no IP address"),
        "{}",
        run.stderr
    );
}

/// The catalog's gate-failing example (examples/announcer-gate-fails-cutover): the command its
/// README shows prints `expected-stdout.txt` and exits 1.
#[test]
fn the_gate_failing_example_prints_its_findings() {
    let dir = common::root().join("examples/announcer-gate-fails-cutover");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let command = "cutover verify cutover --plan plan.yaml --now 2026-12-01T12:00:30Z < live.yaml";
    assert!(readme.contains(command), "the README shows the command");
    let mut cmd = Command::new(common::bin());
    cmd.current_dir(&dir).args([
        "verify",
        "cutover",
        "--plan",
        "plan.yaml",
        "--now",
        "2026-12-01T12:00:30Z",
    ]);
    let run = run_with_stdin(cmd, &std::fs::read(dir.join("live.yaml")).unwrap());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let want = std::fs::read_to_string(dir.join("expected-stdout.txt")).unwrap();
    assert_eq!(run.stdout_str(), want);
    for line in want.lines() {
        assert!(readme.contains(line), "the README shows {line}");
    }
}

/// The plan as the orchestrated chain writes it: the observed state, then the expected end
/// state (tests/verify/expected.yaml: the pool and policy the cutover leaves, the policy that
/// announces each Service).
fn plan_with_expected(extra: &str) -> tempfile::TempPath {
    let observed = std::fs::read_to_string(dir().join("plan.yaml")).unwrap();
    let expected = std::fs::read_to_string(dir().join("expected.yaml")).unwrap();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    use std::io::Write as _;
    write!(file, "{observed}---\n{expected}{extra}").unwrap();
    file.into_temp_path()
}

fn verify_with(plan: &Path, gate: &str, input: &str) -> Run {
    let mut cmd = Command::new(common::bin());
    cmd.args(["verify", gate, "--plan"])
        .arg(plan)
        .args(["--now", NOW]);
    run_with_stdin(cmd, input.as_bytes())
}

/// With the expected end state, the cutover and cleanup gates also check that the Cilium pools
/// and L2 policies are the plan's, and that each Lease holder is a node one of the plan's
/// policies for the Service selects; without it (every other test) they do not.
#[test]
fn the_expected_end_state_is_checked_by_the_cutover_and_cleanup_gates() {
    let plan = plan_with_expected("");
    let state = live("cutover");
    for gate in ["cutover", "cleanup"] {
        let run = verify_with(&plan, gate, &state);
        assert_eq!(run.code, 0, "{}{}", run.stdout_str(), run.stderr);
    }
    // A second policy selecting every node: not the plan's. The Lease of shop/web is held by
    // w1, which the foreign policy selects too; the plan's policy still does, so only the
    // policy is a finding.
    let foreign = format!(
        "{state}- apiVersion: cilium.io/v2alpha1\n  kind: CiliumL2AnnouncementPolicy\n  metadata: {{name: all-nodes}}\n  spec: {{loadBalancerIPs: true}}\n"
    );
    let run = verify_with(&plan, "cutover", &foreign);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout_str().lines().next().unwrap(),
        "cutover verify: cutover: CiliumL2AnnouncementPolicy all-nodes is not in the plan's expected end state: it may announce from nodes the cutover did not choose"
    );
    assert_eq!(run.stdout_str().lines().count(), 2, "{}", run.stdout_str());
    // The plan's policy renamed: missing, the renamed one foreign, and the Leases held by
    // nodes none of the plan's policies selects (the live policy would justify them).
    let renamed = edit(
        &state,
        "metadata: {name: cutover-lan, labels: {app.kubernetes.io/managed-by: cutover}}\n  spec:\n    loadBalancerIPs",
        "metadata: {name: renamed}\n  spec:\n    loadBalancerIPs",
    );
    let run = verify_with(&plan, "cutover", &renamed);
    let out = run.stdout_str();
    assert_eq!(run.code, 1);
    for line in [
        "cutover verify: cutover: CiliumL2AnnouncementPolicy cutover-lan of the plan's expected end state is missing",
        "cutover verify: cutover: CiliumL2AnnouncementPolicy renamed is not in the plan's expected end state: it may announce from nodes the cutover did not choose",
        "cutover verify: cutover: Service shop/web: Lease kube-system/cilium-l2announce-shop-web is held by w1, which none of the plan's CiliumL2AnnouncementPolicies for it (cutover-lan) selects (selected: none)",
    ] {
        assert!(out.contains(&format!("{line}\n")), "{out}");
    }
    // Without the expected end state the renamed policy is as good as the plan's.
    assert_eq!(verify("cutover", &renamed, &[]).code, 0);
    // An expected end state that does not read names its field.
    let bad = plan_with_expected("unknown: 1\n");
    let run = verify_with(&bad, "cutover", &state);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("ExpectedState"), "{}", run.stderr);
    assert!(run.stderr.contains("unknown"), "{}", run.stderr);
}

//! The Flux-orchestrated announcer (`spec.orchestrate`) through the real binary: every chain
//! object validates against the upstream Flux CRD and the k8s-openapi types, the gate pods meet
//! Pod Security "restricted", the RBAC is read-only on what `cutover verify` reads, the chain is
//! ordered and timed, every object has exactly one applier, the payload directories build with
//! the real `kubectl kustomize`, the plan reads as `cutover verify`'s, and the chain executed in
//! the transition model in `dependsOn` order keeps every invariant; the refusals name their field.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};

use common::{crd, example_source, k8s, ok, run_list};
use cutover::modes::announcer::model::{CiliumVersion, Options, Transition, explore, snapshot};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use serde::Deserialize;
use serde_yaml::Value;

const GENERATED_BY: &str = "fn.cutover.dev/generated-by";
const PATH: &str = "internal.config.kubernetes.io/path";

fn annotation<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item["metadata"]["annotations"][key].as_str()
}

fn is_chain(item: &Value) -> bool {
    annotation(item, GENERATED_BY) == Some("load-balancer-announcer-chain")
}

fn path(item: &Value) -> &str {
    annotation(item, PATH)
        .or_else(|| annotation(item, "config.kubernetes.io/path"))
        .unwrap_or("")
}

fn seconds(flux: &str) -> u64 {
    let (n, unit) = flux.split_at(flux.len() - 1);
    let n: u64 = n.parse().unwrap();
    match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        other => panic!("unit {other}"),
    }
}

/// The chain example's output items.
fn chain_output() -> Vec<Value> {
    let out = ok(&example_source("announcer-orchestrated-cutover"));
    out["items"].as_sequence().unwrap().clone()
}

#[test]
fn every_chain_object_validates_and_every_gate_pod_is_restricted() {
    let items = chain_output();
    let chain: Vec<&Value> = items.iter().filter(|i| is_chain(i)).collect();
    let mut kinds = BTreeMap::new();
    for obj in &chain {
        let kind = obj["kind"].as_str().unwrap();
        *kinds.entry(kind.to_owned()).or_insert(0) += 1;
        match (obj["apiVersion"].as_str().unwrap(), kind) {
            ("kustomize.toolkit.fluxcd.io/v1", "Kustomization") => {
                crd::validate(obj).unwrap_or_else(|e| panic!("{e:?}"));
            }
            ("batch/v1", "Job") => {
                let job: Job = k8s::roundtrip(obj).unwrap();
                let spec = job.spec.unwrap();
                assert!(spec.active_deadline_seconds.unwrap() >= 300);
                assert_eq!(spec.backoff_limit, Some(1));
                assert!(spec.ttl_seconds_after_finished.unwrap() >= 3600);
                let pod = spec.template.spec.unwrap();
                assert_eq!(k8s::restricted_violations(&pod), Vec::<String>::new());
                assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
                let init = &pod.init_containers.unwrap()[0];
                assert_eq!(
                    init.command.as_deref().unwrap(),
                    ["/cutover", "install-self", "/gate/cutover"]
                );
                let script = &pod.containers[0].command.as_ref().unwrap()[2];
                assert!(script.contains("/gate/cutover verify"), "{script}");
                // The script parses as the POSIX shell reads it.
                let sh = common::run_cmd(Command::new("sh").args(["-n", "-c", script]));
                assert_eq!(sh.code, 0, "{}", sh.stderr);
            }
            ("v1", "Namespace") => {
                let ns: Namespace = k8s::roundtrip(obj).unwrap();
                let labels = ns.metadata.labels.unwrap();
                assert_eq!(labels["pod-security.kubernetes.io/enforce"], "restricted");
            }
            ("v1", "ServiceAccount") => {
                k8s::roundtrip::<ServiceAccount>(obj).unwrap();
            }
            ("v1", "ConfigMap") => {
                let cm: ConfigMap = k8s::roundtrip(obj).unwrap();
                assert!(cm.data.unwrap()["plan.yaml"].contains("kind: ObservedState"));
            }
            ("rbac.authorization.k8s.io/v1", "ClusterRole") => {
                let role: ClusterRole = k8s::roundtrip(obj).unwrap();
                let mut resources = BTreeSet::new();
                for rule in role.rules.unwrap() {
                    assert_eq!(rule.verbs, ["get", "list"]);
                    resources.extend(rule.resources.unwrap());
                }
                let expected: BTreeSet<String> = [
                    "services",
                    "nodes",
                    "pods",
                    "leases",
                    "ciliumloadbalancerippools",
                    "ciliuml2announcementpolicies",
                ]
                .map(String::from)
                .into();
                assert_eq!(resources, expected);
            }
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
                let b: ClusterRoleBinding = k8s::roundtrip(obj).unwrap();
                assert_eq!(b.role_ref.kind, "ClusterRole");
            }
            ("kustomize.config.k8s.io/v1beta1", "Kustomization") => {
                assert_eq!(
                    annotation(obj, "config.kubernetes.io/local-config"),
                    Some("true")
                );
            }
            other => panic!("unexpected chain object {other:?}"),
        }
    }
    assert_eq!(kinds["Job"], 3);
    assert_eq!(kinds["Kustomization"], 7, "3 Flux units, 4 kustomize files");
    // Every other generated object (pools, policies) validates against Cilium's CRDs.
    for item in &items {
        if item["apiVersion"]
            .as_str()
            .unwrap()
            .starts_with("cilium.io/")
        {
            crd::validate(item).unwrap_or_else(|e| panic!("{e:?}"));
        }
    }
}

#[test]
fn the_chain_is_ordered_gated_and_timed() {
    let items = chain_output();
    let units: Vec<&Value> = items
        .iter()
        .filter(|i| i["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1")
        .collect();
    let names: Vec<&str> = units
        .iter()
        .map(|u| u["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cilium-l2-cutover-prepare",
            "cilium-l2-cutover-stop-speaker",
            "cilium-l2-cutover-cutover"
        ]
    );
    let jobs: BTreeMap<&str, &Value> = items
        .iter()
        .filter(|i| i["kind"] == "Job")
        .map(|j| (j["metadata"]["name"].as_str().unwrap(), j))
        .collect();
    for (i, unit) in units.iter().enumerate() {
        let spec = &unit["spec"];
        match i {
            0 => assert!(spec.get("dependsOn").is_none()),
            _ => assert_eq!(spec["dependsOn"][0]["name"], names[i - 1]),
        }
        assert_eq!(spec["wait"], false);
        assert_eq!(spec["prune"], true);
        assert_eq!(spec["sourceRef"]["name"], "platform");
        let phase = names[i].trim_start_matches("cilium-l2-cutover-");
        assert_eq!(
            spec["path"].as_str().unwrap(),
            format!("./clusters/prod/cilium-l2-cutover/{phase}")
        );
        let check = &spec["healthChecks"][0];
        assert_eq!(check["kind"], "Job");
        let job = jobs[check["name"].as_str().unwrap()];
        assert_eq!(check["namespace"], job["metadata"]["namespace"]);
        assert!(path(job).starts_with(&format!("cilium-l2-cutover/{phase}/")));
        // Flux waits longer than the gate may run: the Job fails on its deadline first.
        let deadline = job["spec"]["activeDeadlineSeconds"].as_u64().unwrap();
        assert!(seconds(spec["timeout"].as_str().unwrap()) >= deadline + 120);
    }
}

/// Every object is applied by exactly one Kustomization: what moved into a phase directory is
/// gone from the package, nothing is in two directories, and each directory's kustomize file
/// lists exactly its files; moved objects keep `prune: disabled`.
#[test]
fn every_object_has_one_applier() {
    let items = chain_output();
    let mut seen: BTreeMap<(String, String, String), String> = BTreeMap::new();
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for item in &items {
        let local = annotation(item, "config.kubernetes.io/local-config") == Some("true");
        let p = path(item).to_owned();
        let owner = match p.strip_prefix("cilium-l2-cutover/") {
            Some(rest) if rest.contains('/') => rest.split('/').next().unwrap().to_owned(),
            _ => "package".to_owned(),
        };
        if local {
            continue;
        }
        if owner != "package" {
            files
                .entry(owner.clone())
                .or_default()
                .insert(p.rsplit('/').next().unwrap().to_owned());
            // Taken over: never pruned (a rollback deletes the chain, not the Services);
            // created by the phase: pruned with it.
            let created = item["apiVersion"]
                .as_str()
                .unwrap()
                .starts_with("cilium.io/");
            if !is_chain(item) {
                assert_eq!(
                    annotation(item, "kustomize.toolkit.fluxcd.io/prune"),
                    (!created).then_some("disabled"),
                    "{p}"
                );
            }
        }
        let key = (
            item["kind"].as_str().unwrap().to_owned(),
            item["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
            item["metadata"]["name"].as_str().unwrap().to_owned(),
        );
        if let Some(other) = seen.insert(key.clone(), owner.clone()) {
            panic!("{key:?} applied by {other} and {owner}");
        }
    }
    assert_eq!(
        seen[&("Service".into(), "shop".into(), "web".into())],
        "prepare"
    );
    assert_eq!(
        seen[&("Service".into(), "monitoring".into(), "grafana".into())],
        "package"
    );
    assert_eq!(
        seen[&(
            "HelmRelease".into(),
            "metallb-system".into(),
            "metallb".into()
        )],
        "stop-speaker"
    );
    assert_eq!(
        seen[&(
            "CiliumL2AnnouncementPolicy".into(),
            String::new(),
            "public".into()
        )],
        "cutover"
    );
    for item in &items {
        if item["apiVersion"] != "kustomize.config.k8s.io/v1beta1" {
            continue;
        }
        let p = path(item);
        let dir = p
            .trim_start_matches("cilium-l2-cutover/")
            .trim_end_matches("/kustomization.yaml");
        let listed: BTreeSet<String> = item["resources"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect();
        if p == "cilium-l2-cutover/kustomization.yaml" {
            assert!(listed.is_empty(), "the fence lists nothing");
        } else {
            assert_eq!(listed, files[dir], "{p}");
        }
    }
}

/// The real kpt writes the package; the real kubectl kustomize builds each phase directory into
/// the objects that phase applies, and the fence at the payload root into nothing.
#[test]
fn payload_directories_build_with_kubectl_kustomize() {
    let src = common::root().join("examples/announcer-orchestrated-cutover");
    let (_tmp, dir) = common::package_copy(&src);
    let run = common::run_cmd(
        common::kpt()
            .args(["fn", "render"])
            .arg(&dir)
            .args(["--allow-exec"])
            .env("PATH", common::path_with_bin()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let build = |sub: &str| {
        let run = common::run_cmd(
            Command::new("kubectl")
                .arg("kustomize")
                .arg(dir.join("cilium-l2-cutover").join(sub)),
        );
        assert_eq!(run.code, 0, "{sub}: {}", run.stderr);
        serde_yaml::Deserializer::from_slice(&run.stdout)
            .map(|d| Value::deserialize(d).unwrap())
            .filter(|v| !v.is_null())
            .map(|v| {
                format!(
                    "{}/{}",
                    v["kind"].as_str().unwrap(),
                    v["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect::<BTreeSet<String>>()
    };
    assert!(build("").is_empty());
    let prepare = build("prepare");
    for want in [
        "Service/web",
        "Service/dns-tcp",
        "HelmRelease/cilium",
        "CiliumLoadBalancerIPPool/public",
        "Namespace/cilium-l2-cutover",
        "ConfigMap/cilium-l2-cutover-plan",
    ] {
        assert!(prepare.contains(want), "{want}: {prepare:?}");
    }
    assert!(build("stop-speaker").contains("HelmRelease/metallb"));
    assert!(build("cutover").contains("CiliumL2AnnouncementPolicy/public"));
}

/// The plan ConfigMap is what `cutover verify --plan` reads: the real binary accepts it and
/// judges a recorded live state with it.
#[test]
fn the_plan_reads_as_verify_s_plan() {
    let items = chain_output();
    let cm = items
        .iter()
        .find(|i| i["kind"] == "ConfigMap" && is_chain(i))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, cm["data"]["plan.yaml"].as_str().unwrap()).unwrap();
    let live = std::fs::read(common::root().join("tests/verify/before.yaml")).unwrap();
    let mut child = Command::new(common::bin())
        .args(["verify", "stop-speaker", "--plan"])
        .arg(&plan)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&live).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The recorded state is another cluster's: the gate runs and reports findings (exit 1),
    // which proves the plan was read (an unreadable plan says so on stderr).
    assert!(
        stdout.contains("cutover verify: stop-speaker"),
        "{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("plan"), "{stderr}");
}

/// `cutover install-self` copies the running binary (what the gate's init container does).
#[test]
fn install_self_copies_an_executable() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("cutover");
    let run = common::run_cmd(Command::new(common::bin()).arg("install-self").arg(&target));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let copy = common::run_cmd(Command::new(&target).arg("--version"));
    assert_eq!(copy.code, 0);
    assert!(copy.stdout_str().starts_with("cutover "));
}

fn with_orchestrate(mut list: Value, orchestrate: &str) -> Value {
    list["functionConfig"]["spec"]["orchestrate"] = serde_yaml::from_str(orchestrate).unwrap();
    list
}

fn single_error(list: &Value) -> Value {
    let run = run_list(list);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors: Vec<Value> = run
        .results()
        .into_iter()
        .filter(|r| r["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        run.resource_list()["items"],
        list["items"],
        "items unchanged on error"
    );
    errors[0].clone()
}

#[test]
fn refusals_name_their_field() {
    let input = example_source("announcer-orchestrated-cutover");
    let e = single_error(&with_orchestrate(
        input.clone(),
        "{step: chain, cutoverImage: 'r/c:1'}",
    ));
    assert_eq!(e["field"]["path"], "spec.orchestrate.source");
    let e = single_error(&with_orchestrate(
        input.clone(),
        "{step: chain, cutoverImage: 'r/c:1', source: {path: ./x}}",
    ));
    assert_eq!(e["field"]["path"], "spec.orchestrate.source.sourceRef");
    let e = single_error(&with_orchestrate(
        input.clone(),
        "{step: chain, source: {sourceRef: {kind: GitRepository, name: p}, path: ./x}}",
    ));
    assert_eq!(e["field"]["path"], "spec.orchestrate.cutoverImage");
    let mut taken = input.clone();
    let ns: Value = serde_yaml::from_str(
        "{apiVersion: v1, kind: Namespace, metadata: {name: cilium-l2-cutover, annotations: {config.kubernetes.io/path: ns.yaml}}}",
    )
    .unwrap();
    taken["items"].as_sequence_mut().unwrap().push(ns);
    let e = single_error(&taken);
    assert_eq!(e["field"]["path"], "metadata.name");
    assert_eq!(e["resourceRef"]["kind"], "Namespace");
    let e = single_error(&with_orchestrate(input.clone(), "{payloadDir: ../out}"));
    assert_eq!(e["field"]["path"], "spec.orchestrate.payloadDir");
    let mut no_observed = input;
    no_observed["items"]
        .as_sequence_mut()
        .unwrap()
        .retain(|i| i["kind"] != "ObservedState");
    let e = single_error(&no_observed);
    assert_eq!(e["field"]["path"], "spec.orchestrate");
}

// ---- The chain in the transition model --------------------------------------------------

fn load(case: &str, file: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/transitions/{case}/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn observe(live: &[Value]) -> Value {
    let mut list: Value = serde_yaml::from_str("{apiVersion: v1, kind: List}").unwrap();
    list["items"] = Value::Sequence(live.to_vec());
    let mut child = Command::new(common::bin())
        .arg("observe")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_yaml::to_string(&list).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_yaml::from_slice(&out.stdout).unwrap()
}

fn run_items(items: &[Value], spec: &str) -> Vec<Value> {
    let texts: Vec<String> = items
        .iter()
        .map(|v| serde_yaml::to_string(v).unwrap())
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let fc = format!(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: announcer\nspec:\n  announcer: cilium\n{spec}"
    );
    let run = common::run_fn(common::resource_list(&refs, Some(&fc)).as_bytes());
    assert_eq!(run.code, 0, "{}\n{:?}", run.stderr, run.results());
    run.resource_list()["items"].as_sequence().unwrap().clone()
}

fn identity(item: &Value) -> (String, String, String) {
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
fn applied(before: &[Value], chain: &[Value], phases: &[&str]) -> Vec<Value> {
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

/// Runs the chain on a transitions case (live cluster before phase prepare) and explores each
/// Kustomization's apply in `dependsOn` order, each from the state the previous one settled in.
fn chain_through_the_model(case: &str, version: &str) {
    let live = load(case, "live.yaml");
    let before = load(case, "before.yaml");
    let mut items = before.clone();
    items.push(observe(&live));
    let chain_spec = format!(
        "  ciliumVersion: {version}\n  orchestrate:\n    step: chain\n    cutoverImage: r/cutover:1\n    source:\n      sourceRef: {{kind: GitRepository, name: platform}}\n      path: ./c\n"
    );
    let handed = run_items(
        &items,
        &format!("  ciliumVersion: {version}\n  orchestrate: {{step: handover}}\n"),
    );
    let chain = run_items(&handed, &chain_spec);
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
    let live = load(case, "live.yaml");
    let before = load(case, "before.yaml");
    let mut items = before.clone();
    items.push(observe(&live));
    let handed = run_items(
        &items,
        &format!("  ciliumVersion: {version}\n  orchestrate: {{step: handover}}\n"),
    );
    let chain = run_items(
        &handed,
        &format!(
            "  ciliumVersion: {version}\n  orchestrate:\n    step: chain\n    cutoverImage: r/cutover:1\n    source:\n      sourceRef: {{kind: GitRepository, name: platform}}\n      path: ./c\n"
        ),
    );
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
/// pins, pools and values, instead of reverting the chain commit.
#[test]
fn reverting_the_whole_chain_after_prepare_can_move_an_ip() {
    let (case, version) = ("operator-restart", "1.18.1");
    let live = load(case, "live.yaml");
    let before = load(case, "before.yaml");
    let mut items = before.clone();
    items.push(observe(&live));
    let handed = run_items(
        &items,
        &format!("  ciliumVersion: {version}\n  orchestrate: {{step: handover}}\n"),
    );
    let chain = run_items(
        &handed,
        &format!(
            "  ciliumVersion: {version}\n  orchestrate:\n    step: chain\n    cutoverImage: r/cutover:1\n    source:\n      sourceRef: {{kind: GitRepository, name: platform}}\n      path: ./c\n"
        ),
    );
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
    let back = Transition::from_snapshots(t3.settled(), snapshot(&p3), snapshot(&p2), o);
    let r = explore(&back);
    assert!(r.violations.is_empty(), "{r}");
}

/// The ConfigMap form (`kpt fn eval -- key=value`, nested keys dotted) through the real kpt,
/// then the typed form again on its output: nothing changes the second time.
#[test]
fn the_configmap_form_through_kpt_eval_and_a_second_run() {
    let src = common::root().join("examples/announcer-orchestrated-cutover");
    let (_tmp, dir) = common::package_copy(&src);
    let (run, _) = common::kpt_eval(
        &dir,
        &[
            "--",
            "mode=load-balancer-announcer",
            "announcer=cilium",
            "orchestrate.step=chain",
            "orchestrate.cutoverImage=ghcr.io/example/cutover:0.1.0",
            "orchestrate.source.sourceRef.kind=GitRepository",
            "orchestrate.source.sourceRef.name=platform",
            "orchestrate.source.sourceRef.namespace=flux-system",
            "orchestrate.source.path=./clusters/prod/cilium-l2-cutover",
            "orchestrate.timeouts.prepare=20m",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout_str(), run.stderr);
    let diff = common::diff_and_commit(&dir);
    assert!(diff.contains("timeout: 23m"), "{diff}");
    let (run, _) = common::kpt_eval(
        &dir,
        &[
            "--",
            "mode=load-balancer-announcer",
            "announcer=cilium",
            "orchestrate.step=chain",
            "orchestrate.cutoverImage=ghcr.io/example/cutover:0.1.0",
            "orchestrate.source.sourceRef.kind=GitRepository",
            "orchestrate.source.sourceRef.name=platform",
            "orchestrate.source.sourceRef.namespace=flux-system",
            "orchestrate.source.path=./clusters/prod/cilium-l2-cutover",
            "orchestrate.timeouts.prepare=20m",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        common::diff_and_commit(&dir),
        "",
        "second run changed files"
    );
}

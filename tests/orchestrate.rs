//! The Flux-orchestrated announcer (`spec.orchestrate`) through the real binary: every chain
//! object validates against the upstream Flux CRD and the k8s-openapi types, the gate pods meet
//! Pod Security "restricted", the RBAC is read-only on what `cutover verify` reads, the chain is
//! ordered and timed, every object has exactly one applier, the payload directories build with
//! the real `kubectl kustomize`, the plan reads as `cutover verify`'s, and the chain executed in
//! the transition model in `dependsOn` order keeps every invariant; the refusals name their field.
//!
//! This file holds the output checks and the helpers; `orchestrate/kpt.rs` the real kpt and
//! kubectl kustomize runs, `orchestrate/model.rs` the transition model, `orchestrate/gates.rs`
//! the gates judged in the model's states, `orchestrate/cleanup.rs` the two cleanup steps.

#[path = "orchestrate/cleanup.rs"]
mod cleanup;
mod common;
#[path = "orchestrate/gates.rs"]
mod gates;
#[path = "orchestrate/kpt.rs"]
mod kpt;
#[path = "orchestrate/model.rs"]
mod model;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};

use common::{crd, example_source, k8s, ok};
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

/// The gate images as an operator pins them (placeholder digests: nothing is pulled).
const GATE_IMAGES: &str = "kubectlImage: 'r/kube-job:1@sha256:0000000000000000000000000000000000000000000000000000000000000000', \
                           cutoverImage: 'r/cutover:1@sha256:0000000000000000000000000000000000000000000000000000000000000000'";

/// The announcer's `spec` at orchestrate `step` (`chain`, `cleanup-handover`, `cleanup`), with
/// a source and the gate images.
fn orchestrate_spec(version: &str, step: &str) -> String {
    format!(
        "  ciliumVersion: {version}\n  orchestrate: {{step: {step}, {GATE_IMAGES}, \
         source: {{sourceRef: {{kind: GitRepository, name: platform}}, path: ./c}}}}\n"
    )
}

/// The announcer's `spec` at the hand-over step.
fn handover_spec(version: &str) -> String {
    format!("  ciliumVersion: {version}\n  orchestrate: {{step: handover}}\n")
}

/// The chain example's output items.
fn chain_output() -> Vec<Value> {
    let out = ok(&example_source("announcer-orchestrated-cutover"));
    out["items"].as_sequence().unwrap().clone()
}

#[test]
fn every_chain_object_validates_and_every_gate_pod_is_restricted() {
    let kinds = validate_chain_objects(&chain_output());
    assert_eq!(kinds["Job"], 3);
    assert_eq!(kinds["Kustomization"], 7, "3 Flux units, 4 kustomize files");
}

/// Validates every chain object (Flux CRD, k8s-openapi types, Pod Security "restricted", the
/// gate script parses, read-only RBAC) and every Cilium object; returns the chain's kinds.
fn validate_chain_objects(items: &[Value]) -> BTreeMap<String, usize> {
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
                    "ipaddresspools",
                    "l2advertisements",
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
    // Every other generated object (pools, policies) validates against Cilium's CRDs.
    for item in items {
        if item["apiVersion"]
            .as_str()
            .unwrap()
            .starts_with("cilium.io/")
        {
            crd::validate(item).unwrap_or_else(|e| panic!("{e:?}"));
        }
    }
    kinds
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

/// The plan ConfigMap is what `cutover verify --plan` reads: the real binary accepts it and
/// judges a recorded live state with it.
#[test]
fn the_plan_reads_as_verify_s_plan() {
    let items = chain_output();
    let cm = items
        .iter()
        .find(|i| i["kind"] == "ConfigMap" && is_chain(i))
        .unwrap();
    let text = cm["data"]["plan.yaml"].as_str().unwrap();
    // The observed state, then the expected end state: the pool and policy the cutover leaves,
    // and the policy announcing each Service the package holds.
    let parsed = cutover::verify::Plan::parse(text).unwrap();
    let expected = parsed.expected.unwrap();
    assert_eq!(expected.cilium_pools, BTreeSet::from(["public".to_owned()]));
    assert_eq!(
        expected.cilium_l2_policies,
        BTreeSet::from(["public".to_owned()])
    );
    assert_eq!(
        expected.announced_by["shop/web"],
        BTreeSet::from(["public".to_owned()])
    );
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, text).unwrap();
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

/// The one error of a refused run. An error about a field of `spec.orchestrate` is the
/// config's, tagged `check: config` as in every mode; the rest are the chain's own.
fn single_error(list: &Value) -> Value {
    let errors = common::refused(list);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = errors[0].clone();
    let path = e["field"]["path"].as_str().unwrap_or_default();
    let check = if path.starts_with("spec.orchestrate.") {
        cutover::config::CHECK
    } else {
        "orchestrate"
    };
    assert_eq!(e["tags"]["check"], check, "{e:?}");
    e
}

#[test]
fn refusals_name_their_field() {
    let input = example_source("announcer-orchestrated-cutover");
    let e = single_error(&with_orchestrate(
        input.clone(),
        &format!("{{step: chain, {GATE_IMAGES}}}"),
    ));
    assert_eq!(e["field"]["path"], "spec.orchestrate.source");
    let e = single_error(&with_orchestrate(
        input.clone(),
        &format!("{{step: chain, {GATE_IMAGES}, source: {{path: ./x}}}}"),
    ));
    assert_eq!(e["field"]["path"], "spec.orchestrate.source.sourceRef");
    let source = "source: {sourceRef: {kind: GitRepository, name: p}, path: ./x}";
    let pinned = "@sha256:0000000000000000000000000000000000000000000000000000000000000000";
    // Each gate image is required by the steps that write gates, and pinned by digest.
    for (images, field, current) in [
        (
            format!("cutoverImage: 'r/c:1{pinned}'"),
            "kubectlImage",
            None,
        ),
        (
            format!("kubectlImage: 'r/k:1{pinned}'"),
            "cutoverImage",
            None,
        ),
        (
            format!("kubectlImage: 'r/k:1', cutoverImage: 'r/c:1{pinned}'"),
            "kubectlImage",
            Some("r/k:1"),
        ),
        (
            format!("kubectlImage: 'r/k:1{pinned}', cutoverImage: 'r/c:1'"),
            "cutoverImage",
            Some("r/c:1"),
        ),
    ] {
        for step in ["chain", "cleanup"] {
            let e = single_error(&with_orchestrate(
                input.clone(),
                &format!("{{step: {step}, {images}, {source}}}"),
            ));
            assert_eq!(
                e["field"]["path"],
                format!("spec.orchestrate.{field}"),
                "{e:?}"
            );
            let message = e["message"].as_str().unwrap();
            match current {
                Some(image) => {
                    assert_eq!(e["field"]["currentValue"], image);
                    assert!(message.contains("pinned by tag only"), "{message}");
                }
                None => assert!(message.contains("is required with step: "), "{message}"),
            }
        }
    }
    // Every namespace the chain writes objects into must be one the API server accepts.
    for field in ["fluxNamespace", "gateNamespace", "ciliumNamespace"] {
        for bad in ["Flux", "flux_system", "flux.system", "-x"] {
            let e = single_error(&with_orchestrate(
                input.clone(),
                &format!("{{step: chain, {GATE_IMAGES}, {source}, {field}: '{bad}'}}"),
            ));
            assert_eq!(
                e["field"]["path"],
                format!("spec.orchestrate.{field}"),
                "{e:?}"
            );
            assert!(
                e["message"].as_str().unwrap().contains("DNS-1123 label"),
                "{e:?}"
            );
        }
    }
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

/// An error in the items is reported once, by the read of the items, though the chain reads
/// them again to simulate phase prepare.
#[test]
fn an_input_error_is_reported_once() {
    let mut input = example_source("announcer-orchestrated-cutover");
    let advert = input["items"]
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .find(|i| i["kind"] == "L2Advertisement")
        .unwrap();
    advert["metadata"]["name"] = "Public_x".into();
    let errors = common::refused(&input);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["tags"]["check"], "input", "{errors:?}");
    assert_eq!(errors[0]["resourceRef"]["name"], "Public_x");
    assert_eq!(errors[0]["field"]["path"], "metadata.name");
}

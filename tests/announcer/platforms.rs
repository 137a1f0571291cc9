//! The announcer on the objects real platforms install MetalLB and Cilium with: cozystack's
//! Packages and generated HelmReleases, Flux chart references, umbrella values, chart values with
//! MetalLB annotations; and the guard rails around the phases.

use std::ffi::OsStr;
use std::path::Path;

use super::*;
use common::{diff_and_commit, kpt_eval, package_copy};

/// Runs `kpt fn eval` on `dir` with the package's fn-config set to `phase`; returns the exit code
/// and the function's results.
fn kpt_phase(dir: &Path, phase: &str) -> (i32, Vec<Value>) {
    let configs = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(dir.join("fn-config.yaml"))
        .unwrap()
        .replace("phase: prepare", &format!("phase: {phase}"));
    let config_path = configs.path().join("fn-config.yaml");
    std::fs::write(&config_path, config).unwrap();
    let (run, results) = kpt_eval(dir, &[OsStr::new("--fn-config"), config_path.as_os_str()]);
    (run.code, results)
}

fn has(results: &[Value], severity: &str, text: &str) -> bool {
    results
        .iter()
        .any(|r| r["severity"] == severity && r["message"].as_str().unwrap_or("").contains(text))
}

/// Every object of the package, by kind and name.
fn objects(dir: &Path) -> Vec<Value> {
    common::package_objects(dir)
        .into_iter()
        .map(|(_, v)| v)
        .filter(|v| v["kind"] != "Kptfile" && v["kind"] != "LoadBalancerAnnouncer")
        .collect()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

/// The summary of the cozystack examples: both Services are `externalTrafficPolicy: Local`
/// (accepted in their fn-config), so they keep IP and pool, not their announcing nodes.
const LOCAL_KEPT: &str = "coverage: 0 of 2 LoadBalancer Services served by MetalLB keep their IP, pool, announcing nodes \
                          and interfaces; 2 with externalTrafficPolicy: Local keep their IP and pool";

#[test]
fn cozystack_packages_walk_to_a_metallb_free_state_with_kpt() {
    let (_guard, dir) = package_copy(&common::root().join("examples/announcer-cozystack-packages"));
    // prepare: the pool and the Cilium values under the Package's component, MetalLB untouched.
    let (code, results) = kpt_phase(&dir, "prepare");
    assert_eq!(code, 0, "{results:?}");
    assert!(has(&results, "info", LOCAL_KEPT), "{results:?}");
    assert!(!diff_and_commit(&dir).is_empty());
    let objs = objects(&dir);
    let networking = find(&objs, "Package", "cozystack.networking").unwrap();
    let cilium = &networking["spec"]["components"]["cilium"]["values"]["cilium"];
    assert_eq!(cilium["l2announcements"]["enabled"], Value::Bool(true));
    assert!(find(&objs, "CiliumLoadBalancerIPPool", "cozystack").is_some());
    // stop-speaker: in the Package, not in the HelmRelease the operator rewrites from it.
    let (code, results) = kpt_phase(&dir, "stop-speaker");
    assert_eq!(code, 0, "{results:?}");
    assert!(has(&results, "info", LOCAL_KEPT), "{results:?}");
    diff_and_commit(&dir);
    let objs = objects(&dir);
    let metallb = find(&objs, "Package", "cozystack.metallb").unwrap();
    assert_eq!(
        metallb["spec"]["components"]["metallb"]["values"]["metallb"]["speaker"]["enabled"],
        Value::Bool(false)
    );
    let release = find(&objs, "HelmRelease", "metallb").unwrap();
    assert!(release["spec"].get("values").is_none(), "{release:?}");
    // cutover: the Cilium policy in, MetalLB out; every Service still covered.
    let (code, results) = kpt_phase(&dir, "cutover");
    assert_eq!(code, 0, "{results:?}");
    assert!(has(&results, "info", LOCAL_KEPT), "{results:?}");
    assert!(
        has(&results, "warning", "helm.sh/resource-policy: keep"),
        "{results:?}"
    );
    diff_and_commit(&dir);
    let objs = objects(&dir);
    let metallb_left: Vec<String> = objs
        .iter()
        .filter(|o| {
            o["apiVersion"]
                .as_str()
                .unwrap_or("")
                .starts_with("metallb.io/")
                || o["metadata"]["name"] == "cozystack.metallb"
                || (o["kind"] == "HelmRelease" && o["metadata"]["name"] == "metallb")
        })
        .map(|o| {
            format!(
                "{} {}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert!(metallb_left.is_empty(), "MetalLB left: {metallb_left:?}");
    assert!(find(&objs, "CiliumL2AnnouncementPolicy", "cozystack").is_some());
    for svc in objs
        .iter()
        .filter(|o| o["kind"] == "Service" && o["spec"]["type"] == "LoadBalancer")
    {
        let annotations = svc["metadata"]["annotations"]
            .as_mapping()
            .cloned()
            .unwrap_or_default();
        assert!(
            !annotations
                .keys()
                .any(|k| k.as_str().unwrap_or("").contains("metallb")),
            "{svc:?}"
        );
    }
    // Idempotent, and an earlier phase afterwards is a warning, not a silent no-op.
    let (code, _) = kpt_phase(&dir, "cutover");
    assert_eq!(code, 0);
    assert_eq!(diff_and_commit(&dir), "");
    let (code, results) = kpt_phase(&dir, "prepare");
    assert_eq!(code, 0);
    let warning = results
        .iter()
        .find(|r| r["tags"]["check"] == "phase-order")
        .unwrap_or_else(|| panic!("no phase-order warning: {results:?}"));
    assert_eq!(warning["severity"], Value::from("warning"));
    assert_eq!(warning["tags"]["phase"], Value::from("prepare"));
}

/// The `next-step` info of a run, which every prepare and stop-speaker run ends with.
fn next_step(out: &Run) -> String {
    let steps: Vec<Value> = out
        .results()
        .into_iter()
        .filter(|r| r["tags"]["check"] == "next-step")
        .collect();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["severity"], "info");
    steps[0]["message"].as_str().unwrap().to_owned()
}

#[test]
fn the_next_step_agrees_with_a_phase_order_warning() {
    let s = svc("web", "a", "10.0.0.5");
    let phase_order = |out: &Run| -> Vec<String> {
        out.results()
            .into_iter()
            .filter(|r| r["tags"]["check"] == "phase-order")
            .map(|r| r["message"].as_str().unwrap().to_owned())
            .collect()
    };
    // In order: prepare points at stop-speaker, stop-speaker at cutover.
    let prepare = fc("  phase: prepare\n");
    let out = run(&[POOL, ADV, METALLB_RUNNING, s.as_str()], &prepare);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(phase_order(&out).is_empty());
    assert!(next_step(&out).contains("then run again with phase: stop-speaker"));
    let out = run(
        &[POOL, ADV, METALLB_RUNNING, s.as_str()],
        &fc("  phase: stop-speaker\n"),
    );
    assert!(next_step(&out).contains("then apply phase: cutover at once"));
    // Prepare on a stopped speaker: the warning says apply cutover now or revert, and so does the
    // next step; it does not send the operator to stop-speaker.
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str()];
    let out = run(&items, &prepare);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warnings = phase_order(&out);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("Apply phase cutover now"));
    let next = next_step(&out);
    assert!(next.contains("phase: cutover"), "{next}");
    assert!(next.contains("revert the stop-speaker change"), "{next}");
    assert!(
        !next.contains("then run again with phase: stop-speaker"),
        "{next}"
    );
    // After phase cutover (its L2 policies among the items, the pools put back): no next phase,
    // the same two ways out as the warning.
    let cut = run(&items, &fc(CUTOVER));
    assert_eq!(cut.code, 0, "{}", cut.stderr);
    let policies: Vec<String> = output_items(&cut)
        .iter()
        .filter(|i| i["kind"] == "CiliumL2AnnouncementPolicy")
        .map(|i| serde_yaml::to_string(i).unwrap())
        .collect();
    assert_eq!(policies.len(), 1);
    let mut after: Vec<&str> = items.to_vec();
    after.extend(policies.iter().map(String::as_str));
    for phase in ["prepare", "stop-speaker"] {
        let out = run(&after, &fc(&format!("  phase: {phase}\n")));
        assert_eq!(out.code, 0, "{phase}: {}", out.stderr);
        assert!(
            phase_order(&out)
                .iter()
                .any(|w| w.contains("revert the cutover change")),
            "{phase}"
        );
        let next = next_step(&out);
        assert!(next.contains("after phase cutover"), "{phase}: {next}");
        assert!(
            next.contains("revert the cutover change"),
            "{phase}: {next}"
        );
        assert!(!next.contains("at once"), "{phase}: {next}");
        assert!(
            !next.contains("then run again with phase"),
            "{phase}: {next}"
        );
    }
}

#[test]
fn cozystack_without_a_cilium_version_asks_for_one() {
    let out = run_example("announcer-cozystack-no-version");
    assert_eq!(out.code, 1);
    let error = out
        .results()
        .into_iter()
        .find(|r| r["severity"] == "error")
        .unwrap();
    assert_eq!(error["field"]["path"], Value::from("spec.ciliumVersion"));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("set ciliumVersion")
    );
    // cozystack's own image tag (its release, v1.6.2) is never taken for Cilium's.
    let (items, config) = example("announcer-cozystack-no-version");
    let with_image = |repository: &str, tag: &str| -> Vec<String> {
        items
            .iter()
            .map(|text| {
                let mut item: Value = serde_yaml::from_str(text).unwrap();
                if item["metadata"]["name"] == "cozystack.networking" {
                    let image: Value =
                        serde_yaml::from_str(&format!("{{repository: {repository}, tag: {tag}}}"))
                            .unwrap();
                    item["spec"]["components"]["cilium"]["values"]["cilium"]
                        .as_mapping_mut()
                        .unwrap()
                        .insert("image".into(), image);
                }
                serde_yaml::to_string(&item).unwrap()
            })
            .collect()
    };
    let cozystack = with_image("ghcr.io/cozystack/cozystack/cilium", "v1.6.2");
    let refs: Vec<&str> = cozystack.iter().map(String::as_str).collect();
    let out = run(&refs, &config);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("not an upstream Cilium image"),
        "{}",
        out.stderr
    );
    // The upstream image names the version.
    let upstream = with_image("quay.io/cilium/cilium", "v1.19.5");
    let refs: Vec<&str> = upstream.iter().map(String::as_str).collect();
    let out = run(&refs, &config);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_generated_release_without_its_package_is_refused_where_the_edit_would_be_undone() {
    let (items, config) = example("announcer-cozystack-packages");
    let kept: Vec<&str> = items
        .iter()
        .map(String::as_str)
        .filter(|i| !i.starts_with("apiVersion: cozystack.io/"))
        .collect();
    let config = config.replace("phase: prepare", "phase: stop-speaker");
    let out = run(&kept, &config);
    let error = assert_error(
        &out,
        &kept,
        "HelmRelease",
        "metallb",
        "metadata.labels.cozystack.io/package",
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Package cozystack.metallb")
    );
}

#[test]
fn umbrella_values_are_found_by_their_shape() {
    let umbrella = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: metallb\n  namespace: metallb-system\nspec:\n  chart:\n    spec:\n      chart: ./platform/charts/metallb\n      sourceRef:\n        kind: GitRepository\n        name: platform\n  values:\n    metallb:\n      speaker:\n        logLevel: info\n";
    let s = svc("web", "a", "10.0.0.5");
    let items = [POOL, ADV, umbrella, s.as_str()];
    let out = run(&items, &fc("  phase: stop-speaker\n"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let release = output_items(&out)
        .into_iter()
        .find(|i| i["kind"] == "HelmRelease")
        .unwrap();
    assert_eq!(
        release["spec"]["values"]["metallb"]["speaker"]["enabled"],
        Value::Bool(false)
    );
    assert!(release["spec"]["values"].get("speaker").is_none());
}

#[test]
fn chart_value_annotations_leave_with_metallb_at_cutover() {
    let (items, config) = example("announcer-values-annotations");
    // The speaker already stopped (phase stop-speaker applied).
    let items: Vec<String> = items
        .iter()
        .map(|i| {
            if i.contains("name: metallb\n  namespace: metallb-system\n")
                && i.contains("kind: HelmRelease")
            {
                format!("{i}  values:\n    speaker:\n      enabled: false\n")
            } else {
                i.clone()
            }
        })
        .collect();
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    let out = run(&refs, &config.replace("phase: prepare", "phase: cutover"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ingress = output_items(&out)
        .into_iter()
        .find(|i| i["metadata"]["name"] == "ingress-nginx")
        .unwrap();
    let annotations = &ingress["spec"]["values"]["controller"]["service"]["annotations"];
    assert_eq!(
        annotations["lbipam.cilium.io/ips"],
        Value::from("192.0.2.10")
    );
    assert!(
        annotations
            .get("metallb.universe.tf/loadBalancerIPs")
            .is_none()
    );
    let removed = out
        .results()
        .into_iter()
        .filter(|r| r["tags"]["check"] == "values-annotations" && r["severity"] == "info")
        .filter(|r| r["message"].as_str().unwrap().contains("removed"))
        .count();
    assert_eq!(removed, 2);
    // Leases of the Services the charts render count in the rate limit: 1 + 2 Services.
    assert!(
        messages(&out, "info")
            .iter()
            .any(|m| m.contains("3 LoadBalancer Service lease(s)"))
    );
}

#[test]
fn plan_findings_also_go_to_stderr() {
    let out = run_example("announcer-metallb-plan");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    let warnings = out
        .results()
        .iter()
        .filter(|r| r["severity"] == "warning")
        .count();
    assert!(warnings > 0);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("cutover: [warning]"))
            .count(),
        warnings,
        "{}",
        out.stderr
    );
    assert!(
        lines.iter().all(|l| l.starts_with("cutover: [")),
        "{}",
        out.stderr
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("plan: announcer cilium applies this in three phases"))
    );
    // A cilium run writes no summary lines: only its warnings, as every mode does.
    let s = svc("web", "a", "10.0.0.5");
    let out = run(&[POOL, ADV, METALLB_RUNNING, s.as_str()], &fc(""));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warnings = messages(&out, "warning");
    assert_eq!(out.stderr.lines().count(), warnings.len(), "{}", out.stderr);
    for (line, message) in out.stderr.lines().zip(&warnings) {
        assert!(line.starts_with("cutover: [warning]"), "{line}");
        assert!(line.ends_with(message.as_str()), "{line}");
    }
}

#[test]
fn every_result_names_its_check() {
    for name in [
        "announcer-cozystack-packages",
        "announcer-values-annotations",
        "announcer-metallb-plan",
        "announcer-manual-pools",
        "announcer-sharing-split",
    ] {
        for r in run_example(name).results() {
            assert!(r["tags"]["check"].is_string(), "{name}: {r:?}");
        }
    }
}

//! The plan's answers to what happens between two states (the transition model's findings):
//! observed IPs pinned and named, unknown IPs counted apart, IPs parsed when the plan is built,
//! the nodes MetalLB excludes kept out of the policies, MetalLB's controller stopped with the
//! speaker, and the refusals (foreign Cilium objects, a cold LB-IPAM start on several pools,
//! `externalTrafficPolicy: Local` without acknowledgement, speaker pods still running).

use std::ffi::OsStr;

use super::*;
use common::{diff_and_commit, kpt_eval, package_copy};

const POOL_B: &str = "apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata:
  name: pool-b
  namespace: metallb-system
spec:
  addresses:
    - 10.0.1.0/24
";

/// A Service as it is in git: no status.
fn svc_in_git(name: &str, ns: &str) -> String {
    svc(name, ns, "10.0.0.1")
        .split("status:")
        .next()
        .unwrap()
        .to_owned()
}

/// An `ObservedState` item written by `cutover observe` from `list_items` (kubectl's items).
fn observed(list_items: &str) -> String {
    let list = format!("apiVersion: v1\nkind: List\nitems:\n{list_items}");
    let out = std::process::Command::new(common::bin())
        .arg("observe")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(list.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success(), "cutover observe failed");
    String::from_utf8(out.stdout).unwrap()
}

fn live_svc(name: &str, ns: &str, ip: &str) -> String {
    format!(
        "- apiVersion: v1\n  kind: Service\n  metadata: {{name: {name}, namespace: {ns}}}\n  spec: {{type: LoadBalancer}}\n  status: {{loadBalancer: {{ingress: [{{ip: {ip}}}]}}}}\n"
    )
}

fn summary(out: &Run) -> Value {
    out.results()
        .into_iter()
        .find(|r| r["tags"]["check"] == "coverage" && r["tags"].get("checked").is_some())
        .expect("a coverage summary")
}

fn service<'a>(items: &'a [Value], name: &str) -> &'a Value {
    items
        .iter()
        .find(|i| i["kind"] == "Service" && i["metadata"]["name"] == name)
        .unwrap()
}

#[test]
fn observed_ips_are_pinned_and_named_and_unknown_ones_counted_apart() {
    let web = svc_in_git("web", "shop");
    let late = svc_in_git("late", "shop");
    let state = observed(&live_svc("web", "shop", "10.0.0.7"));
    let out = run(&[POOL, ADV, &web, &late, &state], &fc(""));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let items = output_items(&out);
    assert_eq!(
        service(&items, "web")["metadata"]["annotations"]["lbipam.cilium.io/ips"],
        "10.0.0.7"
    );
    assert!(service(&items, "late")["metadata"]["annotations"].is_null());
    let infos = messages(&out, "info");
    assert!(infos.iter().any(|m| m.contains("shop/web keeps 10.0.0.7")));
    assert!(
        infos
            .iter()
            .any(|m| m.contains("shop/late has an unknown IP") && !m.contains("keeps")),
        "{infos:?}"
    );
    let s = summary(&out);
    assert_eq!(s["tags"]["kept"], "1");
    assert_eq!(s["tags"]["unknown"], "1");
    // The observed state is local config and comes back untouched.
    let state_out = items.iter().find(|i| i["kind"] == "ObservedState").unwrap();
    assert_eq!(state_out, &serde_yaml::from_str::<Value>(&state).unwrap());
}

#[test]
fn without_status_or_observed_state_no_ip_is_said_to_be_kept() {
    let web = svc_in_git("web", "shop");
    let out = run(&[POOL, ADV, &web], &fc(""));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let s = summary(&out);
    assert_eq!(
        (s["tags"]["kept"].clone(), s["tags"]["unknown"].clone()),
        ("0".into(), "1".into())
    );
    assert!(!messages(&out, "info").iter().any(|m| m.contains("keeps")));
    // Nothing to pin.
    let items = output_items(&out);
    assert!(service(&items, "web")["metadata"]["annotations"].is_null());
}

/// A run on the pool, the advertisement and Service shop/web, whose status holds `ip` and whose
/// `metallb.io/loadBalancerIPs` annotation is `requested`, that must fail with an error on that
/// annotation: the run and the error.
fn refused_request(ip: &str, requested: &str) -> (Run, Value) {
    let web = svc("web", "shop", ip).replace(
        "  namespace: shop\n",
        &format!(
            "  namespace: shop\n  annotations:\n    metallb.io/loadBalancerIPs: {requested}\n"
        ),
    );
    let items = [POOL, ADV, web.as_str()];
    let out = run(&items, &fc(""));
    let error = assert_error(
        &out,
        &items,
        "Service",
        "web",
        "metadata.annotations.metallb.io/loadBalancerIPs",
    );
    (out, error)
}

#[test]
fn an_entry_that_is_no_ip_fails_the_run_and_nothing_is_written() {
    let (out, error) = refused_request("10.0.0.5", "10.0.0.5,not-an-ip");
    assert!(error["message"].as_str().unwrap().contains("\"not-an-ip\""));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("lbipam.cilium.io/ips"));
}

#[test]
fn a_request_the_cluster_does_not_hold_is_refused() {
    let (_, error) = refused_request("10.0.0.6", "10.0.0.5");
    assert!(error["message"].as_str().unwrap().contains("10.0.0.6"));
}

#[test]
fn every_policy_excludes_the_nodes_metallb_never_announces_from() {
    let s = svc("web", "shop", "10.0.0.5");
    let adv = format!(
        "{ADV}spec:\n  nodeSelectors:\n    - matchLabels:\n        node-role.kubernetes.io/worker: \"\"\n"
    );
    for advert in [ADV, adv.as_str()] {
        let out = run(&[POOL, advert, METALLB_STOPPED, &s], &fc(CUTOVER));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let items = output_items(&out);
        let policy = items
            .iter()
            .find(|i| i["kind"] == "CiliumL2AnnouncementPolicy")
            .unwrap();
        let exprs = policy["spec"]["nodeSelector"]["matchExpressions"]
            .as_sequence()
            .unwrap();
        assert!(exprs.iter().any(|e| e["key"]
            == "node.kubernetes.io/exclude-from-external-load-balancers"
            && e["operator"] == "DoesNotExist"));
        crd::validate(policy).unwrap();
        assert_eq!(summary(&out)["tags"]["kept"], "1", "{}", out.stderr);
    }
}

#[test]
fn stop_speaker_stops_the_controller_too() {
    let s = svc("web", "shop", "10.0.0.5");
    let out = run(
        &[POOL, ADV, METALLB_RUNNING, &s],
        &fc("  phase: stop-speaker\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let items = output_items(&out);
    let release = items.iter().find(|i| i["kind"] == "HelmRelease").unwrap();
    assert_eq!(
        release["spec"]["values"]["speaker"]["enabled"],
        Value::Bool(false)
    );
    assert_eq!(
        release["spec"]["values"]["controller"]["enabled"],
        Value::Bool(false)
    );
}

#[test]
fn cilium_objects_cutover_did_not_make_are_refused() {
    let s = svc("web", "shop", "10.0.0.5");
    let foreign_pool = "apiVersion: cilium.io/v2\nkind: CiliumLoadBalancerIPPool\nmetadata:\n  name: legacy\nspec:\n  blocks:\n    - cidr: 10.0.0.0/28\n";
    let items = [POOL, ADV, s.as_str(), foreign_pool];
    let out = run(&items, &fc(""));
    let e = assert_error(
        &out,
        &items,
        "CiliumLoadBalancerIPPool",
        "legacy",
        "metadata.labels",
    );
    assert!(e["message"].as_str().unwrap().contains("Conflicting"));
    // Live ones too, named in the observed state.
    let state = observed(
        "- {apiVersion: cilium.io/v2alpha1, kind: CiliumL2AnnouncementPolicy, metadata: {name: everything}, spec: {loadBalancerIPs: true}}\n",
    );
    let items = [POOL, ADV, s.as_str(), state.as_str()];
    let out = run(&items, &fc(""));
    let e = assert_error(&out, &items, "ObservedState", "live", "ciliumL2Policies");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("CiliumL2AnnouncementPolicy everything"),
        "{message}"
    );
    assert!(message.contains("answers ARP"), "{message}");
}

#[test]
fn a_cold_start_on_several_pools_needs_the_operator_stopped() {
    let a = svc("a", "shop", "10.0.0.5");
    let b = svc("b", "shop", "10.0.1.5");
    let items = [POOL, POOL_B, ADV, a.as_str(), b.as_str()];
    let out = run(&items, &fc_strict(""));
    let e = assert_error(
        &out,
        &items,
        "LoadBalancerAnnouncer",
        "announcer",
        "spec.ciliumOperatorStopped",
    );
    assert_eq!(e["tags"]["check"], "transitions");
    // Acknowledged: the operator is stopped while the pools are created.
    let out = run(&items, &fc_strict("  ciliumOperatorStopped: true\n"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // LB-IPAM already awake on cutover's own pools (phase prepare was applied): nothing to stage.
    let live_pools = observed(
        "- {apiVersion: cilium.io/v2, kind: CiliumLoadBalancerIPPool, metadata: {name: pool-a, labels: {app.kubernetes.io/managed-by: cutover}}}\n",
    );
    let items = [
        POOL,
        POOL_B,
        ADV,
        a.as_str(),
        b.as_str(),
        live_pools.as_str(),
    ];
    let out = run(&items, &fc_strict(""));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // One pool: LB-IPAM sees every pool with its first event.
    let out = run(&[POOL, ADV, a.as_str()], &fc_strict(""));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn local_traffic_policy_needs_acknowledgement() {
    let local = svc("ingress", "ingress", "10.0.0.5").replace(
        "  type: LoadBalancer\n",
        "  type: LoadBalancer\n  externalTrafficPolicy: Local\n",
    );
    let items = [POOL, ADV, local.as_str()];
    let out = run(&items, &fc_strict(""));
    assert_error(
        &out,
        &items,
        "Service",
        "ingress",
        "spec.externalTrafficPolicy",
    );
    let out = run(
        &items,
        &fc_strict("  acceptLocalTrafficPolicyChange: true\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Never counted among the Services that keep their announcing nodes.
    let s = summary(&out);
    assert_eq!(
        (s["tags"]["kept"].clone(), s["tags"]["local"].clone()),
        ("0".into(), "1".into())
    );
}

#[test]
fn cutover_refuses_while_the_observed_state_shows_speaker_pods() {
    let s = svc("web", "shop", "10.0.0.5");
    let state = observed(
        "- {apiVersion: v1, kind: Pod, metadata: {name: speaker-1, labels: {app.kubernetes.io/name: metallb, app.kubernetes.io/component: speaker}}, spec: {nodeName: w1}, status: {phase: Running}}\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str(), state.as_str()];
    let e = assert_cutover_error(&items, "ObservedState", "live", "metallb.speakerNodes");
    assert!(e["message"].as_str().unwrap().contains("w1"));
}

/// Every Service the proof checks is accounted for: kept, unknown, without an IP yet, Local,
/// unannounced (a warning each) or failed (an error each), in every example.
#[test]
fn every_service_not_kept_has_an_error_or_its_own_count_in_every_example() {
    let mut seen = 0;
    for entry in std::fs::read_dir(common::root().join("examples")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if !name.starts_with("announcer-") {
            continue;
        }
        let out = run_example(&name);
        let Some(s) = out
            .results()
            .into_iter()
            .find(|r| r["tags"]["check"] == "coverage" && r["tags"].get("checked").is_some())
        else {
            continue;
        };
        let n = |k: &str| s["tags"][k].as_str().unwrap().parse::<usize>().unwrap();
        assert_eq!(
            n("checked"),
            n("kept") + n("unknown") + n("noIp") + n("local") + n("unannounced") + n("failed"),
            "{name}"
        );
        let per_service = |severity: &str| {
            out.results()
                .iter()
                .filter(|r| {
                    r["severity"] == severity
                        && r["tags"]["check"] == "coverage"
                        && r["resourceRef"]["kind"] == "Service"
                })
                .count()
        };
        assert_eq!(per_service("error"), n("failed"), "{name}");
        assert_eq!(per_service("warning"), n("unannounced"), "{name}");
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} examples have a coverage summary");
}

/// The GitOps example walked through the three phases with kpt, the observed state exported
/// again between them as an operator would (the pool live after prepare, no speaker pod after
/// stop-speaker).
#[test]
fn observed_state_walkthrough_with_kpt() {
    let (_guard, dir) = package_copy(&common::root().join("examples/announcer-observed-state"));
    let phase = |phase: &str| {
        let configs = tempfile::tempdir().unwrap();
        let config = std::fs::read_to_string(dir.join("fn-config.yaml"))
            .unwrap()
            .replace("phase: prepare", &format!("phase: {phase}"));
        let path = configs.path().join("fn-config.yaml");
        std::fs::write(&path, config).unwrap();
        kpt_eval(&dir, &[OsStr::new("--fn-config"), path.as_os_str()])
    };
    let (run, results) = phase("prepare");
    assert_eq!(run.code, 0, "{results:?}");
    let keeps = |results: &[Value], what: &str| {
        results
            .iter()
            .any(|r| r["message"].as_str().unwrap_or("").contains(what))
    };
    assert!(keeps(&results, "shop/web keeps 192.0.2.7"), "{results:?}");
    assert!(
        keeps(&results, "dns/dns-udp keeps 192.0.2.9"),
        "{results:?}"
    );
    assert!(
        keeps(&results, "monitoring/grafana has an unknown IP"),
        "{results:?}"
    );
    assert!(!diff_and_commit(&dir).is_empty());
    // Applied: the pool is live now (exported again, as an operator would).
    let observed_path = dir.join("observed.yaml");
    let mut state: Value =
        serde_yaml::from_str(&std::fs::read_to_string(&observed_path).unwrap()).unwrap();
    state["ciliumPools"] =
        serde_yaml::from_str("[{name: public, generatedByCutover: true, conflicting: false}]")
            .unwrap();
    std::fs::write(&observed_path, serde_yaml::to_string(&state).unwrap()).unwrap();
    diff_and_commit(&dir);
    let (run, results) = phase("stop-speaker");
    assert_eq!(run.code, 0, "{results:?}");
    assert!(keeps(&results, "shop/web keeps 192.0.2.7"), "{results:?}");
    diff_and_commit(&dir);
    // Cutover with the speaker pods still in the export: refused.
    let (run, results) = phase("cutover");
    assert_eq!(run.code, 1, "{results:?}");
    assert!(
        keeps(&results, "MetalLB speaker pods on 2 node(s)"),
        "{results:?}"
    );
    // Exported again once they are gone.
    state["metallb"]["speakerNodes"] = Value::Sequence(Vec::new());
    state["metallb"]["controllerPods"] = 0.into();
    std::fs::write(&observed_path, serde_yaml::to_string(&state).unwrap()).unwrap();
    diff_and_commit(&dir);
    let (run, results) = phase("cutover");
    assert_eq!(run.code, 0, "{results:?}");
    assert!(
        keeps(&results, "dns/dns-tcp keeps 192.0.2.9"),
        "{results:?}"
    );
    diff_and_commit(&dir);
    let objects: Vec<Value> = common::package_objects(&dir)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    assert!(objects.iter().all(|o| {
        o["apiVersion"]
            .as_str()
            .is_none_or(|v| !v.starts_with("metallb.io/"))
    }));
    assert!(
        objects
            .iter()
            .any(|o| o["kind"] == "CiliumL2AnnouncementPolicy")
    );
    // The pins stay: LB-IPAM keeps each Service's IP however it restarts.
    let web = objects
        .iter()
        .find(|o| o["kind"] == "Service" && o["metadata"]["name"] == "web")
        .unwrap();
    assert_eq!(
        web["metadata"]["annotations"]["lbipam.cilium.io/ips"],
        "192.0.2.7"
    );
    // Idempotent: running phase cutover again changes nothing.
    let (run, _) = phase("cutover");
    assert_eq!(run.code, 0);
    assert!(diff_and_commit(&dir).is_empty());
}

/// Plain manifests and a Flux Kustomization stop the controller too, and phase cutover refuses
/// while the export still shows one running.
#[test]
fn every_install_form_stops_the_controller_before_the_pools_go() {
    let s = svc("web", "shop", "10.0.0.5");
    let speaker = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: speaker\n  namespace: metallb-system\n  labels:\n    app: metallb\n    component: speaker\nspec:\n  template:\n    spec:\n      containers:\n        - name: speaker\n          image: quay.io/metallb/speaker:v0.15.3\n";
    let controller = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: controller\n  namespace: metallb-system\n  labels:\n    app: metallb\n    component: controller\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: controller\n          image: quay.io/metallb/controller:v0.15.3\n";
    let out = run(
        &[POOL, ADV, speaker, controller, &s],
        &fc("  phase: stop-speaker\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let items = output_items(&out);
    let deployment = items.iter().find(|i| i["kind"] == "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 0);
    let kustomization = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: metallb\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./infrastructure/metallb\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: platform\n";
    let out = run(
        &[POOL, ADV, kustomization, &s],
        &fc("  phase: stop-speaker\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let items = output_items(&out);
    let k = items.iter().find(|i| i["kind"] == "Kustomization").unwrap();
    let patches = serde_yaml::to_string(&k["spec"]["patches"]).unwrap();
    assert!(patches.contains("replicas: 0"), "{patches}");
    assert!(patches.contains("cutover.dev/metallb-speaker"), "{patches}");
    let state = observed(
        "- {apiVersion: v1, kind: Pod, metadata: {name: controller-1, labels: {app: metallb, component: controller}}, status: {phase: Running}}\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str(), state.as_str()];
    let e = assert_cutover_error(&items, "ObservedState", "live", "metallb.controllerPods");
    assert!(e["message"].as_str().unwrap().contains("clearServiceState"));
}

/// A sharing group nobody knows the IP of is judged by its intent: MetalLB gives TCP/53 and
/// UDP/53 of one key one IP, and Cilium 1.16 compares port numbers only, so it would split them.
#[test]
fn a_sharing_group_without_known_ips_is_judged_by_intent() {
    let member = |name: &str, proto: &str| {
        svc_in_git(name, "dns")
            .replace(
                "  namespace: dns\n",
                "  namespace: dns\n  annotations:\n    metallb.io/allow-shared-ip: dns\n",
            )
            .replace(
                "    - port: 80\n",
                &format!("    - port: 53\n      protocol: {proto}\n"),
            )
    };
    let (tcp, udp) = (member("dns-tcp", "TCP"), member("dns-udp", "UDP"));
    let items = [POOL, ADV, tcp.as_str(), udp.as_str()];
    let config = fc("").replace("1.18.4", "1.16.9");
    let out = run(&items, &config);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        messages(&out, "error")
            .iter()
            .any(|m| m.contains("sharing key \"dns\"") && m.contains("rule ports")),
        "{:?}",
        messages(&out, "error")
    );
    // Cilium 1.19 compares protocols: the same group keeps together.
    let out = run(&items, &fc("").replace("1.18.4", "1.19.5"));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

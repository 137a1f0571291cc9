//! Integration tests of the `LoadBalancerAnnouncer` mode through the real binary: emitted objects
//! validate against the upstream CRDs, every error path leaves the items untouched and names the
//! resource and field, and the coverage proof fails on inputs built to break it.

mod common;
#[path = "announcer/platforms.rs"]
mod platforms;
#[path = "announcer/sharing.rs"]
mod sharing;

use std::path::Path;

use common::{Run, crd, k8s, resource_list, run_fn};
use k8s_openapi::api::core::v1::Service;
use serde_yaml::Value;

fn fc(extra: &str) -> String {
    format!(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: announcer\nspec:\n  announcer: cilium\n  ciliumVersion: 1.18.4\n{extra}"
    )
}

const CUTOVER: &str = "  phase: cutover\n";

const POOL: &str = "apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata:
  name: pool-a
  namespace: metallb-system
spec:
  addresses:
    - 10.0.0.0/24
";

const ADV: &str = "apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata:
  name: adv
  namespace: metallb-system
";

/// MetalLB Helm release whose speaker phase stop-speaker already stopped.
const METALLB_STOPPED: &str = "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: metallb
  namespace: metallb-system
spec:
  chart:
    spec:
      chart: metallb
  values:
    speaker:
      enabled: false
";

const METALLB_RUNNING: &str = "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: metallb
  namespace: metallb-system
spec:
  chart:
    spec:
      chart: metallb
";

fn svc(name: &str, ns: &str, ip: &str) -> String {
    format!(
        "apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
spec:
  type: LoadBalancer
  selector:
    app: {name}
  ports:
    - port: 80
status:
  loadBalancer:
    ingress:
      - ip: {ip}
"
    )
}

fn run(items: &[&str], fc: &str) -> Run {
    run_fn(resource_list(items, Some(fc)).as_bytes())
}

fn values(items: &[&str]) -> Vec<Value> {
    items
        .iter()
        .map(|s| serde_yaml::from_str(s).unwrap())
        .collect()
}

/// Exit 1, a valid ResourceList whose items equal the input, and an error result about `kind`
/// `name` at `path`. Returns that result.
fn assert_error(run: &Run, items: &[&str], kind: &str, name: &str, path: &str) -> Value {
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let out = run.resource_list();
    assert_eq!(out["kind"], Value::from("ResourceList"));
    assert_eq!(
        out["items"].as_sequence().unwrap(),
        &values(items),
        "items must come back exactly as they went in"
    );
    let results = run.results();
    results
        .iter()
        .find(|r| {
            r["severity"] == "error"
                && r["resourceRef"]["kind"] == kind
                && r["resourceRef"]["name"] == name
                && r["field"]["path"] == path
        })
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no error about {kind} {name} at {path} in:\n{}",
                serde_yaml::to_string(&results).unwrap()
            )
        })
}

fn output_items(run: &Run) -> Vec<Value> {
    run.resource_list()["items"]
        .as_sequence()
        .cloned()
        .unwrap_or_default()
}

fn messages(run: &Run, severity: &str) -> Vec<String> {
    run.results()
        .iter()
        .filter(|r| r["severity"] == severity)
        .map(|r| r["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Items (as YAML texts) and the function config of an example package.
fn example(name: &str) -> (Vec<String>, String) {
    let dir = common::root().join("examples").join(name);
    let mut items = Vec::new();
    let mut fc = String::new();
    for (path, obj) in common::package_objects(Path::new(&dir)) {
        if path == "Kptfile" {
            continue;
        }
        let text = serde_yaml::to_string(&obj).unwrap();
        if path == "fn-config.yaml" {
            fc = text;
        } else {
            items.push(text);
        }
    }
    (items, fc)
}

fn run_example(name: &str) -> Run {
    let (items, fc) = example(name);
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    run(&refs, &fc)
}

// ---------------------------------------------------------------------------------------------
// Emitted objects are valid.

#[test]
fn emitted_objects_validate_against_upstream_crds_and_k8s_openapi() {
    let mut checked = 0;
    for name in [
        "announcer-manual-pools",
        "announcer-cozystack-l2",
        "announcer-cozystack-cutover",
        "announcer-avoid-buggy-22",
        "announcer-sharing-cross-namespace",
        "announcer-etp-local",
        "announcer-kubeovn-devices",
        "announcer-cozystack-packages",
        "announcer-values-annotations",
        "announcer-phase-order",
    ] {
        let out = run_example(name);
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        for item in output_items(&out) {
            if item["kind"] == "Service" {
                k8s::roundtrip::<Service>(&item).unwrap_or_else(|e| panic!("{name}: {e}"));
                checked += 1;
            } else if crd::has_schema(&item) {
                crd::validate(&item).unwrap_or_else(|e| {
                    panic!(
                        "{name}: {} {}: {e:?}",
                        item["kind"].as_str().unwrap(),
                        item["metadata"]["name"].as_str().unwrap()
                    )
                });
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "only {checked} objects checked");
}

#[test]
fn pools_are_v2alpha1_below_cilium_1_18_and_still_validate() {
    let pinned = svc("web", "a", "10.0.0.5").replace(
        "metadata:\n  name: web\n",
        "metadata:\n  name: web\n  annotations:\n    metallb.io/loadBalancerIPs: 10.0.0.5\n",
    );
    let pool_of = |version: &str| {
        let out = run(
            &[POOL, ADV, METALLB_STOPPED, pinned.as_str()],
            &fc(CUTOVER).replace("1.18.4", version),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let items = output_items(&out);
        let pool = items
            .iter()
            .find(|i| i["kind"] == "CiliumLoadBalancerIPPool")
            .unwrap()
            .clone();
        let service = items
            .iter()
            .find(|i| i["kind"] == "Service")
            .unwrap()
            .clone();
        // The vendored CRD serves v2alpha1 with the same schema shape as v2.
        crd::validate(&pool).unwrap();
        (pool, service)
    };
    let (pool, _) = pool_of("1.17.6");
    assert_eq!(pool["apiVersion"], Value::from("cilium.io/v2alpha1"));
    assert_eq!(
        pool["spec"]["blocks"][0]["cidr"],
        Value::from("10.0.0.0/24")
    );
    // 1.15: allowFirstLastIPs defaulted to No, so the /24 becomes the exact range instead, and
    // only the io.cilium/lb-ipam-* annotation aliases are understood.
    let (pool, service) = pool_of("1.15.7");
    assert_eq!(pool["spec"]["blocks"][0]["start"], Value::from("10.0.0.0"));
    assert_eq!(pool["spec"]["blocks"][0]["stop"], Value::from("10.0.0.255"));
    assert!(pool["spec"].get("allowFirstLastIPs").is_none());
    assert_eq!(
        service["metadata"]["annotations"]["io.cilium/lb-ipam-ips"],
        Value::from("10.0.0.5")
    );
}

// ---------------------------------------------------------------------------------------------
// Plan mode and no-op runs.

#[test]
fn metallb_without_metallb_objects_is_a_no_op() {
    let items = [svc("web", "a", "10.0.0.5")];
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    let out = run(
        &refs,
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: metallb\n",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(output_items(&out), values(&refs));
    assert!(
        messages(&out, "info")
            .iter()
            .any(|m| m.contains("nothing to migrate"))
    );
}

#[test]
fn metallb_plan_changes_nothing_and_downgrades_blockers() {
    let bgp = "apiVersion: metallb.io/v1beta2\nkind: BGPPeer\nmetadata:\n  name: tor\n  namespace: metallb-system\nspec:\n  myASN: 1\n  peerASN: 2\n  peerAddress: 10.0.0.1\n";
    let s = svc("web", "a", "10.0.0.5");
    let items = [POOL, ADV, METALLB_RUNNING, bgp, s.as_str()];
    let out = run(
        &items,
        &fc("").replace("announcer: cilium", "announcer: metallb"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(output_items(&out), values(&items));
    let results = out.results();
    assert!(results.iter().all(|r| r["severity"] != "error"));
    assert!(
        results
            .iter()
            .any(|r| r["tags"]["planSeverity"] == "error" && r["resourceRef"]["kind"] == "BGPPeer")
    );
    assert!(results.iter().any(|r| {
        r["message"]
            .as_str()
            .unwrap()
            .contains("would add CiliumLoadBalancerIPPool pool-a")
    }));
}

#[test]
fn platform_values_switch_selects_cilium() {
    let values_item = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: platform\n  namespace: cozy-system\nspec:\n  chart:\n    spec:\n      chart: cozystack-platform\n  values:\n    networking:\n      loadBalancerAnnouncer: cilium\n";
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  ciliumVersion: 1.18.4\n  phase: cutover\n";
    let s = svc("web", "a", "10.0.0.5");
    let out = run(
        &[POOL, ADV, METALLB_STOPPED, values_item, s.as_str()],
        config,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let kinds: Vec<String> = output_items(&out)
        .iter()
        .map(|i| i["kind"].as_str().unwrap().to_owned())
        .collect();
    assert!(kinds.contains(&"CiliumL2AnnouncementPolicy".to_owned()));
    assert!(!kinds.contains(&"IPAddressPool".to_owned()));
}

#[test]
fn running_on_its_own_output_changes_nothing() {
    let s = svc("web", "a", "10.0.0.5");
    let pinned = svc("pinned", "b", "10.0.0.6").replace(
        "metadata:\n  name: pinned\n",
        "metadata:\n  name: pinned\n  annotations:\n    metallb.universe.tf/loadBalancerIPs: 10.0.0.6\n",
    );
    let mut texts: Vec<String> = [POOL, ADV, METALLB_RUNNING, s.as_str(), pinned.as_str()]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
    // The phases chain: each runs on the previous one's output, then once more on its own.
    for phase in ["prepare", "stop-speaker", "cutover"] {
        let config = fc(&format!("  phase: {phase}\n"));
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let first = run(&refs, &config);
        assert_eq!(first.code, 0, "{phase}: {}", first.stderr);
        let once = output_items(&first);
        assert_ne!(once, values(&refs), "phase {phase} changed nothing");
        texts = once
            .iter()
            .map(|v| serde_yaml::to_string(v).unwrap())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let second = run(&refs, &config);
        assert_eq!(second.code, 0, "{phase}: {}", second.stderr);
        assert_eq!(
            output_items(&second),
            once,
            "phase {phase} is not idempotent"
        );
    }
    let kinds: Vec<String> = values(&texts.iter().map(String::as_str).collect::<Vec<_>>())
        .iter()
        .map(|v| v["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "Service",
            "Service",
            "CiliumLoadBalancerIPPool",
            "CiliumL2AnnouncementPolicy"
        ]
    );
}

/// An annotation inside a merge key (`<<`) is an annotation to kubectl and kpt: it is migrated,
/// the same whether the Service's text is patched or its tree emitted.
#[test]
fn annotations_inside_merge_keys_are_migrated() {
    let merged = svc("web", "a", "10.0.0.5").replace(
        "metadata:\n  name: web\n",
        "metadata:\n  name: web\n  annotations:\n    <<: {metallb.io/loadBalancerIPs: 10.0.0.5}\n",
    );
    let out = run(&[POOL, ADV, METALLB_RUNNING, merged.as_str()], &fc(""));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let service = output_items(&out)
        .into_iter()
        .find(|i| i["kind"] == "Service")
        .unwrap();
    assert_eq!(
        service["metadata"]["annotations"]["lbipam.cilium.io/ips"], "10.0.0.5",
        "{service:?}"
    );
}

/// A Service whose tree is emitted (flow-style annotations) holds an anchor another item
/// aliases, in every alias form: the output never has an alias whose anchor it lost.
#[test]
fn aliases_to_a_rewritten_item_are_expanded() {
    let anchored = svc("web", "a", "10.0.0.5")
        .replace(
            "metadata:\n  name: web\n",
            "metadata:\n  name: web\n  annotations: {metallb.io/loadBalancerIPs: 10.0.0.5}\n",
        )
        .replace("    app: web\n", "    app: &-app web\n");
    for alias in ["*-app", "\t*-app", "{*-app : x}", "[*-app]"] {
        let user = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: user\n  namespace: a\ndata:\n  k: {alias}\n"
        );
        let out = run(
            &[POOL, ADV, METALLB_RUNNING, anchored.as_str(), user.as_str()],
            &fc(""),
        );
        assert_eq!(out.code, 0, "{alias}: {}", out.stderr);
        let items = output_items(&out);
        let cm = items.iter().find(|i| i["kind"] == "ConfigMap").unwrap();
        let want: Value = serde_yaml::from_str(&format!("a: &-app web\nk: {alias}\n")).unwrap();
        assert_eq!(cm["data"]["k"], want["k"], "{alias}");
        let service = items.iter().find(|i| i["kind"] == "Service").unwrap();
        assert_eq!(
            service["metadata"]["annotations"]["lbipam.cilium.io/ips"],
            "10.0.0.5"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Error paths: exit 1, items unchanged, resource and field named.

#[test]
fn bgp_objects_are_errors() {
    let bgp = "apiVersion: metallb.io/v1beta1\nkind: BGPAdvertisement\nmetadata:\n  name: bgp\n  namespace: metallb-system\n";
    let items = [POOL, ADV, METALLB_STOPPED, bgp];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "BGPAdvertisement",
        "bgp",
        "kind",
    );
}

#[test]
fn cilium_1_19_1_is_an_error_on_the_release() {
    let cilium = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: cilium\n  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: cilium\n      version: 1.19.1\n  values:\n    kubeProxyReplacement: true\n";
    let items = [POOL, ADV, METALLB_STOPPED, cilium];
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n";
    assert_error(
        &run(&items, config),
        &items,
        "HelmRelease",
        "cilium",
        "spec.chart.spec.version",
    );
    // Same version from the config: the error names the config.
    let items = [POOL, ADV, METALLB_STOPPED];
    let out = run(&items, &fc("").replace("1.18.4", "1.19.0"));
    assert_error(
        &out,
        &items,
        "LoadBalancerAnnouncer",
        "announcer",
        "spec.ciliumVersion",
    );
}

#[test]
fn unknown_cilium_version_is_an_error() {
    let items = [POOL, ADV, METALLB_STOPPED];
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n";
    assert_error(
        &run(&items, config),
        &items,
        "LoadBalancerAnnouncer",
        "a",
        "spec.ciliumVersion",
    );
}

#[test]
fn kube_proxy_replacement_off_is_an_error() {
    let cilium = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: cilium\n  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: cilium\n      version: 1.18.4\n  values:\n    kubeProxyReplacement: false\n";
    let items = [POOL, ADV, METALLB_STOPPED, cilium];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "HelmRelease",
        "cilium",
        "spec.values.kubeProxyReplacement",
    );
}

#[test]
fn metallb_load_balancer_class_is_an_error() {
    let s = svc("web", "a", "10.0.0.5").replace(
        "  type: LoadBalancer\n",
        "  type: LoadBalancer\n  loadBalancerClass: metallb.io/metallb\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str()];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "Service",
        "web",
        "spec.loadBalancerClass",
    );
}

#[test]
fn overlapping_pools_are_an_error() {
    let b = POOL
        .replace("pool-a", "pool-b")
        .replace("10.0.0.0/24", "10.0.0.128-10.0.1.5");
    let items = [POOL, b.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        "pool-b",
        "spec.addresses",
    );
}

#[test]
fn inexpressible_service_allocation_is_an_error() {
    let several = POOL.replace(
        "    - 10.0.0.0/24\n",
        "    - 10.0.0.0/24\n  serviceAllocation:\n    serviceSelectors:\n      - matchLabels:\n          a: b\n      - matchLabels:\n          c: d\n",
    );
    let items = [several.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.serviceAllocation.serviceSelectors",
    );

    let ns_sel = POOL.replace(
        "    - 10.0.0.0/24\n",
        "    - 10.0.0.0/24\n  serviceAllocation:\n    namespaceSelectors:\n      - matchLabels:\n          team: x\n",
    );
    let items = [ns_sel.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.serviceAllocation.namespaceSelectors",
    );

    let prio = POOL.replace(
        "    - 10.0.0.0/24\n",
        "    - 10.0.0.0/24\n  serviceAllocation:\n    priority: 10\n",
    );
    let other = POOL
        .replace("pool-a", "pool-b")
        .replace("10.0.0.0/24", "10.0.1.0/24");
    let items = [prio.as_str(), other.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.serviceAllocation.priority",
    );
}

#[test]
fn namespace_selectors_resolve_against_namespace_items_with_a_warning() {
    let ns_sel = POOL.replace(
        "    - 10.0.0.0/24\n",
        "    - 10.0.0.0/24\n  serviceAllocation:\n    namespaceSelectors:\n      - matchLabels:\n          team: x\n",
    );
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels:\n    team: x\n";
    let s = svc("web", "shop", "10.0.0.5");
    let out = run(
        &[ns_sel.as_str(), ADV, METALLB_STOPPED, ns, s.as_str()],
        &fc(CUTOVER),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        messages(&out, "warning")
            .iter()
            .any(|m| m.contains("namespaceSelectors approximated"))
    );
    let pool = output_items(&out)
        .into_iter()
        .find(|i| i["kind"] == "CiliumLoadBalancerIPPool")
        .unwrap();
    let expr = &pool["spec"]["serviceSelector"]["matchExpressions"][0];
    assert_eq!(expr["key"], Value::from("io.kubernetes.service.namespace"));
    assert_eq!(expr["values"][0], Value::from("shop"));
}

#[test]
fn advertisement_splitting_auto_assign_pools_is_an_error() {
    let b = POOL
        .replace("pool-a", "pool-b")
        .replace("10.0.0.0/24", "10.0.1.0/24");
    let adv = format!("{ADV}spec:\n  ipAddressPools:\n    - pool-a\n");
    let items = [POOL, b.as_str(), adv.as_str(), METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "L2Advertisement",
        "adv",
        "spec.ipAddressPools",
    );
}

#[test]
fn cutover_while_the_speaker_runs_is_an_error() {
    let items = [POOL, ADV, METALLB_RUNNING];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "HelmRelease",
        "metallb",
        "spec",
    );
}

#[test]
fn stop_speaker_without_a_metallb_installation_is_an_error() {
    let items = [POOL, ADV];
    // Phase prepare does not touch MetalLB, so it runs without the installation.
    assert_eq!(run(&items, &fc("  phase: prepare\n")).code, 0);
    assert_error(
        &run(&items, &fc("  phase: stop-speaker\n")),
        &items,
        "LoadBalancerAnnouncer",
        "announcer",
        "spec.phase",
    );
}

#[test]
fn foreign_cilium_pool_with_the_same_name_is_an_error() {
    let foreign = "apiVersion: cilium.io/v2\nkind: CiliumLoadBalancerIPPool\nmetadata:\n  name: pool-a\nspec:\n  blocks:\n    - cidr: 10.9.0.0/24\n";
    let items = [POOL, ADV, METALLB_STOPPED, foreign];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "CiliumLoadBalancerIPPool",
        "pool-a",
        "metadata.name",
    );
}

#[test]
fn invalid_and_empty_pools_are_errors() {
    let bad = POOL.replace("10.0.0.0/24", "10.0.0.300/24");
    let items = [bad.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.addresses[0]",
    );
    let empty = POOL
        .replace("10.0.0.0/24", "10.0.0.255-10.0.1.0")
        .replace("spec:\n", "spec:\n  avoidBuggyIPs: true\n");
    let items = [empty.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.addresses",
    );
}

// ---------------------------------------------------------------------------------------------
// The coverage proof, on inputs built to break it.

fn coverage_error(run: &Run, service: &str) -> String {
    let r = run
        .results()
        .into_iter()
        .find(|r| {
            r["severity"] == "error"
                && r["tags"]["check"] == "coverage"
                && r["resourceRef"]["name"] == service
        })
        .unwrap_or_else(|| panic!("no coverage error for {service}: {:?}", run.results()));
    assert_eq!(r["field"]["path"], Value::from("metadata"));
    assert_eq!(r["resourceRef"]["kind"], Value::from("Service"));
    r["message"].as_str().unwrap().to_owned()
}

#[test]
fn coverage_catches_an_ip_outside_every_pool() {
    let s = svc("stray", "a", "10.7.7.7");
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str()];
    let out = run(&items, &fc(CUTOVER));
    assert_error(&out, &items, "Service", "stray", "metadata");
    assert!(coverage_error(&out, "stray").contains("is in no Cilium pool"));
}

#[test]
fn coverage_catches_a_namespace_restriction_that_excludes_an_existing_service() {
    let restricted = POOL.replace(
        "    - 10.0.0.0/24\n",
        "    - 10.0.0.0/24\n  serviceAllocation:\n    namespaces:\n      - shop\n",
    );
    let s = svc("intruder", "other", "10.0.0.9");
    let items = [restricted.as_str(), ADV, METALLB_STOPPED, s.as_str()];
    let out = run(&items, &fc(CUTOVER));
    assert!(coverage_error(&out, "intruder").contains("does not select the Service"));
    assert_eq!(out.code, 1);
}

#[test]
fn coverage_catches_an_avoid_buggy_address_in_use() {
    // MetalLB would never allocate .0 with avoidBuggyIPs, but a requested/legacy IP can be there:
    // the Cilium ranges exclude it, so LB-IPAM would strip it.
    let pool = POOL.replace("spec:\n", "spec:\n  avoidBuggyIPs: true\n");
    let s = svc("zero", "a", "10.0.0.0");
    let items = [pool.as_str(), ADV, METALLB_STOPPED, s.as_str()];
    let out = run(&items, &fc(CUTOVER));
    assert!(coverage_error(&out, "zero").contains("10.0.0.0"));
}

#[test]
fn coverage_reports_services_no_advertisement_covers() {
    let b = POOL
        .replace("pool-a", "pool-b")
        .replace("10.0.0.0/24", "10.0.1.0/24")
        .replace("spec:\n", "spec:\n  autoAssign: false\n");
    let adv = format!("{ADV}spec:\n  ipAddressPools:\n    - pool-a\n");
    let s = svc("dark", "a", "10.0.1.7");
    let out = run(
        &[POOL, b.as_str(), adv.as_str(), METALLB_STOPPED, s.as_str()],
        &fc(CUTOVER),
    );
    // Unannounced before and after: not a change, but the operator must know.
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        messages(&out, "warning")
            .iter()
            .any(|m| m.contains("a/dark") && m.contains("announced by no L2Advertisement"))
    );
}

#[test]
fn coverage_summary_counts_every_service() {
    let out = run_example("announcer-manual-pools");
    assert_eq!(out.code, 0);
    assert!(messages(&out, "info")
        .iter()
        .any(|m| m == "coverage: 5 of 5 LoadBalancer Services served by MetalLB keep their IP, pool, announcing nodes and interfaces"));
}

#[test]
fn services_of_another_service_proxy_are_an_error() {
    let s = svc("vm", "tenant", "10.0.0.5").replace(
        "  namespace: tenant\n",
        "  namespace: tenant\n  labels:\n    service.kubernetes.io/service-proxy-name: cozy-proxy\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str()];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "Service",
        "vm",
        "metadata.labels.service.kubernetes.io/service-proxy-name",
    );
}

#[test]
fn malformed_metallb_objects_are_errors_naming_the_field() {
    let bad = POOL.replace(
        "  addresses:\n    - 10.0.0.0/24\n",
        "  addresses: 10.0.0.0/24\n",
    );
    let items = [bad.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.addresses",
    );
    let bad_op = format!(
        "{ADV}spec:\n  ipAddressPoolSelectors:\n    - matchExpressions:\n        - key: a\n          operator: Gt\n          values: ['1']\n"
    );
    let items = [POOL, bad_op.as_str(), METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "L2Advertisement",
        "adv",
        "spec.ipAddressPoolSelectors[0]",
    );
    let long = POOL.replace("pool-a", &"p".repeat(64));
    let items = [long.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        &"p".repeat(64),
        "metadata.name",
    );
}

#[test]
fn address_pool_naming_an_unknown_pool_is_an_error() {
    let s = svc("web", "a", "10.0.0.5").replace(
        "metadata:\n  name: web\n",
        "metadata:\n  name: web\n  annotations:\n    metallb.io/address-pool: nope\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str()];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "Service",
        "web",
        "metadata.annotations",
    );
}

#[test]
fn conflicting_or_invalid_platform_switches_are_errors() {
    let cm = |name: &str, value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  networking.loadBalancerAnnouncer: {value}\n"
        )
    };
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  ciliumVersion: 1.18.4\n";
    let (a, b) = (cm("a", "metallb"), cm("b", "cilium"));
    let items = [POOL, ADV, METALLB_STOPPED, a.as_str(), b.as_str()];
    assert_error(
        &run(&items, config),
        &items,
        "ConfigMap",
        "b",
        "networking.loadBalancerAnnouncer",
    );
    let c = cm("c", "kube-vip");
    let items = [POOL, ADV, METALLB_STOPPED, c.as_str()];
    assert_error(
        &run(&items, config),
        &items,
        "ConfigMap",
        "c",
        "networking.loadBalancerAnnouncer",
    );
}

#[test]
fn two_cilium_releases_or_a_pre_l2_cilium_are_errors() {
    let rel = |name: &str, version: &str| {
        format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\n  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: cilium\n      version: {version}\n  values:\n    kubeProxyReplacement: true\n"
        )
    };
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n  phase: cutover\n";
    let (a, b) = (rel("cilium", "1.18.4"), rel("cilium-2", "1.18.4"));
    let items = [POOL, ADV, METALLB_STOPPED, a.as_str(), b.as_str()];
    assert_error(
        &run(&items, config),
        &items,
        "HelmRelease",
        "cilium-2",
        "spec.chart",
    );
    let old = rel("cilium", "1.13.9");
    let items = [POOL, ADV, METALLB_STOPPED, old.as_str()];
    assert_error(
        &run(&items, config),
        &items,
        "HelmRelease",
        "cilium",
        "spec.chart.spec.version",
    );
}

#[test]
fn advertised_ipv6_pools_need_cilium_1_19() {
    let v6 = POOL.replace(
        "    - 10.0.0.0/24\n",
        "    - 10.0.0.0/24\n    - fd00::/120\n",
    );
    let items = [v6.as_str(), ADV, METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.addresses[1]",
    );
    let out = run(&items, &fc(CUTOVER).replace("1.18.4", "1.19.5"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(messages(&out, "warning").iter().any(|m| m.contains("NDP")));
}

#[test]
fn generated_name_collisions_are_errors() {
    let two = format!(
        "{ADV}spec:\n  nodeSelectors:\n    - matchLabels:\n        a: b\n    - matchLabels:\n        c: d\n"
    );
    let clash = ADV.replace("name: adv", "name: adv-1");
    let items = [POOL, two.as_str(), clash.as_str(), METALLB_STOPPED];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "L2Advertisement",
        "adv-1",
        "metadata.name",
    );
}

#[test]
fn cilium_lb_ipam_not_owning_classless_services_is_an_error() {
    let cilium = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: cilium\n  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: cilium\n      version: 1.19.2\n  values:\n    kubeProxyReplacement: true\n    defaultLBServiceIPAM: none\n";
    let items = [POOL, ADV, METALLB_STOPPED, cilium];
    assert_error(
        &run(&items, &fc(CUTOVER)),
        &items,
        "HelmRelease",
        "cilium",
        "spec.values.defaultLBServiceIPAM",
    );
}

/// A Service that asks for a pool by annotation and has no IP yet: MetalLB would allocate only
/// from that pool, and so does Cilium after the rewrite — no coverage error, even with several
/// auto-assign pools (benchmark finding F1).
#[test]
fn coverage_accepts_a_pool_request_without_an_ip_yet() {
    let pool_b = POOL
        .replace("pool-a", "pool-b")
        .replace("10.0.0.0/24", "10.0.1.0/24");
    let pending = "apiVersion: v1
kind: Service
metadata:
  name: pending
  namespace: shop
  annotations:
    metallb.io/address-pool: pool-b
spec:
  type: LoadBalancer
  selector:
    app: pending
  ports:
    - port: 80
";
    let run = run(&[POOL, &pool_b, ADV, pending], &fc(""));
    assert_eq!(run.code, 0, "{}\n{:?}", run.stderr, messages(&run, "error"));
    let out = output_items(&run);
    let svc = out.iter().find(|i| i["kind"] == "Service").unwrap();
    assert_eq!(
        svc["metadata"]["labels"]["cutover.dev/address-pool"],
        "pool-b"
    );
}

//! What the announcer emits and how it runs: generated objects valid against the upstream CRDs
//! and k8s-openapi, plan and no-op runs, the phases chained and idempotent, Services inside YAML
//! merge keys and aliases.

use super::*;

#[test]
fn emitted_objects_validate_against_upstream_crds_and_k8s_openapi() {
    let mut checked = 0;
    for name in [
        "announcer-manual-pools",
        "announcer-cozystack-l2",
        "announcer-cozystack-cutover",
        "announcer-avoid-buggy-22",
        "announcer-sharing-cross-namespace",
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

//! Error paths on the MetalLB side and in the items: exit 1, the items unchanged, the resource
//! and field named.

use super::*;

/// Pool `pool-a` with a `serviceAllocation` (its fields, a YAML block indented by four).
fn pool_a_allocating(service_allocation: &str) -> String {
    POOL.replace(
        "    - 10.0.0.0/24\n",
        &format!("    - 10.0.0.0/24\n  serviceAllocation:\n{service_allocation}"),
    )
}

#[test]
fn bgp_objects_are_errors() {
    let bgp = "apiVersion: metallb.io/v1beta1\nkind: BGPAdvertisement\nmetadata:\n  name: bgp\n  namespace: metallb-system\n";
    let items = [POOL, ADV, METALLB_STOPPED, bgp];
    assert_cutover_error(&items, "BGPAdvertisement", "bgp", "kind");
}

/// A MetalLB object whose name the API server would refuse is an error on `metadata.name`: the
/// announcer writes the names of pools and advertisements into the Cilium objects and results
/// it makes. Found by the mutation fuzzer (seed 0x34, case 565 732): an advertisement named with
/// 4 MiB of `line\n`, copied into every object of the orchestrated chain, held 403 MB for a 5 MB
/// input; now the run stops at the name.
#[test]
fn metallb_objects_with_names_the_api_server_refuses_are_errors() {
    let long = "line\\n".repeat(1 << 20);
    let adv = ADV.replace("name: adv", &format!("name: \"{long}\""));
    let items = [POOL, adv.as_str(), METALLB_STOPPED];
    let out = run(&items, &fc(CUTOVER));
    assert_eq!(out.code, 1);
    // Results name a resource by at most the first few hundred bytes of its name.
    let named = out.results().iter().any(|r| {
        r["severity"] == "error"
            && r["resourceRef"]["kind"] == "L2Advertisement"
            && r["resourceRef"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("line\nline\n"))
            && r["field"]["path"] == "metadata.name"
            && r["message"]
                .as_str()
                .is_some_and(|m| m.contains("not an object name"))
    });
    assert!(named, "no error on the advertisement's name");
    assert!(output_items(&out) == values(&items), "the items changed");
    let pool = POOL.replace("name: pool-a", "name: Pool_A");
    let items = [pool.as_str(), ADV, METALLB_STOPPED];
    assert_cutover_error(&items, "IPAddressPool", "Pool_A", "metadata.name");
}

#[test]
fn metallb_load_balancer_class_is_an_error() {
    let s = svc("web", "a", "10.0.0.5").replace(
        "  type: LoadBalancer\n",
        "  type: LoadBalancer\n  loadBalancerClass: metallb.io/metallb\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str()];
    assert_cutover_error(&items, "Service", "web", "spec.loadBalancerClass");
}

#[test]
fn overlapping_pools_are_an_error() {
    let b = POOL
        .replace("pool-a", "pool-b")
        .replace("10.0.0.0/24", "10.0.0.128-10.0.1.5");
    let items = [POOL, b.as_str(), ADV, METALLB_STOPPED];
    assert_cutover_error(&items, "IPAddressPool", "pool-b", "spec.addresses");
}

#[test]
fn inexpressible_service_allocation_is_an_error() {
    let several = pool_a_allocating(
        "    serviceSelectors:\n      - matchLabels:\n          a: b\n      - matchLabels:\n          c: d\n",
    );
    let items = [several.as_str(), ADV, METALLB_STOPPED];
    assert_cutover_error(
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.serviceAllocation.serviceSelectors",
    );

    let ns_sel =
        pool_a_allocating("    namespaceSelectors:\n      - matchLabels:\n          team: x\n");
    let items = [ns_sel.as_str(), ADV, METALLB_STOPPED];
    assert_cutover_error(
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.serviceAllocation.namespaceSelectors",
    );

    let prio = pool_a_allocating("    priority: 10\n");
    let other = POOL
        .replace("pool-a", "pool-b")
        .replace("10.0.0.0/24", "10.0.1.0/24");
    let items = [prio.as_str(), other.as_str(), ADV, METALLB_STOPPED];
    assert_cutover_error(
        &items,
        "IPAddressPool",
        "pool-a",
        "spec.serviceAllocation.priority",
    );
}

#[test]
fn namespace_selectors_resolve_against_namespace_items_with_a_warning() {
    let ns_sel =
        pool_a_allocating("    namespaceSelectors:\n      - matchLabels:\n          team: x\n");
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
    assert_cutover_error(&items, "L2Advertisement", "adv", "spec.ipAddressPools");
}

#[test]
fn cutover_while_the_speaker_runs_is_an_error() {
    let items = [POOL, ADV, METALLB_RUNNING];
    assert_cutover_error(&items, "HelmRelease", "metallb", "spec");
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
    assert_cutover_error(
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
    assert_cutover_error(&items, "IPAddressPool", "pool-a", "spec.addresses[0]");
    let empty = POOL
        .replace("10.0.0.0/24", "10.0.0.255-10.0.1.0")
        .replace("spec:\n", "spec:\n  avoidBuggyIPs: true\n");
    let items = [empty.as_str(), ADV, METALLB_STOPPED];
    assert_cutover_error(&items, "IPAddressPool", "pool-a", "spec.addresses");
}

#[test]
fn services_of_another_service_proxy_are_an_error() {
    let s = svc("vm", "tenant", "10.0.0.5").replace(
        "  namespace: tenant\n",
        "  namespace: tenant\n  labels:\n    service.kubernetes.io/service-proxy-name: cozy-proxy\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str()];
    assert_cutover_error(
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
    assert_cutover_error(&items, "IPAddressPool", "pool-a", "spec.addresses");
    let bad_op = format!(
        "{ADV}spec:\n  ipAddressPoolSelectors:\n    - matchExpressions:\n        - key: a\n          operator: Gt\n          values: ['1']\n"
    );
    let items = [POOL, bad_op.as_str(), METALLB_STOPPED];
    assert_cutover_error(
        &items,
        "L2Advertisement",
        "adv",
        "spec.ipAddressPoolSelectors[0]",
    );
    let long = POOL.replace("pool-a", &"p".repeat(64));
    let items = [long.as_str(), ADV, METALLB_STOPPED];
    assert_cutover_error(&items, "IPAddressPool", &"p".repeat(64), "metadata.name");
}

#[test]
fn address_pool_naming_an_unknown_pool_is_an_error() {
    let s = svc("web", "a", "10.0.0.5").replace(
        "metadata:\n  name: web\n",
        "metadata:\n  name: web\n  annotations:\n    metallb.io/address-pool: nope\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, s.as_str()];
    assert_cutover_error(&items, "Service", "web", "metadata.annotations");
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
fn generated_name_collisions_are_errors() {
    let two = format!(
        "{ADV}spec:\n  nodeSelectors:\n    - matchLabels:\n        a: b\n    - matchLabels:\n        c: d\n"
    );
    let clash = ADV.replace("name: adv", "name: adv-1");
    let items = [POOL, two.as_str(), clash.as_str(), METALLB_STOPPED];
    assert_cutover_error(&items, "L2Advertisement", "adv-1", "metadata.name");
}

/// A policy of an advertisement with several selectors is named after it with a `-N` suffix,
/// which can take a name the API server accepts past its 253 characters.
#[test]
fn a_generated_name_past_the_api_servers_limit_is_an_error() {
    let selectors = "spec:\n  nodeSelectors:\n    - matchLabels:\n        a: b\n    - matchLabels:\n        c: d\n";
    let longest = format!("a{}", "b".repeat(252));
    let long = format!("{ADV}{selectors}").replace("name: adv", &format!("name: {longest}"));
    let items = [POOL, long.as_str(), METALLB_STOPPED];
    let e = assert_cutover_error(&items, "L2Advertisement", &longest, "metadata.name");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("255 characters"), "{message}");
    // Two characters shorter, the suffixed names fit.
    let fits = long.replace(&longest, &longest[2..]);
    let items = [POOL, fits.as_str(), METALLB_STOPPED];
    let out = run(&items, &fc(CUTOVER));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// `poolLabel` must be a label key: the API server refuses any other key on a Service, and every
/// generated selector repeats it (an unbounded one made the output grow as pools × its length;
/// found by the mutation suite, seed 0x30, case 82805).
#[test]
fn a_pool_label_that_is_no_label_key_is_an_error_on_the_config() {
    let s = svc("web", "shop", "10.0.0.5");
    let items = [POOL, ADV, s.as_str()];
    for bad in ["'###'", "'-x'", "'a/b/c'", "\"\\\\t\""] {
        let config = fc(&format!("  poolLabel: {bad}\n"));
        let out = run(&items, &config);
        let e = assert_error(
            &out,
            &items,
            "LoadBalancerAnnouncer",
            "announcer",
            "spec.poolLabel",
        );
        assert!(
            e["message"].as_str().unwrap().contains("not a label key"),
            "{bad}"
        );
    }
    let out = run(&items, &fc("  poolLabel: example.com/pool\n"));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

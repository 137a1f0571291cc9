//! The coverage proof, on inputs built to break it.

use super::*;

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
        .any(|m| m == "coverage: 4 of 5 LoadBalancer Services served by MetalLB keep their IP, pool, announcing nodes and interfaces; 1 without an IP yet allocate from the same pools"));
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

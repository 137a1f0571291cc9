//! Cilium LB-IPAM's sharing rules at every release boundary where one changed (1.15, 1.16,
//! 1.17, 1.17.7, 1.18, 1.19, 1.21): each case is a MetalLB sharing group on one IP, and either
//! the proof that both Services keep it or the error naming the group and the rule.

use super::*;

/// Two Services of the sharing key `dns` on 10.0.0.5; `a`/`b` replace parts of the second.
fn pair(ns_b: &str, proto_a: &str, proto_b: &str, port_b: u16) -> [String; 2] {
    let member = |name: &str, ns: &str, port: u16, proto: &str| {
        svc(name, ns, "10.0.0.5")
            .replace(
                &format!("metadata:\n  name: {name}\n"),
                &format!(
                    "metadata:\n  name: {name}\n  annotations:\n    metallb.io/allow-shared-ip: dns\n    metallb.io/loadBalancerIPs: 10.0.0.5\n"
                ),
            )
            .replace(
                "    - port: 80\n",
                &format!("    - port: {port}\n      protocol: {proto}\n"),
            )
    };
    [
        member("dns-a", "dns", 53, proto_a),
        member("dns-b", ns_b, port_b, proto_b),
    ]
}

/// The Cilium release, with `loadBalancer.protocolDifferentiation.enabled` when given.
fn cilium(version: &str, proto_diff: Option<bool>) -> String {
    let value = proto_diff.map_or(String::new(), |v| {
        format!("    loadBalancer:\n      protocolDifferentiation:\n        enabled: {v}\n")
    });
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: cilium\n  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: cilium\n      version: {version}\n      sourceRef:\n        kind: HelmRepository\n        name: cilium\n  values:\n    kubeProxyReplacement: true\n{value}"
    )
}

enum Expect {
    /// Both Services keep 10.0.0.5.
    Proof,
    /// The group is split by this rule.
    Split(&'static str),
}

fn check(version: &str, proto_diff: Option<bool>, members: &[String], expect: Expect) {
    let release = cilium(version, proto_diff);
    let mut items: Vec<&str> = vec![POOL, ADV, METALLB_STOPPED, release.as_str()];
    items.extend(members.iter().map(String::as_str));
    // Local members change announcing nodes (accepted: the rules are the subject here).
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n  phase: cutover\n  acceptLocalTrafficPolicyChange: true\n";
    let out = run(&items, config);
    let case = format!("Cilium {version}, protocolDifferentiation {proto_diff:?}");
    match expect {
        Expect::Proof => {
            assert_eq!(out.code, 0, "{case}: {}", out.stderr);
            for name in ["dns-a", "dns-b"] {
                assert!(
                    messages(&out, "info")
                        .iter()
                        .any(|m| m.starts_with("coverage:")
                            && m.contains(name)
                            && m.contains("keeps 10.0.0.5")),
                    "{case}: {name} not proven: {:?}",
                    messages(&out, "info")
                );
            }
        }
        Expect::Split(rule) => {
            let error = assert_error(&out, &items, "Service", "dns-a", "metadata.annotations");
            assert_eq!(error["tags"]["check"], Value::from("sharing"), "{case}");
            assert_eq!(error["tags"]["rule"], Value::from(rule), "{case}");
            let message = error["message"].as_str().unwrap();
            for name in ["dns-a", "dns-b"] {
                assert!(message.contains(name), "{case}: {message}");
                // Neither is counted as kept.
                assert!(
                    coverage_error(&out, name).contains("split its sharing group"),
                    "{case}"
                );
            }
            assert!(message.contains("Ways out:"), "{case}: {message}");
        }
    }
}

#[test]
fn sharing_keys_from_1_15() {
    let members = pair("dns", "TCP", "TCP", 853);
    check("1.15.19", None, &members, Expect::Proof);
}

#[test]
fn cross_namespace_sharing_from_1_16() {
    let members = pair("other", "TCP", "TCP", 853);
    check("1.15.19", None, &members, Expect::Split("namespace"));
    check("1.16.18", None, &members, Expect::Proof);
}

#[test]
fn protocol_differentiation_per_release_and_helm_value() {
    let members = pair("dns", "TCP", "UDP", 53);
    // Port numbers only before 1.17, whatever the value says.
    check("1.16.18", Some(true), &members, Expect::Split("ports"));
    // 1.17.0–1.17.6: only when the Helm value is set (the operator missed the flag's default).
    check("1.17.6", None, &members, Expect::Split("ports"));
    check("1.17.6", Some(true), &members, Expect::Proof);
    // 1.17.7 and 1.18: on unless disabled.
    check("1.17.7", None, &members, Expect::Proof);
    check("1.18.0", None, &members, Expect::Proof);
    check("1.18.6", Some(false), &members, Expect::Split("ports"));
    // 1.19: always on, the value is gone.
    check("1.19.5", Some(false), &members, Expect::Proof);
}

#[test]
fn the_same_port_and_protocol_never_share() {
    let members = pair("dns", "UDP", "UDP", 53);
    check("1.19.5", None, &members, Expect::Split("ports"));
}

#[test]
fn traffic_policies_and_selectors() {
    let local = |s: &str| {
        s.replace(
            "  type: LoadBalancer\n",
            "  type: LoadBalancer\n  externalTrafficPolicy: Local\n",
        )
    };
    let [a, b] = pair("dns", "TCP", "TCP", 853);
    // Local beside Cluster: never.
    check(
        "1.19.5",
        None,
        &[local(&a), b.clone()],
        Expect::Split("external-traffic-policy"),
    );
    // Both Local, different selectors (app: dns-a / dns-b): only with the 1.21 permit.
    let both = [local(&a), local(&b)];
    check("1.19.5", None, &both, Expect::Split("selector"));
    check("1.21.0", None, &both, Expect::Proof);
    // Both Local, the same selector: always.
    let same = [local(&a), local(&b).replace("app: dns-b", "app: dns-a")];
    check("1.15.19", None, &same, Expect::Proof);
    // A Local Service without a selector: never, not even with the permit.
    let bare = local(&b).replace("  selector:\n    app: dns-b\n", "");
    check(
        "1.21.0",
        None,
        &[local(&a), bare],
        Expect::Split("selector"),
    );
}

#[test]
fn permit_annotations_are_written_on_every_member() {
    let local = |s: &str| {
        s.replace(
            "  type: LoadBalancer\n",
            "  type: LoadBalancer\n  externalTrafficPolicy: Local\n",
        )
    };
    let [a, b] = pair("other", "TCP", "TCP", 853);
    let release = cilium("1.21.0", None);
    let items = [
        POOL,
        ADV,
        METALLB_STOPPED,
        release.as_str(),
        &local(&a),
        &local(&b),
    ];
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n  acceptLocalTrafficPolicyChange: true\n";
    let out = run(&items, config);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let services: Vec<Value> = output_items(&out)
        .into_iter()
        .filter(|i| i["kind"] == "Service")
        .collect();
    assert_eq!(services.len(), 2);
    for s in services {
        let ann = &s["metadata"]["annotations"];
        assert_eq!(
            ann["lbipam.cilium.io/sharing-permit-different-pods"],
            Value::from("true")
        );
        assert_eq!(
            ann["lbipam.cilium.io/sharing-cross-namespace"],
            Value::from("dns,other")
        );
        assert_eq!(ann["lbipam.cilium.io/sharing-key"], Value::from("dns"));
    }
}

/// `count` Services of the sharing key `dns` on 10.0.0.5, each in its own namespace and port.
fn spread(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let [_, b] = pair(&format!("ns-{i:02}"), "TCP", "TCP", 1000 + i as u16);
            b.replace("name: dns-b", &format!("name: dns-{i:02}"))
        })
        .collect()
}

/// The `sharing-cross-namespace` value of every Service in the output, and the warnings.
fn cross_namespace_lists(members: &[String]) -> (Run, Vec<String>) {
    let release = cilium("1.18.4", None);
    let mut items: Vec<&str> = vec![POOL, ADV, METALLB_STOPPED, release.as_str()];
    items.extend(members.iter().map(String::as_str));
    // Local members change announcing nodes (accepted: the rules are the subject here).
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n  phase: cutover\n  acceptLocalTrafficPolicyChange: true\n";
    let out = run(&items, config);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lists = output_items(&out)
        .into_iter()
        .filter(|i| i["kind"] == "Service")
        .map(|s| {
            s["metadata"]["annotations"]["lbipam.cilium.io/sharing-cross-namespace"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    (out, lists)
}

/// Up to 16 namespaces are listed; a group spanning more gets `*` on every member (with a
/// warning), so the annotations stay the same size however many namespaces share a key, and
/// LB-IPAM still keeps the group on its IP.
#[test]
fn a_group_past_the_listed_namespaces_gets_any_namespace() {
    let (out, lists) = cross_namespace_lists(&spread(16));
    let all: Vec<String> = (0..16).map(|i| format!("ns-{i:02}")).collect();
    assert_eq!(lists, vec![all.join(","); 16]);
    assert!(
        !messages(&out, "warning")
            .iter()
            .any(|m| m.contains("spans"))
    );

    let (out, lists) = cross_namespace_lists(&spread(17));
    assert_eq!(lists, vec!["*".to_owned(); 17]);
    let warnings = messages(&out, "warning");
    assert!(
        warnings.iter().any(|m| m.contains("spans 17 namespaces")
            && m.contains("lbipam.cilium.io/sharing-cross-namespace \"*\"")),
        "{warnings:?}"
    );
    for i in 0..17 {
        let name = format!("dns-{i:02}");
        assert!(
            messages(&out, "info")
                .iter()
                .any(|m| m.starts_with("coverage:")
                    && m.contains(&name)
                    && m.contains("keeps 10.0.0.5")),
            "{name} not proven"
        );
    }
}

/// A Service whose namespace the API server would refuse (here with a `,`, which Cilium's
/// `sharing-cross-namespace` list would split into two namespaces) is an error on
/// `metadata.namespace`, and nothing is changed.
#[test]
fn a_namespace_that_is_not_a_dns_label_is_an_error() {
    let members = pair("dns,other", "TCP", "TCP", 853);
    let release = cilium("1.18.4", None);
    let mut items: Vec<&str> = vec![POOL, ADV, METALLB_STOPPED, release.as_str()];
    items.extend(members.iter().map(String::as_str));
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n  acceptLocalTrafficPolicyChange: true\n";
    let out = run(&items, config);
    let error = assert_error(&out, &items, "Service", "dns-b", "metadata.namespace");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("not a namespace name"),
        "{error:?}"
    );
}

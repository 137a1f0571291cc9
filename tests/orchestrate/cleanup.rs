//! Steps `cleanup-handover` and `cleanup` on the chain's output (the examples
//! `announcer-orchestrated-cleanup-handover` and `announcer-orchestrated-cleanup`, whose inputs
//! are the outputs of `announcer-orchestrated-cutover` and of the first step): what each
//! changes, that the second leaves Services, Cilium pools and policies in place, adds the
//! cleanup gate that reads MetalLB's pools and advertisements, and is idempotent; and the
//! refusals outside the chain state.

use super::*;

const PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";

fn items_of(list: &Value) -> Vec<Value> {
    list["items"].as_sequence().unwrap().clone()
}

fn by_identity(items: &[Value]) -> BTreeMap<(String, String, String), Value> {
    items
        .iter()
        .map(|i| (super::model::identity(i), i.clone()))
        .collect()
}

fn without_prune(item: &Value) -> Value {
    let mut item = item.clone();
    let annotations = item["metadata"]["annotations"].as_mapping_mut().unwrap();
    annotations.remove(PRUNE);
    if annotations.is_empty() {
        item["metadata"]
            .as_mapping_mut()
            .unwrap()
            .remove("annotations");
    }
    item
}

/// `cleanup-handover` takes `prune: disabled` off exactly the objects the cleanup removes
/// (MetalLB's release, pool and advertisement) and changes nothing else.
#[test]
fn cleanup_handover_only_unprotects_what_the_cleanup_removes() {
    let input = example_source("announcer-orchestrated-cleanup-handover");
    let out = ok(&input);
    let before = by_identity(&items_of(&input));
    let after = by_identity(&items_of(&out));
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    let mut changed = Vec::new();
    for (k, b) in &before {
        let a = &after[k];
        if a != b {
            assert_eq!(a, &without_prune(b), "{k:?}: only the annotation goes");
            changed.push(k.0.clone());
        }
    }
    changed.sort();
    assert_eq!(changed, ["HelmRelease", "IPAddressPool", "L2Advertisement"]);
    // Services keep it: they stay with the chain.
    let web = &after[&("Service".into(), "shop".into(), "web".into())];
    assert_eq!(annotation(web, PRUNE), Some("disabled"));
}

/// `cleanup` removes MetalLB's objects and annotations, keeps Services, Cilium pools and
/// policies, adds a fourth Kustomization after cutover whose gate reads MetalLB's objects, and
/// running it again changes nothing.
#[test]
fn cleanup_removes_metallb_keeps_the_rest_and_adds_its_gate() {
    let input = example_source("announcer-orchestrated-cleanup");
    let out = ok(&input);
    let items = items_of(&out);
    let after = by_identity(&items);
    for kind in ["HelmRelease", "IPAddressPool", "L2Advertisement"] {
        assert!(
            !after.keys().any(|k| k.0 == kind && k.1 == "metallb-system"),
            "{kind} of MetalLB left"
        );
    }
    for (kind, ns, name) in [
        ("Service", "shop", "web"),
        ("Service", "dns", "dns-tcp"),
        ("CiliumLoadBalancerIPPool", "", "public"),
        ("CiliumL2AnnouncementPolicy", "", "public"),
        ("HelmRelease", "kube-system", "cilium"),
    ] {
        let item = &after[&(kind.into(), ns.into(), name.into())];
        assert!(
            path(item).starts_with("cilium-l2-cutover/"),
            "{kind} {name}"
        );
    }
    let dns = &after[&("Service".into(), "dns".into(), "dns-tcp".into())];
    let annotations = dns["metadata"]["annotations"].as_mapping().unwrap();
    assert!(
        !annotations
            .keys()
            .any(|k| k.as_str().unwrap().starts_with("metallb.")),
        "{annotations:?}"
    );
    assert_eq!(annotation(dns, PRUNE), Some("disabled"));
    let kinds = validate_chain_objects(&items);
    assert_eq!(kinds["Job"], 4);
    assert_eq!(kinds["Kustomization"], 9, "4 Flux units, 5 kustomize files");
    let unit = &after[&(
        "Kustomization".into(),
        "flux-system".into(),
        "cilium-l2-cutover-cleanup".into(),
    )];
    assert_eq!(
        unit["spec"]["dependsOn"][0]["name"],
        "cilium-l2-cutover-cutover"
    );
    let job_name = unit["spec"]["healthChecks"][0]["name"].as_str().unwrap();
    let job = items
        .iter()
        .find(|i| i["kind"] == "Job" && i["metadata"]["name"] == job_name)
        .unwrap();
    assert_eq!(path(job), "cilium-l2-cutover/cleanup/gate.yaml");
    let env: BTreeMap<&str, &str> = job["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["value"].as_str().unwrap()))
        .collect();
    assert_eq!(env["GATE"], "cleanup");
    assert_eq!(
        env["OPTIONAL"],
        "ipaddresspools.metallb.io l2advertisements.metallb.io"
    );
    // The stop-speaker payload lists only what is left in it.
    let stop = items
        .iter()
        .find(|i| path(i) == "cilium-l2-cutover/stop-speaker/kustomization.yaml")
        .unwrap();
    assert_eq!(
        stop["resources"],
        serde_yaml::from_str::<Value>("[gate.yaml]").unwrap()
    );
    // Idempotent.
    let mut again = out.clone();
    again["functionConfig"] = input["functionConfig"].clone();
    assert_eq!(items_of(&ok(&again)), items);
}

/// Outside the chain state both steps refuse, naming the item and field; `cleanup` before
/// `cleanup-handover` names the annotation of each protected object.
#[test]
fn the_cleanup_refuses_outside_the_chain_state() {
    // The hand-over state: the chain's Kustomizations are missing and the objects are not in
    // their payload directories.
    let handed = example_source("announcer-orchestrated-cutover");
    for step in ["cleanup-handover", "cleanup"] {
        let e = common::refused(&with_orchestrate(
            handed.clone(),
            &format!(
                "{{step: {step}, {GATE_IMAGES}, source: {{sourceRef: {{kind: GitRepository, name: p}}, path: ./x}}}}"
            ),
        ));
        let fields: BTreeSet<&str> = e
            .iter()
            .map(|r| r["field"]["path"].as_str().unwrap())
            .collect();
        assert!(fields.contains("spec.orchestrate.step"), "{e:?}");
        assert!(
            fields.contains("metadata.annotations.internal.config.kubernetes.io/path"),
            "{e:?}"
        );
        let metallb = e
            .iter()
            .find(|r| {
                r["resourceRef"]["kind"] == "HelmRelease" && r["resourceRef"]["name"] == "metallb"
            })
            .expect("the MetalLB release is named");
        assert!(metallb["message"].as_str().unwrap().contains("step chain"));
    }
    // The chain state without cleanup-handover.
    let chain = example_source("announcer-orchestrated-refuse-cleanup-protected");
    let e = common::refused(&chain);
    assert_eq!(e.len(), 3, "{e:?}");
    for r in &e {
        assert_eq!(
            r["field"]["path"],
            "metadata.annotations.kustomize.toolkit.fluxcd.io/prune"
        );
    }
}

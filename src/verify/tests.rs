use super::*;

const PLAN: &str = "services: {shop/web: 10.0.0.5, shop/new: ''}\nnodes: {cp1: {excludeFromExternalLoadBalancers: true}}\n";

fn ctx_check(gate: Gate, live: &str, now: &str) -> Vec<Check> {
    let plan = Plan::parse(PLAN).unwrap();
    let live = Live::parse(live).unwrap();
    let ctx = Context {
        plan: &plan,
        live: &live,
        cilium_namespace: "kube-system",
        now: now.parse().unwrap(),
    };
    check(gate, &ctx).into_iter().map(|f| f.check).collect()
}

const WEB: &str = "- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: shop}, spec: {type: LoadBalancer}, status: {loadBalancer: {ingress: [{ip: 10.0.0.5}]}}}\n";

#[test]
fn arguments() {
    let a = Args::parse(&["cutover", "--plan=p.yaml", "--now", "2026-01-01T00:00:00Z"]).unwrap();
    assert_eq!(a.gate, Gate::Cutover);
    assert_eq!(
        (a.plan.as_str(), a.cilium_namespace.as_str()),
        ("p.yaml", "kube-system")
    );
    assert!(a.now.is_some());
    let a = Args::parse(&[
        "--cilium-namespace",
        "cilium",
        "stop-speaker",
        "--plan",
        "p",
    ])
    .unwrap();
    assert_eq!(
        (a.gate, a.cilium_namespace.as_str()),
        (Gate::StopSpeaker, "cilium")
    );
    for bad in [
        &[][..],
        &["prepare"],
        &["--plan", "p"],
        &["later", "--plan", "p"],
        &["prepare", "--plan"],
        &["prepare", "--plan", "p", "-x"],
        &["prepare", "--plan", "p", "--now", "noon"],
    ] {
        assert!(Args::parse(bad).is_err(), "{bad:?}");
    }
}

/// A hand-written plan is a bare `services` mapping; a Service without IPs has nothing to
/// keep; the nodes give the excluded set.
#[test]
fn plan() {
    let p = Plan::parse(PLAN).unwrap();
    assert_eq!(p.services.len(), 2);
    assert!(p.services[&("shop".into(), "new".into())].is_empty());
    assert_eq!(p.excluded_nodes, BTreeSet::from(["cp1".to_owned()]));
    assert!(Plan::parse("kind: ConfigMap\ndata: {}\n").is_err());
    assert!(Plan::parse("services: {web: 10.0.0.5}\n").is_err());
    assert!(Plan::parse("- a\n").is_err());
}

#[test]
fn checks_carry_their_variant() {
    let list = |items: &str| format!("kind: List\nitems:\n{items}");
    let now = "2026-01-01T00:00:10Z";
    assert_eq!(ctx_check(Gate::StopSpeaker, &list(WEB), now), vec![]);
    assert_eq!(
        ctx_check(Gate::StopSpeaker, &list(""), now),
        vec![Check::IpsKept]
    );
    assert_eq!(
        ctx_check(Gate::Prepare, &list(WEB), now),
        vec![Check::IpamSatisfied]
    );
    let lease = |holder: &str, renew: &str| {
        format!(
            "- {{apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {{name: cilium-l2announce-shop-web, namespace: kube-system}}, spec: {{holderIdentity: {holder}, leaseDurationSeconds: 15, renewTime: \"{renew}\"}}}}\n"
        )
    };
    let nodes = "- {apiVersion: v1, kind: Node, metadata: {name: cp1}}\n- {apiVersion: v1, kind: Node, metadata: {name: w1}}\n- {apiVersion: cilium.io/v2alpha1, kind: CiliumL2AnnouncementPolicy, metadata: {name: all}, spec: {loadBalancerIPs: true}}\n";
    let ok = list(&format!(
        "{WEB}{nodes}{}",
        lease("w1", "2026-01-01T00:00:00.000000Z")
    ));
    assert_eq!(ctx_check(Gate::Cutover, &ok, now), vec![]);
    assert_eq!(
        ctx_check(Gate::Cutover, &ok, "2026-01-01T00:00:16Z"),
        vec![Check::LeaseHeld]
    );
    // cp1 carries no label live, but MetalLB excluded it per the plan.
    let cp = list(&format!(
        "{WEB}{nodes}{}",
        lease("cp1", "2026-01-01T00:00:00.000000Z")
    ));
    assert_eq!(ctx_check(Gate::Cutover, &cp, now), vec![Check::LeaseHeld]);
    let no_policy = ok.replace("kind: CiliumL2AnnouncementPolicy", "kind: Other");
    assert_eq!(
        ctx_check(Gate::Cutover, &no_policy, now),
        vec![Check::LeaseHeld]
    );
    assert_eq!(
        ctx_check(Gate::Prepare, &ok, now),
        vec![
            Check::IpamSatisfied,
            Check::NoForeignAnnouncer,
            Check::NoForeignAnnouncer
        ]
    );
    let pods = "- {apiVersion: v1, kind: Pod, metadata: {name: s, labels: {app: metallb, component: speaker}}, status: {phase: Pending}}\n- {apiVersion: v1, kind: Pod, metadata: {name: c, labels: {app.kubernetes.io/name: metallb, app.kubernetes.io/component: controller}}, status: {phase: Running}}\n- {apiVersion: v1, kind: Pod, metadata: {name: f, labels: {app: metallb, component: speaker}}, status: {phase: Failed}}\n";
    assert_eq!(
        ctx_check(Gate::StopSpeaker, &list(&format!("{WEB}{pods}")), now),
        vec![Check::SpeakerStopped, Check::ControllerStopped]
    );
}

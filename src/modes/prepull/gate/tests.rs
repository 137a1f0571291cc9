//! The gate's conditions on values and items shaped as Sylva renders them.

use super::*;

use super::super::test_support::docs;

use super::super::test_support::values;

const METALLB: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: metallb, namespace: sylva-system}\nspec: {interval: 24h}\n";
const PEERS: &str =
    "metallb: {bgp_lbs: {l3_options: {bgp_peers: {a: {peer_address: 10.0.0.1}}}}}\n";

fn eval(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    v: &SylvaValues,
) -> Result<Gate, KrmResult> {
    let inputs = Inputs::scan(items, None, &spec.kustomization);
    evaluate(spec, items, &inputs, v, None)
}

#[test]
fn upgrade_detection_order() {
    let spec = MetalLBImagePrepullSpec::default();
    let items = docs(METALLB);
    // String flag from a GoTPL render.
    let g = eval(
        &spec,
        &items,
        &values(&format!(
            "{PEERS}_internal: {{state: {{is_upgrade: 'true'}}}}"
        )),
    )
    .unwrap();
    assert!(g.upgrade.met && g.is_open(), "{g:?}");
    // An unrendered template falls back to the items: none here → fresh install.
    let g = eval(
        &spec,
        &items,
        &values(&format!(
            "{PEERS}_internal: {{state: {{is_upgrade: '{{{{ x }}}}'}}}}"
        )),
    )
    .unwrap();
    assert!(!g.upgrade.met);
    assert!(g.closed_reason().contains("fresh install"));
    // sylva-units-status with inventory entries → upgrade, with versions.
    let with_status = docs(&format!(
        "{METALLB}---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: sylva-units-status\n  annotations: {{target-sylva-units-chart-version: 1.7.0}}\nspec: {{}}\nstatus: {{inventory: {{entries: [{{id: x, v: v1}}]}}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: sylva-units-status}}\ndata: {{sylva-units-chart-version: 1.6.4}}\n"
    ));
    let g = eval(&spec, &with_status, &values(PEERS)).unwrap();
    assert!(g.upgrade.met);
    assert!(
        g.upgrade
            .evidence
            .starts_with("upgrade from 1.6.4 to 1.7.0"),
        "{}",
        g.upgrade.evidence
    );
    // Forced off wins over everything.
    let off = MetalLBImagePrepullSpec {
        upgrade: UpgradeMode::False,
        ..Default::default()
    };
    assert!(
        !eval(&off, &with_status, &values(PEERS))
            .unwrap()
            .upgrade
            .met
    );
}

#[test]
fn case_and_bgp_evidence() {
    let spec = MetalLBImagePrepullSpec {
        upgrade: UpgradeMode::True,
        ..Default::default()
    };
    let items = docs(METALLB);
    let g = eval(&spec, &items, &values(PEERS)).unwrap();
    assert_eq!(g.case.0, Case::NativeToFrrK8s);
    let bfd = "metallb: {bgp_lbs: {l3_options: {bgp_peers: [{peer_address: 10.0.0.1, bfd_profile: fast}]}}}";
    let g = eval(&spec, &items, &values(bfd)).unwrap();
    assert_eq!(g.case.0, Case::FrrK8sVersionBump);
    // BGPPeer objects alone satisfy the condition; bfdProfile on them means frr-k8s runs.
    let with_peer = docs(&format!(
        "{METALLB}---\napiVersion: metallb.io/v1beta2\nkind: BGPPeer\nmetadata: {{name: p}}\nspec: {{bfdProfile: fast}}\n"
    ));
    let g = eval(&spec, &with_peer, &values("a: 1")).unwrap();
    assert!(g.bgp.met);
    assert_eq!(g.case.0, Case::FrrK8sVersionBump);
    // L2 only.
    let g = eval(&spec, &items, &values("metallb: {l2_lbs: {}}")).unwrap();
    assert!(!g.bgp.met && !g.is_open());
}

#[test]
fn malformed_inputs_are_errors() {
    let spec = MetalLBImagePrepullSpec::default();
    let items = docs(METALLB);
    let e = eval(
        &spec,
        &items,
        &values("metallb: {bgp_lbs: {l3_options: {bgp_peers: 3}}}"),
    )
    .unwrap_err();
    assert_eq!(
        e.field.unwrap().path,
        "spec.values.metallb.bgp_lbs.l3_options.bgp_peers"
    );
    let e = eval(
        &spec,
        &items,
        &values("metallb: {bgp_lbs: {l3_options: {bgp_peers: {a: x}}}}"),
    )
    .unwrap_err();
    assert!(e.message.contains("bgp_peers.a"), "{}", e.message);
    let no_spec = docs(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: metallb}\n",
    );
    assert_eq!(
        eval(&spec, &no_spec, &values(PEERS))
            .unwrap_err()
            .field
            .unwrap()
            .path,
        "spec"
    );
}

#[test]
fn metallb_condition() {
    let spec = MetalLBImagePrepullSpec::default();
    let g = eval(
        &spec,
        &docs(METALLB),
        &values(&format!("{PEERS}units: {{metallb: {{enabled: false}}}}")),
    )
    .unwrap();
    assert!(!g.metallb.met);
    assert!(g.metallb.evidence.contains("disabled"));
    let other = docs("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
    let g = eval(&spec, &other, &values(PEERS)).unwrap();
    assert!(!g.metallb.met);
    assert!(g.metallb.evidence.contains("no Flux Kustomization metallb"));
}

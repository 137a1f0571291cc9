use super::*;

use super::super::config::{PayloadSource, SourceKind, SourceRef};
use super::super::test_support::docs;

fn spec() -> MetalLBImagePrepullSpec {
    MetalLBImagePrepullSpec {
        source: Some(PayloadSource {
            source_ref: Some(SourceRef {
                kind: SourceKind::GitRepository,
                name: "flux-system".into(),
                namespace: None,
            }),
            path: Some("./infrastructure/metallb-image-prepull".into()),
            repo: None,
        }),
        ..Default::default()
    }
}

fn run(spec: &MetalLBImagePrepullSpec, text: &str) -> Result<Option<Outcome>, KrmResult> {
    let items = docs(text);
    let inputs = Inputs::scan(&items, None, &spec.kustomization);
    plan(spec, &items, &inputs, None)
}

fn messages(out: &Outcome) -> String {
    out.results
        .iter()
        .map(|r| r.message.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

const KS: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: metallb, namespace: flux-system}\nspec: {interval: 1h, path: ./infrastructure/metallb, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n";
const PEER: &str = "apiVersion: metallb.io/v1beta2\nkind: BGPPeer\nmetadata: {name: tor, namespace: metallb-system}\nspec: {myASN: 64512, peerASN: 64513, peerAddress: 10.0.0.1}\n";

fn release(version: &str, values: &str, status: &str) -> String {
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: metallb, namespace: metallb-system}}\nspec:\n  interval: 1h\n  chart: {{spec: {{chart: metallb, version: '{version}', sourceRef: {{kind: HelmRepository, name: metallb}}}}}}\n  values: {values}\n{status}"
    )
}

const LIVE_0153: &str =
    "status:\n  history: [{chartName: metallb, chartVersion: 0.15.3, status: deployed}]\n";

#[test]
fn no_installation_is_none() {
    assert!(run(&spec(), KS).unwrap().is_none());
}

#[test]
fn crossing_with_bgp_opens_the_gate() {
    let text = format!("{KS}---\n{}---\n{PEER}", release("0.16.1", "{}", LIVE_0153));
    let out = run(&spec(), &text).unwrap().unwrap();
    let m = messages(&out);
    assert!(m.contains("MetalLB chart 0.15.3 (status.history[0].chartVersion of HelmRelease metallb-system/metallb) → 0.16.1"), "{m}");
    assert!(m.contains("pre-pull quay.io/metallb/frr-k8s:v0.0.25 (default frr-k8s image of metallb chart 0.16.1 (frr-k8s subchart 0.0.25))"), "{m}");
    assert!(m.contains("pre-pull quay.io/frrouting/frr:10.4.3"), "{m}");
    assert!(
        m.contains("Kustomization metallb now waits for metallb-image-prepull"),
        "{m}"
    );
    assert!(m.contains("gate open"), "{m}");
}

#[test]
fn oci_chart_ref_and_config_version() {
    let text = format!(
        "{KS}---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {{name: metallb-chart, namespace: metallb-system}}\nspec: {{url: oci://quay.io/metallb/chart/metallb, ref: {{tag: 0.16.0}}}}\n---\n\
         apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: metallb, namespace: metallb-system}}\nspec: {{chartRef: {{kind: OCIRepository, name: metallb-chart}}}}\n---\n{PEER}"
    );
    let closed = run(&spec(), &text).unwrap().unwrap();
    assert!(messages(&closed).contains("running MetalLB chart version unknown"));
    let s = MetalLBImagePrepullSpec {
        from_chart_version: Some("0.15.2".into()),
        ..spec()
    };
    let out = run(&s, &text).unwrap().unwrap();
    let m = messages(&out);
    assert!(
        m.contains("MetalLB chart 0.15.2 (spec.fromChartVersion) → 0.16.0"),
        "{m}"
    );
    assert!(m.contains("gate open"), "{m}");
}

#[test]
fn gate_closes_with_reasons() {
    for (values, status, peer, why) in [
        ("{}", LIVE_0153, false, "no BGP in use"),
        (
            "{frrk8s: {enabled: false}}",
            LIVE_0153,
            true,
            "frrk8s.enabled is false",
        ),
        (
            "{speaker: {frr: {enabled: true}}}",
            LIVE_0153,
            true,
            "stays in (deprecated) FRR mode",
        ),
        (
            "{}",
            "status: {history: [{chartVersion: 0.16.1}]}\n",
            true,
            "already on 0.16.0+",
        ),
        (
            "{}",
            "status: {lastAttemptedRevision: '0.16.1@sha256:abc'}\n",
            true,
            "already on 0.16.0+",
        ),
    ] {
        let mut text = format!("{KS}---\n{}", release("0.16.1", values, status));
        if peer {
            text = format!("{text}---\n{PEER}");
        }
        let out = run(&spec(), &text).unwrap().unwrap();
        let m = messages(&out);
        assert!(m.contains("gate closed") && m.contains(why), "{why}: {m}");
        assert!(out.edits.is_empty(), "{why}");
    }
}

#[test]
fn mirror_overrides_the_table() {
    let values = "{frr-k8s: {frrk8s: {image: {repository: registry.local/metallb/frr-k8s}, frr: {image: {repository: registry.local/frrouting/frr}}}}}";
    let text = format!(
        "{KS}---\n{}---\n{PEER}",
        release("0.16.1", values, LIVE_0153)
    );
    let m = messages(&run(&spec(), &text).unwrap().unwrap());
    assert!(m.contains("pre-pull registry.local/metallb/frr-k8s:v0.0.25 (frr-k8s image override in HelmRelease metallb-system/metallb spec.values"), "{m}");
    assert!(
        m.contains("pre-pull registry.local/frrouting/frr:10.4.3"),
        "{m}"
    );
}

#[test]
fn unknown_target_needs_images() {
    let text = format!("{KS}---\n{}---\n{PEER}", release("0.16.2", "{}", LIVE_0153));
    let e = run(&spec(), &text).unwrap_err();
    assert!(
        e.message
            .contains("not in the image table (supported: 0.16.0, 0.16.1)"),
        "{}",
        e.message
    );
}

#[test]
fn cozystack_package_reads_the_umbrella_values() {
    let text = format!(
        "{KS}---\napiVersion: cozystack.io/v1alpha1\nkind: Package\nmetadata: {{name: cozystack.metallb}}\nspec:\n  variant: default\n  components:\n    metallb:\n      values:\n        metallb:\n          frr-k8s: {{frrk8s: {{image: {{repository: mirror.example/frr-k8s}}}}}}\n---\n{PEER}"
    );
    let closed = run(&spec(), &text).unwrap().unwrap();
    assert!(messages(&closed).contains("cozystack's umbrella chart carries cozystack's version"));
    let s = MetalLBImagePrepullSpec {
        from_chart_version: Some("0.15.2".into()),
        to_chart_version: Some("0.16.1".into()),
        ..spec()
    };
    let m = messages(&run(&s, &text).unwrap().unwrap());
    assert!(m.contains("pre-pull mirror.example/frr-k8s:v0.0.25 (frr-k8s image override in Package cozystack.metallb spec.components.metallb.values.metallb"), "{m}");
    assert!(m.contains("gate open"), "{m}");
}

#[test]
fn kustomize_helm_charts_entry() {
    let text = format!(
        "{KS}---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {{name: metallb}}\nhelmCharts:\n- {{name: metallb, repo: https://metallb.github.io/metallb, version: 0.16.1, releaseName: metallb, namespace: metallb-system, valuesInline: {{frrk8s: {{enabled: false}}}}}}\n---\n{PEER}"
    );
    let s = MetalLBImagePrepullSpec {
        from_chart_version: Some("0.15.3".into()),
        ..spec()
    };
    let m = messages(&run(&s, &text).unwrap().unwrap());
    assert!(
        m.contains("helmCharts.0.valuesInline.frrk8s.enabled is false"),
        "{m}"
    );
}

#[test]
fn bgp_peers_in_values_count() {
    let v: Value = serde_yaml::from_str(
        "extraObjects: [{apiVersion: metallb.io/v1beta2, kind: BGPPeer, metadata: {name: a}}, {apiVersion: v1, kind: ConfigMap}]",
    )
    .unwrap();
    assert_eq!(detect::bgp_in_values(&v), 1);
}

#[test]
fn an_umbrella_release_status_is_not_metallbs_version() {
    // cozystack's generated HelmRelease: its history is cozystack's chart version.
    let text = format!(
        "{KS}---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: metallb, namespace: cozy-metallb, labels: {{cozystack.io/package: cozystack.metallb}}}}\nspec: {{chartRef: {{kind: ExternalArtifact, name: cozystack-metallb-default-metallb, namespace: cozy-system}}}}\nstatus: {{history: [{{chartVersion: 1.4.6}}]}}\n---\n{PEER}"
    );
    let s = MetalLBImagePrepullSpec {
        to_chart_version: Some("0.16.1".into()),
        ..spec()
    };
    let m = messages(&run(&s, &text).unwrap().unwrap());
    assert!(m.contains("running MetalLB chart version unknown"), "{m}");
    let s = MetalLBImagePrepullSpec {
        from_chart_version: Some("0.15.2".into()),
        ..s
    };
    let m = messages(&run(&s, &text).unwrap().unwrap());
    assert!(
        m.contains("MetalLB chart 0.15.2 (spec.fromChartVersion) → 0.16.1 (spec.toChartVersion)"),
        "{m}"
    );
    assert!(m.contains("gate open"), "{m}");
}

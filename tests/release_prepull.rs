//! The prepull mode reads most items only in part: their head, and of a Sylva unit's `spec`
//! only `kubeConfig` and `path` (`src/modes/prepull/reads.rs`); the rest is skipped and the
//! item's text copied. The function must then write exactly what it writes when every item is
//! built whole (`cutover::function::process_whole`): the same stdout byte for byte, the same
//! stderr and exit code. Checked on the benchmark presets, on every prepull example as kpt
//! hands it over, and on unit specs the partial read must refuse or read with care.

mod common;
#[path = "../src/bin/cutover-gen/generate/mod.rs"]
#[allow(dead_code)]
mod generate;

use generate::Spec;

/// Runs `input` both ways and checks that the outputs are the same; returns how many items
/// the lean read built in part (0 when it read the whole input again).
fn same_as_whole(name: &str, input: &str) -> usize {
    let lean = cutover::process(input.as_bytes());
    let whole = cutover::function::process_whole(input.as_bytes());
    let (lean_out, whole_out) = (
        String::from_utf8_lossy(&lean.stdout),
        String::from_utf8_lossy(&whole.stdout),
    );
    if let Some((i, (got, want))) = lean_out
        .lines()
        .zip(whole_out.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!(
            "{name}: stdout line {}: {got:?}, whole read {want:?}",
            i + 1
        );
    }
    assert_eq!(lean_out.len(), whole_out.len(), "{name}: stdout length");
    assert_eq!(lean.stderr, whole.stderr, "{name}: stderr");
    assert_eq!(lean.exit_code, whole.exit_code, "{name}: exit code");
    common::lean_read::skipped(input).unwrap_or(0)
}

fn sylva(units: usize, pass_through: usize) -> String {
    generate::generate(&Spec {
        units,
        pass_through,
        ..Spec::sylva()
    })
}

#[test]
fn presets_read_in_part_give_the_whole_read_output() {
    let bundle = sylva(150, 0);
    // The 150 units but `metallb` (read whole: it is gated), the Services, pools and the Kptfile.
    let skipped = same_as_whole("sylva", &bundle);
    assert!(skipped >= 149 + 24, "sylva: {skipped} items read in part");
    // Of the 400 items no mode reads, the 260 Deployments and CRDs (ConfigMaps and
    // HelmReleases are read whole: they may hold the values).
    let platform = sylva(60, 400);
    let skipped = same_as_whole("sylva-platform", &platform);
    assert!(
        skipped >= 59 + 24 + 260,
        "sylva-platform: {skipped} items read in part"
    );
}

/// kpt's own ResourceList for every prepull example (`kpt fn source` with its fn-config), so the
/// layouts, annotations and orders are kpt's.
#[test]
fn every_prepull_example_gives_the_whole_read_output() {
    let mut skipped = 0;
    let mut cases = 0;
    for dir in common::examples::examples() {
        let config = dir.join("fn-config.yaml");
        let Ok(text) = std::fs::read_to_string(&config) else {
            continue;
        };
        if !text.contains("MetalLBImagePrepull") && !text.contains("metallb-image-prepull") {
            continue;
        }
        let run = common::run_cmd(
            common::kpt()
                .args(["fn", "source"])
                .arg(&dir)
                .arg("--fn-config")
                .arg(&config),
        );
        assert_eq!(
            run.code,
            0,
            "kpt fn source {}: {}",
            dir.display(),
            run.stderr
        );
        skipped += same_as_whole(&dir.display().to_string(), run.stdout_str());
        cases += 1;
    }
    assert!(cases >= 20, "only {cases} prepull examples");
    assert!(skipped > 0, "no example item was read in part");
}

/// A unit Kustomization named `name` whose `spec` is `spec` (indented under `spec:`).
fn unit(name: &str, spec: &str) -> String {
    format!(
        "- apiVersion: kustomize.toolkit.fluxcd.io/v1\n  kind: Kustomization\n  metadata:\n    name: {name}\n    \
         namespace: sylva-system\n    labels: {{sylva-units.unit: {name}}}\n  spec:{spec}"
    )
}

/// Unit specs in every form the partial read meets: what it can build in part gives the whole
/// read's output with the unit read in part (`Some(1)`), what it cannot makes the reader build
/// every item (`None`); an input error is the same error either way.
#[test]
fn odd_unit_specs_give_the_whole_read_output() {
    let base = sylva(12, 0);
    let base_skipped = same_as_whole("base", &base);
    let cases: Vec<(&str, String, Option<usize>)> = vec![
        ("block", unit("a", "\n    path: ./kustomize-units/a\n    prune: true\n"), Some(1)),
        ("flow", unit("b", " {path: ./b, interval: 1h, postBuild: {substitute: {X: y}}}\n"), Some(1)),
        ("no keys read", unit("c", " {prune: true}\n"), Some(1)),
        ("empty", unit("d", " {}\n"), Some(1)),
        ("read keys last", unit("e", "\n    prune: true\n    \"path\": './e'\n"), Some(1)),
        // A workload-cluster unit: the mode must see its kubeConfig (an error result names it).
        ("kubeConfig", unit("f", "\n    kubeConfig: {secretRef: {name: wc-kubeconfig}}\n    path: ./f\n"), Some(1)),
        ("anchor and alias in read keys", unit("g", "\n    kubeConfig: {secretRef: {name: &n wc}}\n    path: *n\n"), Some(1)),
        // The unit that aliases another's anchor is not copyable: the input is built whole.
        ("alias to a read anchor", unit("h", "\n    kubeConfig: &k {secretRef: {name: wc}}\n") + &unit("h2", "\n    kubeConfig: *k\n"), None),
        ("alias to a skipped anchor", unit("i", "\n    prune: &p true\n") + &unit("j", "\n    path: *p\n"), None),
        ("spec an alias", unit("k", " &s {path: ./k}\n") + &unit("l", " *s\n"), None),
        ("spec a sequence", unit("m", " [a, b]\n"), None),
        ("spec a scalar", unit("n", " none\n"), None),
        ("spec tagged as what it is", unit("o", " !!map {path: ./o}\n"), Some(1)),
        ("spec with a local tag", unit("o2", " !settings {path: ./o2}\n"), None),
        ("merge key in spec", unit("p", "\n    <<: {path: ./p}\n"), None),
        ("key that is not a string", unit("q", "\n    1: x\n    path: ./q\n"), None),
        ("duplicate read key", unit("r", "\n    path: ./r\n    path: ./r2\n"), None),
        ("duplicate quoted read key", unit("s", "\n    path: ./s\n    'path': ./s2\n"), None),
        ("duplicate skipped key", unit("t", "\n    prune: true\n    prune: false\n"), None),
        ("read key after a skipped twin", unit("u", "\n    interval: 1h\n    path: ./u\n    interval: 2h\n"), None),
        ("two specs", unit("v", " {path: ./v}\n  spec: {path: ./v2}\n"), None),
        ("spec before kind", "- apiVersion: kustomize.toolkit.fluxcd.io/v1\n  metadata: {name: w, labels: {sylva-units.unit: w}}\n  spec: {path: ./w}\n  kind: Kustomization\n".into(), Some(0)),
        ("integer beyond 64 bits in a read key", unit("x", "\n    path: 123456789012345678901234567890\n"), None),
    ];
    for (name, extra, more) in cases {
        let input = base.replacen("\nitems:\n", &format!("\nitems:\n{extra}"), 1);
        common::lean_read::check_items_read_in_part(name, &input, base_skipped, more);
        same_as_whole(name, &input);
    }
}

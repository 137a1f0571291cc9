//! The prepull mode against the real sylva-units chart: sylva-core's chart (vendored under
//! `tests/fixtures/sylva-units-chart`, see its SOURCES.md) rendered by Helm's own Go library
//! (`tests/sylva_chart/render.py`, helm-python-sdk; scripts/install-deps.sh installs it), with
//! the operator's values, sylva-core's own test values and cutover's output, as sylva-core's
//! HelmRelease layers them (`valuesFiles`, then `valuesFrom` the values ConfigMap, then inline
//! `values`). A render that Helm refuses, or a unit that renders where it must not, fails here as
//! it would fail the `sylva-units` HelmRelease.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{find, items, ok, resource_list, root, run_cmd, yaml};
use serde::Deserialize;
use serde_yaml::Value;

const UNIT: &str = "metallb-image-prepull";
const SOURCE_PATH: &str = "./environment-values/mgmt/metallb-image-prepull";

fn chart() -> PathBuf {
    root().join("tests/fixtures/sylva-units-chart")
}

/// A file of sylva-core's chart or its test values.
fn chart_file(path: &str) -> PathBuf {
    chart().join(path)
}

/// A values file of this test.
fn fixture(name: &str) -> PathBuf {
    root().join("tests/sylva_chart").join(name)
}

/// The Python of the venv scripts/install-deps.sh makes (`CUTOVER_HELM_PYTHON` overrides it).
fn python() -> PathBuf {
    let path = std::env::var_os("CUTOVER_HELM_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/helm-venv/bin/python"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-deps.sh (it installs helm-python-sdk)",
        path.display()
    );
    path
}

/// Renders the chart with `files` merged in order: the objects, or Helm's error.
fn render(files: &[PathBuf]) -> Result<Vec<Value>, String> {
    let run = run_cmd(
        Command::new(python())
            .arg(root().join("tests/sylva_chart/render.py"))
            .arg(chart())
            .args(files),
    );
    match run.code {
        0 => Ok(serde_yaml::Deserializer::from_slice(&run.stdout)
            .map(|d| Value::deserialize(d).unwrap())
            .filter(|v: &Value| !v.is_null())
            .collect()),
        1 => Err(run.stderr),
        code => panic!("render.py exited {code}: {}", run.stderr),
    }
}

fn rendered(files: &[PathBuf]) -> Vec<Value> {
    render(files).unwrap_or_else(|e| panic!("sylva-units does not render: {e}"))
}

fn kustomization<'a>(objects: &'a [Value], name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == "Kustomization" && o["metadata"]["name"] == name)
}

fn depends_on(k: &Value) -> Vec<String> {
    k["spec"]["dependsOn"]
        .as_sequence()
        .map(|s| {
            s.iter()
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The HelmRelease `sylva-units` of sylva-core's `environment-values/base`, as kustomize renders
/// it, with its inline values (the sylva-core source of the release).
const HELM_RELEASE: &str = "\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: sylva-units
  namespace: sylva-system
  labels:
    sylva-units/protected: ''
spec:
  chart:
    spec:
      sourceRef: {kind: GitRepository, name: sylva-units}
      chart: charts/sylva-units
      reconcileStrategy: Revision
      valuesFiles: [charts/sylva-units/values.yaml, charts/sylva-units/management.values.yaml]
  interval: 24h
  valuesFrom:
  - {kind: Secret, name: sylva-units-secrets, valuesKey: secrets}
  - {kind: ConfigMap, name: sylva-units-values, valuesKey: values}
  values:
    source_templates:
      sylva-core:
        spec:
          url: https://gitlab.com/sylva-projects/sylva-core.git
          ref: {tag: 1.7.0}
";

/// What `kubectl get cm sylva-units-status -o yaml` exported before a 1.6 → 1.7 upgrade.
const STATUS: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: sylva-units-status
  namespace: sylva-system
  annotations: {config.kubernetes.io/local-config: 'true'}
data:
  release-revision: '2'
  sylva-units-chart-version: 1.6.4
";

fn values_configmap(values: &str) -> String {
    let mut cm = yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sylva-units-values, namespace: sylva-system}\n",
    );
    cm["data"]["values"] = Value::String(values.to_owned());
    serde_yaml::to_string(&cm).unwrap()
}

const SYLVA_VALUES_CONFIG: &str = "\
apiVersion: fn.cutover.dev/v1alpha1
kind: MetalLBImagePrepull
metadata: {name: metallb-image-prepull}
spec:
  output: sylva-values
  source: {repo: platform-config, path: ./environment-values/mgmt/metallb-image-prepull}
";

/// One values text: the first file as written, or several merged as Helm merges `-f` files
/// (maps key by key, anything else replaced).
fn values_text(files: &[PathBuf]) -> String {
    fn merge(into: &mut Value, from: Value) {
        match (into, from) {
            (Value::Mapping(a), Value::Mapping(b)) => {
                for (k, v) in b {
                    match a.get_mut(&k) {
                        Some(old) if old.is_mapping() && v.is_mapping() => merge(old, v),
                        _ => {
                            a.insert(k, v);
                        }
                    }
                }
            }
            (into, from) => *into = from,
        }
    }
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    if texts.len() == 1 {
        return texts[0].clone();
    }
    let mut merged = Value::Mapping(Default::default());
    for t in &texts {
        merge(&mut merged, yaml(t));
    }
    serde_yaml::to_string(&merged).unwrap()
}

/// Runs cutover's `output: sylva-values` form on the values of `files` (concatenated, as one
/// values text) with sylva-core's HelmRelease and the exported status of a 1.6 cluster; returns
/// the values text it writes back, in a file beside the other values of the test.
fn cutover_values(dir: &Path, files: &[PathBuf]) -> (PathBuf, Value) {
    let text = values_text(files);
    let cm = values_configmap(&text);
    let input = resource_list(&[&cm, HELM_RELEASE, STATUS], Some(SYLVA_VALUES_CONFIG));
    let out = ok(&yaml(&input));
    let values = find(&out, "ConfigMap", "sylva-units-values")["data"]["values"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = dir.join("cutover.values.yaml");
    std::fs::write(&path, values).unwrap();
    (path, out)
}

/// The inline `values` of the HelmRelease, which helm-controller merges last.
fn inline_values(dir: &Path) -> PathBuf {
    let release = yaml(HELM_RELEASE);
    let path = dir.join("inline.values.yaml");
    std::fs::write(
        &path,
        serde_yaml::to_string(&release["spec"]["values"]).unwrap(),
    )
    .unwrap();
    path
}

/// The unit cutover added renders as a unit of the release: the labels and revision every unit
/// has, after the `root-dependency` Job of the revision and `base-deps`, on the configured path
/// of the `platform-config` source, and `metallb` waits for it.
fn assert_unit_renders(objects: &[Value]) {
    let unit = kustomization(objects, UNIT).expect("the prepull unit's Kustomization renders");
    let metallb = kustomization(objects, "metallb").expect("the metallb unit renders");
    for key in [
        "app.kubernetes.io/instance",
        "app.kubernetes.io/managed-by",
        "helm.sh/chart",
    ] {
        assert_eq!(
            unit["metadata"]["labels"][key], metallb["metadata"]["labels"][key],
            "label {key}"
        );
    }
    assert_eq!(unit["metadata"]["labels"]["sylva-units.unit"], UNIT);
    let revision = &metallb["metadata"]["annotations"]["sylva-units-helm-revision"];
    assert!(revision.is_string());
    assert_eq!(
        unit["metadata"]["annotations"]["sylva-units-helm-revision"],
        *revision
    );
    let deps = depends_on(unit);
    let root_dependency = depends_on(metallb)
        .into_iter()
        .find(|d| d.starts_with("root-dependency-"))
        .expect("metallb waits for the revision's root-dependency");
    assert!(
        deps.contains(&root_dependency),
        "{UNIT} waits for {root_dependency}: {deps:?}"
    );
    // Flux waits for ever on a dependency that does not exist.
    for dep in &deps {
        assert!(
            kustomization(objects, dep).is_some(),
            "{UNIT} waits for {dep}, which is not rendered"
        );
    }
    assert!(depends_on(metallb).iter().any(|d| d == UNIT));
    assert_eq!(unit["spec"]["path"], SOURCE_PATH);
    assert_eq!(unit["spec"]["healthChecks"][0]["kind"], "Job");
}

/// sylva-units renders the `source_templates` entry the unit names (`repo`).
fn assert_source_renders(objects: &[Value]) {
    let unit = kustomization(objects, UNIT).unwrap();
    let source = &unit["spec"]["sourceRef"];
    assert!(
        objects
            .iter()
            .any(|o| o["kind"] == source["kind"] && o["metadata"]["name"] == source["name"]),
        "the unit's source {source:?} is rendered"
    );
}

fn mgmt_files(values: &Path, dir: &Path, upgrade: bool, more: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = vec![chart_file("management.values.yaml")];
    if upgrade {
        // sylva-units reads the upgrade from the cluster (`lookup`), which an offline render
        // cannot: sylva-core's own test values set the result.
        files.push(chart_file("test-values/upgrade/upgrade.yaml"));
    }
    files.push(values.to_owned());
    files.extend(more.iter().cloned());
    files.push(inline_values(dir));
    files
}

#[test]
fn sylva_values_unit_renders_on_a_management_cluster_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let (values, _) = cutover_values(dir.path(), &[fixture("mgmt-bgp.values.yaml")]);
    let objects = rendered(&mgmt_files(&values, dir.path(), true, &[]));
    assert_unit_renders(&objects);
    assert_source_renders(&objects);
    // `base-deps` of management.values.yaml: on an upgrade the unit does not wait for the
    // cluster's machines (`cluster` waits for `metallb`), only for these and the revision's Job.
    let deps = depends_on(kustomization(&objects, UNIT).unwrap());
    for dep in ["flux-system", "kyverno", "kyverno-policies"] {
        assert!(
            deps.iter().any(|d| d == dep),
            "{UNIT} waits for {dep}: {deps:?}"
        );
    }
}

#[test]
fn sylva_values_unit_renders_for_a_workload_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let upstream: Vec<PathBuf> = [
        "00-workload-cluster.values.yaml",
        "01-upgrade.yaml",
        "02-cabpr.yaml",
        "shared-settings-mock.values.yaml",
    ]
    .iter()
    .map(|f| chart_file(&format!("test-values/upgrade-workload-cabpr/{f}")))
    .collect();
    let (values, _) = cutover_values(dir.path(), &[fixture("workload-bgp.values.yaml")]);
    let mut files = upstream;
    files.push(values);
    files.push(inline_values(dir.path()));
    let objects = rendered(&files);
    assert_unit_renders(&objects);
    assert_source_renders(&objects);
}

/// `output: rendered` on the chart's own render: the unit it adds among the rendered units is the
/// unit the chart renders from the `sylva-values` form (same path, source, dependencies and
/// health check), and it carries the release's labels and revision.
#[test]
fn rendered_form_agrees_with_the_chart() {
    let dir = tempfile::tempdir().unwrap();
    let before = rendered(&mgmt_files(
        &fixture("mgmt-bgp.values.yaml"),
        dir.path(),
        true,
        &[],
    ));
    let texts: Vec<String> = before
        .iter()
        .chain([&yaml(STATUS)])
        .map(|o| serde_yaml::to_string(o).unwrap())
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let config = "\
apiVersion: fn.cutover.dev/v1alpha1
kind: MetalLBImagePrepull
metadata: {name: metallb-image-prepull}
spec:
  source:
    sourceRef: {kind: GitRepository, name: platform-config}
    path: ./environment-values/mgmt/metallb-image-prepull
";
    let out = ok(&yaml(&resource_list(&refs, Some(config))));
    let after: Vec<Value> = items(&out).clone();
    assert_unit_renders(&after);

    let (values, _) = cutover_values(dir.path(), &[fixture("mgmt-bgp.values.yaml")]);
    let chart_render = rendered(&mgmt_files(&values, dir.path(), true, &[]));
    let (ours, theirs) = (
        kustomization(&after, UNIT).unwrap(),
        kustomization(&chart_render, UNIT).unwrap(),
    );
    // The rendered form takes only the revision's ordering root from its siblings; sylva-units
    // adds `base-deps` too (Flux and Kyverno, in place long before an upgrade).
    let theirs_deps = depends_on(theirs);
    for dep in depends_on(ours) {
        assert!(
            theirs_deps.contains(&dep),
            "{dep} is not among {theirs_deps:?}"
        );
    }
    for field in ["path", "healthChecks", "targetNamespace"] {
        assert_eq!(ours["spec"][field], theirs["spec"][field], "spec.{field}");
    }
}
/// No prepull object renders, and nothing waits for one.
fn assert_no_unit(objects: &[Value]) {
    assert!(kustomization(objects, UNIT).is_none(), "{UNIT} renders");
    for k in objects.iter().filter(|o| o["kind"] == "Kustomization") {
        assert!(
            !depends_on(k).iter().any(|d| d == UNIT),
            "{} waits for {UNIT}",
            k["metadata"]["name"].as_str().unwrap()
        );
    }
}

/// Every Kustomization that applies to or checks `metallb-system` comes with the metallb unit,
/// whose HelmRelease creates that namespace (`install.createNamespace`): nothing else does.
fn assert_metallb_system_is_created(objects: &[Value]) {
    if kustomization(objects, "metallb").is_some() {
        return;
    }
    for k in objects.iter().filter(|o| o["kind"] == "Kustomization") {
        let text = serde_yaml::to_string(&k["spec"]).unwrap();
        assert!(
            !text.contains("metallb-system"),
            "{} targets metallb-system, which nothing creates without the metallb unit",
            k["metadata"]["name"].as_str().unwrap()
        );
    }
}

#[test]
fn sylva_values_unit_stays_out_of_a_fresh_install() {
    let dir = tempfile::tempdir().unwrap();
    let (values, _) = cutover_values(dir.path(), &[fixture("mgmt-bgp.values.yaml")]);
    let objects = rendered(&mgmt_files(&values, dir.path(), false, &[]));
    assert!(kustomization(&objects, "metallb").is_some());
    assert_no_unit(&objects);
}

#[test]
fn sylva_values_unit_stays_out_where_metallb_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let (values, _) = cutover_values(dir.path(), &[fixture("mgmt-bgp.values.yaml")]);
    // The same values, reused on OpenStack with kubeadm: no metallb unit, so no prepull unit.
    let capo = [
        chart_file("test-values/capo-base/values.yaml"),
        fixture("capo-kubeadm.values.yaml"),
    ];
    let objects = rendered(&mgmt_files(&values, dir.path(), true, &capo));
    assert!(kustomization(&objects, "metallb").is_none());
    assert_no_unit(&objects);
    assert_metallb_system_is_created(&objects);
}

#[test]
fn metallb_off_changes_no_values() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        fixture("mgmt-bgp.values.yaml"),
        chart_file("test-values/capo-base/values.yaml"),
        fixture("capo-kubeadm.values.yaml"),
    ];
    let (values, out) = cutover_values(dir.path(), &files);
    assert_eq!(
        std::fs::read_to_string(&values).unwrap(),
        values_text(&files)
    );
    let results = serde_yaml::to_string(&out["results"]).unwrap();
    assert!(results.contains("metallb"), "says why: {results}");
    let objects = rendered(&mgmt_files(&values, dir.path(), true, &[]));
    assert_no_unit(&objects);
}

/// A unit whose `repo` is no `source_templates` entry fails the whole sylva-units render (its
/// `templates/sources.yaml`): cutover refuses such a `source.repo` before writing anything.
#[test]
fn a_repo_outside_source_templates_fails_the_chart_and_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (values, _) = cutover_values(dir.path(), &[fixture("mgmt-bgp.values.yaml")]);
    let typo = std::fs::read_to_string(&values)
        .unwrap()
        .replace("repo: platform-config", "repo: platform-confg");
    std::fs::write(&values, typo).unwrap();
    let e = render(&mgmt_files(&values, dir.path(), true, &[]))
        .expect_err("the chart refuses an unknown repo");
    assert!(e.contains("source_templates"), "{e}");

    let cm = values_configmap(&std::fs::read_to_string(fixture("mgmt-bgp.values.yaml")).unwrap());
    let config = SYLVA_VALUES_CONFIG.replace("repo: platform-config", "repo: platform-confg");
    let input = resource_list(&[&cm, HELM_RELEASE, STATUS], Some(&config));
    let run = common::run_fn(input.as_bytes());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let error = run
        .results()
        .into_iter()
        .find(|r| r["severity"] == "error")
        .expect("an error result");
    assert_eq!(error["field"]["path"], "spec.source.repo", "{error:?}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("platform-config"),
        "names the entries found: {error:?}"
    );
}

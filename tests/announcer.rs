//! Integration tests of the `LoadBalancerAnnouncer` mode through the real binary: emitted objects
//! validate against the upstream CRDs, every error path leaves the items untouched and names the
//! resource and field, and the coverage proof fails on inputs built to break it.
//!
//! This file holds the items and helpers the modules share; the tests are in `announcer/`:
//! `outputs` (emitted objects, plan and no-op runs, idempotence), `errors` (MetalLB side and
//! items), `cilium` (the targeted Cilium), `coverage` (the proof), `sharing` (IP sharing rules),
//! `platforms` (real platforms' objects and the phase guard rails).

#[path = "announcer/cilium.rs"]
mod cilium;
mod common;
#[path = "announcer/coverage.rs"]
mod coverage;
#[path = "announcer/errors.rs"]
mod errors;
#[path = "announcer/outputs.rs"]
mod outputs;
#[path = "announcer/platforms.rs"]
mod platforms;
#[path = "announcer/sharing.rs"]
mod sharing;
#[path = "announcer/transitions.rs"]
mod transitions;

use std::path::Path;

use common::{Run, crd, k8s, resource_list, run_fn};
use k8s_openapi::api::core::v1::Service;
use serde_yaml::Value;

/// A config for the tests whose subject is not a transition refusal: the pools are created with
/// the operator stopped, and Local Services' announcing nodes may change (see [`fc_strict`]).
fn fc(extra: &str) -> String {
    fc_strict(&format!(
        "  ciliumOperatorStopped: true\n  acceptLocalTrafficPolicyChange: true\n{extra}"
    ))
}

/// A config without the acknowledgements: what an operator writes first.
fn fc_strict(extra: &str) -> String {
    format!(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: announcer\nspec:\n  announcer: cilium\n  ciliumVersion: 1.18.4\n{extra}"
    )
}

const CUTOVER: &str = "  phase: cutover\n";

const POOL: &str = "apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata:
  name: pool-a
  namespace: metallb-system
spec:
  addresses:
    - 10.0.0.0/24
";

const ADV: &str = "apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata:
  name: adv
  namespace: metallb-system
";

/// The MetalLB Helm release, as a literal for `concat!`.
macro_rules! metallb_release {
    () => {
        "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: metallb
  namespace: metallb-system
spec:
  chart:
    spec:
      chart: metallb
"
    };
}

/// MetalLB Helm release whose speaker phase stop-speaker already stopped.
const METALLB_STOPPED: &str = concat!(
    metallb_release!(),
    "  values:
    speaker:
      enabled: false
"
);

const METALLB_RUNNING: &str = metallb_release!();

fn svc(name: &str, ns: &str, ip: &str) -> String {
    format!(
        "apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
spec:
  type: LoadBalancer
  selector:
    app: {name}
  ports:
    - port: 80
status:
  loadBalancer:
    ingress:
      - ip: {ip}
"
    )
}

fn run(items: &[&str], fc: &str) -> Run {
    let run = run_fn(resource_list(items, Some(fc)).as_bytes());
    common::assert_announcer_checks(&run);
    run
}

fn values(items: &[&str]) -> Vec<Value> {
    items
        .iter()
        .map(|s| serde_yaml::from_str(s).unwrap())
        .collect()
}

/// Exit 1, a valid ResourceList whose items equal the input, and an error result about `kind`
/// `name` at `path`. Returns that result.
fn assert_error(run: &Run, items: &[&str], kind: &str, name: &str, path: &str) -> Value {
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let out = run.resource_list();
    assert_eq!(out["kind"], Value::from("ResourceList"));
    assert_eq!(
        out["items"].as_sequence().unwrap(),
        &values(items),
        "items must come back exactly as they went in"
    );
    let results = run.results();
    results
        .iter()
        .find(|r| {
            r["severity"] == "error"
                && r["resourceRef"]["kind"] == kind
                && r["resourceRef"]["name"] == name
                && r["field"]["path"] == path
        })
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no error about {kind} {name} at {path} in:\n{}",
                serde_yaml::to_string(&results).unwrap()
            )
        })
}

/// [`assert_error`] on a run of phase cutover on `items`.
fn assert_cutover_error(items: &[&str], kind: &str, name: &str, path: &str) -> Value {
    assert_error(&run(items, &fc(CUTOVER)), items, kind, name, path)
}

fn output_items(run: &Run) -> Vec<Value> {
    run.resource_list()["items"]
        .as_sequence()
        .cloned()
        .unwrap_or_default()
}

fn messages(run: &Run, severity: &str) -> Vec<String> {
    run.results()
        .iter()
        .filter(|r| r["severity"] == severity)
        .map(|r| r["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Items (as YAML texts) and the function config of an example package.
fn example(name: &str) -> (Vec<String>, String) {
    let dir = common::root().join("examples").join(name);
    let mut items = Vec::new();
    let mut fc = String::new();
    for (path, obj) in common::package_objects(Path::new(&dir)) {
        if path == "Kptfile" {
            continue;
        }
        let text = serde_yaml::to_string(&obj).unwrap();
        if path == "fn-config.yaml" {
            fc = text;
        } else {
            items.push(text);
        }
    }
    (items, fc)
}

fn run_example(name: &str) -> Run {
    let (items, fc) = example(name);
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    run(&refs, &fc)
}

/// The coverage proof's error about Service `service` (at `metadata`): its message.
fn coverage_error(run: &Run, service: &str) -> String {
    let r = run
        .results()
        .into_iter()
        .find(|r| {
            r["severity"] == "error"
                && r["tags"]["check"] == "coverage"
                && r["resourceRef"]["name"] == service
        })
        .unwrap_or_else(|| panic!("no coverage error for {service}: {:?}", run.results()));
    assert_eq!(r["field"]["path"], Value::from("metadata"));
    assert_eq!(r["resourceRef"]["kind"], Value::from("Service"));
    r["message"].as_str().unwrap().to_owned()
}

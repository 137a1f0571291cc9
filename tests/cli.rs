//! The binary's contract, end to end: CLI flags, and every input/config error path (exit code,
//! stdout shape, stderr, and the error result's `field.path` and `resourceRef`).

mod common;

use std::process::Command;

use common::{resource_list, run_cmd, run_fn};
use serde_yaml::Value;

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep-me\n  annotations:\n    config.kubernetes.io/path: cm.yaml\n    config.kubernetes.io/index: '0'\n    internal.config.kubernetes.io/path: cm.yaml\n    internal.config.kubernetes.io/index: '0'\n    config.k8s.io/id: '1'\n    kustomize.config.k8s.io/id: |\n      kind: ConfigMap\n      name: keep-me\n      version: v1\nzUnknown: {b: 1, a: [3, 2]}\ndata: {k: v}";

/// Input that is not a ResourceList: exit 1, a message on stderr, nothing on stdout.
fn assert_rejected_input(input: &[u8], stderr_needle: &str) {
    let run = run_fn(input);
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "stdout must be empty, got {:?}",
        run.stdout_str()
    );
    assert!(
        run.stderr.contains(stderr_needle),
        "stderr {:?} lacks {stderr_needle:?}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn malformed_input_is_rejected_without_output() {
    assert_rejected_input(b"", "input is empty");
    assert_rejected_input(b"\n\n", "input is empty");
    assert_rejected_input(
        b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [\n",
        "line 4, column 1",
    );
    assert_rejected_input(b"{\"kind\": \"ResourceList\",", "line 1, column");
    assert_rejected_input(
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        "kind is \"ConfigMap\"",
    );
    assert_rejected_input(
        b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n",
        "items is missing",
    );
    assert_rejected_input(
        b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: {}\n",
        "items is not a list",
    );
    assert_rejected_input(
        b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n---\na: 1\n",
        "more than one document",
    );
    assert_rejected_input(
        b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- name: \xc3\x28\n",
        "not UTF-8",
    );
}

#[test]
fn hostile_input_ends_quickly_with_an_error() {
    let deep = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- a: {}{}\n",
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    assert_rejected_input(deep.as_bytes(), "nested deeper");
    let block_deep = {
        let mut s =
            String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- a:\n");
        for i in 0..200 {
            s.push_str(&" ".repeat(2 * i + 4));
            s.push_str("b:\n");
        }
        s
    };
    assert_rejected_input(block_deep.as_bytes(), "recursion limit");
    let mut laughs = String::from(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
    );
    for i in 1..10 {
        let p = i - 1;
        laughs.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    laughs.push_str("items: [*a9]\n");
    assert_rejected_input(laughs.as_bytes(), "repetition limit");
}

/// Config errors: exit 1, stdout is a valid ResourceList with the input items unchanged and one
/// error result naming the config object and field.
fn assert_config_error(function_config: Option<&str>, field_path: &str) -> Value {
    let input = resource_list(&[CM], function_config);
    let run = run_fn(input.as_bytes());
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let out = run.resource_list();
    let inp: Value = serde_yaml::from_str(&input).unwrap();
    assert_eq!(out["apiVersion"], "config.kubernetes.io/v1");
    assert_eq!(out["kind"], "ResourceList");
    assert_eq!(
        out["items"], inp["items"],
        "items must come out exactly as they came in"
    );
    let results = run.results();
    assert_eq!(results.len(), 1, "{results:?}");
    let r = &results[0];
    assert_eq!(r["severity"], "error");
    assert_eq!(r["field"]["path"], field_path, "{r:?}");
    if function_config.is_some() {
        assert!(
            r["resourceRef"]["kind"].is_string(),
            "resourceRef missing: {r:?}"
        );
    }
    assert!(
        run.stderr.contains(field_path),
        "stderr names the field: {}",
        run.stderr
    );
    r.clone()
}

#[test]
fn config_errors_name_the_field_and_leave_items_unchanged() {
    assert_config_error(None, "functionConfig");
    let typed =
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: MetalLBImagePrepull\nmetadata: {name: c}\n";
    assert_config_error(
        Some(&format!("{typed}spec:\n  waitTimeout: soon\n")),
        "spec.waitTimeout",
    );
    assert_config_error(
        Some(&format!("{typed}spec:\n  waitTimeoutt: 5m\n")),
        "spec.waitTimeoutt",
    );
    assert_config_error(
        Some(&format!("{typed}spec:\n  runAsUser: lots\n")),
        "spec.runAsUser",
    );
    assert_config_error(
        Some(&format!("{typed}spec:\n  onTimeout: retry\n")),
        "spec.onTimeout",
    );
    assert_config_error(
        Some("apiVersion: fn.cutover.dev/v1alpha1\nkind: Mystery\nmetadata: {name: c}\n"),
        "kind",
    );
    assert_config_error(
        Some("apiVersion: fn.cutover.dev/v9\nkind: MetalLBImagePrepull\nmetadata: {name: c}\n"),
        "apiVersion",
    );
    assert_config_error(
        Some("apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: c}\n"),
        "apiVersion",
    );
    let announcer =
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata: {name: c}\n";
    assert_config_error(
        Some(&format!("{announcer}spec:\n  announcer: bgp\n")),
        "spec.announcer",
    );
    assert_config_error(
        Some(&format!("{announcer}spec:\n  ciliumVersion: [1]\n")),
        "spec.ciliumVersion",
    );
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\n";
    assert_config_error(Some(cm), "data.mode");
    assert_config_error(
        Some(&format!("{cm}data: {{mode: teleport}}\n")),
        "data.mode",
    );
    assert_config_error(
        Some(&format!(
            "{cm}data: {{mode: metallb-image-prepull, onTimeout: later}}\n"
        )),
        "data.onTimeout",
    );
    assert_config_error(
        Some(&format!(
            "{cm}data: {{mode: load-balancer-announcer, colour: blue}}\n"
        )),
        "data.colour",
    );
}

#[test]
fn existing_results_are_kept_and_new_ones_appended() {
    let mut input = resource_list(&[CM], None);
    input.push_str("results:\n- message: from an earlier function\n  severity: info\n");
    let run = run_fn(input.as_bytes());
    let results = run.results();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["message"], "from an earlier function");
    assert_eq!(results[1]["field"]["path"], "functionConfig");
}

#[test]
fn json_input_is_accepted() {
    let run = run_fn(br#"{"apiVersion":"config.kubernetes.io/v1beta1","kind":"ResourceList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}"#);
    assert_eq!(run.code, 1);
    assert_eq!(run.resource_list()["items"][0]["metadata"]["name"], "a");
}

#[test]
fn help_version_and_schema() {
    let help = run_cmd(Command::new(common::bin()).arg("--help"));
    assert_eq!(help.code, 0);
    assert!(help.stdout_str().contains("cutover schema [KIND]"));
    let version = run_cmd(Command::new(common::bin()).arg("--version"));
    assert_eq!(
        version.stdout_str(),
        format!("cutover {}\n", env!("CARGO_PKG_VERSION"))
    );
    for kind in ["MetalLBImagePrepull", "LoadBalancerAnnouncer"] {
        let run = run_cmd(Command::new(common::bin()).args(["schema", kind]));
        assert_eq!(run.code, 0);
        let schema: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(schema["properties"]["kind"]["enum"][0], kind);
        assert_eq!(schema["properties"]["spec"]["additionalProperties"], false);
    }
    let bad = run_cmd(Command::new(common::bin()).args(["schema", "Nope"]));
    assert_eq!(bad.code, 2);
    assert!(bad.stdout.is_empty());
    let bad = run_cmd(Command::new(common::bin()).arg("--frobnicate"));
    assert_eq!(bad.code, 2);
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["schema", "--help"][..],
        &["schema", "-h"],
        &["help", "schema"],
        &["schema", "MetalLBImagePrepull", "--help"],
    ] {
        let run = run_cmd(Command::new(common::bin()).args(args));
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(
            run.stdout_str().contains("cutover schema KIND"),
            "{args:?}: {}",
            run.stdout_str()
        );
        assert!(!run.stderr.contains("unknown kind"), "{args:?}");
    }
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let run = run_cmd(Command::new(common::bin()).args(args));
        assert_eq!(run.code, 0);
        for kind in cutover::config::Kind::ALL {
            assert!(run.stdout_str().contains(kind.name()), "{kind:?} missing");
        }
    }
    let bad = run_cmd(Command::new(common::bin()).args(["schema", "a", "b"]));
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("cutover schema KIND"), "{}", bad.stderr);
}

/// Each error names its place once: in the result's field (printed before the message), or in
/// the "at line L, column C" of a syntax error — never again inside the message.
#[test]
fn errors_say_their_location_once() {
    let typo = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata: {name: c}\nspec:\n  annoucer: cilium\n";
    let run = run_fn(resource_list(&[CM], Some(typo)).as_bytes());
    let r = &run.results()[0];
    assert_eq!(r["field"]["path"], "spec.annoucer");
    assert!(
        !r["message"].as_str().unwrap().contains("spec.annoucer"),
        "{r:?}"
    );
    assert_eq!(
        run.stderr.matches("spec.annoucer").count(),
        1,
        "{}",
        run.stderr
    );
    let run = run_fn(b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [\n");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("at line 4, column 1: "),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("line 4 column 1"), "{}", run.stderr);
    let run = run_fn(b"{\"kind\": }");
    assert!(
        run.stderr.contains("at line 1, column 10: expected value"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("column 10 "), "{}", run.stderr);
}

/// In kpt's ConfigMap form the user wrote `data.x`: mode results about the config say so too.
#[test]
fn configmap_form_results_name_data_fields() {
    // Phase stop-speaker without a MetalLB installation among the items: an error about the
    // config's `phase` field, produced by the mode (not by the config parser).
    let pool = "apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata: {name: p, namespace: metallb-system}\nspec: {addresses: [10.0.0.0/24]}";
    let typed = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata: {name: c}\nspec: {announcer: cilium, phase: stop-speaker, ciliumVersion: 1.18.4}\n";
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {mode: load-balancer-announcer, announcer: cilium, phase: stop-speaker, ciliumVersion: 1.18.4}\n";
    for (config, path) in [(typed, "spec.phase"), (cm, "data.phase")] {
        let run = run_fn(resource_list(&[CM, pool], Some(config)).as_bytes());
        assert_eq!(run.code, 1, "{}", run.stderr);
        let errors = run.errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0]["field"]["path"], path, "{errors:?}");
        assert_eq!(errors[0]["resourceRef"]["name"], config_name(config));
    }
}

fn config_name(config: &str) -> String {
    let v: Value = serde_yaml::from_str(config).unwrap();
    v["metadata"]["name"].as_str().unwrap().to_owned()
}

/// Without a config (kpt sends an empty ConfigMap then) the error shows what a config of each
/// kind looks like.
#[test]
fn no_config_shows_what_a_config_looks_like() {
    let empty_cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {}\n";
    for config in [None, Some(empty_cm)] {
        let run = run_fn(resource_list(&[CM], config).as_bytes());
        assert_eq!(run.code, 1);
        let message = run.results()[0]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("--fn-config"), "{message}");
        for kind in cutover::config::Kind::ALL {
            let example = format!(
                "\n  apiVersion: fn.cutover.dev/v1alpha1\n  kind: {}\n",
                kind.name()
            );
            assert!(message.contains(&example), "{kind:?} missing:\n{message}");
            assert!(
                message.contains(&format!("mode={}", kind.mode()))
                    || kind != *cutover::config::Kind::ALL.last().unwrap()
            );
        }
        // Each example is a valid config: parse it and run it.
        let first = message.split("\n\n").nth(1).unwrap();
        let doc: String = first.lines().map(|l| format!("{}\n", &l[2..])).collect();
        let run = run_fn(resource_list(&[CM], Some(&doc)).as_bytes());
        assert!(
            !run.results().iter().any(|r| r["tags"]["check"] == "config"),
            "the example config is rejected: {doc}\n{:?}",
            run.results()
        );
    }
}

/// Results about the config carry `check: config`, and `mode` once the config names one.
#[test]
fn config_results_are_tagged() {
    let r = assert_config_error(None, "functionConfig");
    assert_eq!(r["tags"]["check"], "config");
    assert!(r["tags"]["mode"].is_null());
    let typed = "apiVersion: fn.cutover.dev/v1alpha1\nkind: MetalLBImagePrepull\nmetadata: {name: c}\nspec:\n  waitTimeout: soon\n";
    let r = assert_config_error(Some(typed), "spec.waitTimeout");
    assert_eq!(r["tags"]["check"], "config");
    assert_eq!(r["tags"]["mode"], "metallb-image-prepull");
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {mode: load-balancer-announcer, colour: blue}\n";
    let r = assert_config_error(Some(cm), "data.colour");
    assert_eq!(r["tags"]["check"], "config");
    assert_eq!(r["tags"]["mode"], "load-balancer-announcer");
}

/// A function config that runs a mode without changing anything (the announcer's plan).
const PLAN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {mode: load-balancer-announcer, announcer: metallb}\n";

/// Runs the plan on `input`: exit 0, and the output items equal the input's.
fn assert_plan_keeps_items(input: &str) -> String {
    let run = run_fn(input.as_bytes());
    assert_eq!(run.code, 0, "{}\n{input}", run.stderr);
    let out = run.stdout_str().to_owned();
    let items = |text: &str| -> Value {
        let v: Value = serde_yaml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        v["items"].clone()
    };
    assert_eq!(
        items(&out),
        items(input.trim_start_matches('\u{feff}')),
        "{out}"
    );
    out
}

/// kpt 1.0.0-beta.56 hands a PyYAML-written multi-line single-quoted value over with its closing
/// quote at column 0 (captured with an exec function that tees stdin); as the last item before
/// `functionConfig:` it used to lose that line, and kpt then failed on the output.
#[test]
fn a_quoted_scalar_closing_at_column_0_is_copied_whole() {
    let captured = std::fs::read_to_string(
        common::root().join("tests/fixtures/kpt-serialized/quoted-scalar-at-column-0.yaml"),
    )
    .unwrap();
    let input = captured.replace(
        "  data: {foo: bar}\n",
        "  data: {mode: load-balancer-announcer, announcer: metallb}\n",
    );
    assert_ne!(input, captured);
    let out = assert_plan_keeps_items(&input);
    let item = &captured
        [captured.find("- apiVersion: v1").unwrap()..captured.find("functionConfig:").unwrap()];
    assert!(
        out.contains(item),
        "the item is not copied byte for byte:\n{out}"
    );
}

/// An under-indented multi-line string whose lines look like `items:` and `- kind: …` entries,
/// before the real list and inside an item: the output holds the real items, never a fake one
/// and never a string cut open.
#[test]
fn look_alike_lines_inside_strings_do_not_become_items() {
    let fc: String = PLAN.lines().map(|l| format!("  {l}\n")).collect();
    let before = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nnote: \"x\nitems:\n- apiVersion: v1\n  kind: Fake\n  metadata: {{name: fake}}\n\"\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: real}}\nfunctionConfig:\n{fc}"
    );
    let out = assert_plan_keeps_items(&before);
    assert!(!out.contains("kind: Fake"), "{out}");
    let inside = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: real}}\n  data:\n    x: \"\nitems:\n- apiVersion: v1\n  kind: Fake\n  metadata: {{name: fake}}\n\"\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: second}}\nfunctionConfig:\n{fc}"
    );
    let out = assert_plan_keeps_items(&inside);
    let v: Value = serde_yaml::from_str(&out).unwrap();
    assert_eq!(v["items"].as_sequence().unwrap().len(), 2);
    // Folded by YAML's rules for quoted scalars: one string holding the look-alike lines.
    assert_eq!(
        v["items"][0]["data"]["x"],
        " items: - apiVersion: v1 kind: Fake metadata: {name: fake} "
    );
    assert_eq!(v["items"][1]["metadata"]["name"], "second");
}

/// Aliases in every form the old text scan missed (`*-name`, after a tab, first in a flow
/// mapping): the output never holds an alias whose anchor it lost.
#[test]
fn aliases_in_every_form_read_back() {
    for alias in ["*-a", "\t*-a", "{*-a : x}", "[*-a]"] {
        let input = resource_list(
            &[
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  k: &-a v\n",
                &format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b}}\nbinaryData:\n  k: {alias}\n"
                ),
            ],
            Some(PLAN),
        );
        assert_plan_keeps_items(&input);
    }
}

#[test]
fn byte_order_marks_and_flow_documents_are_accepted() {
    let yaml = format!("\u{feff}{}", resource_list(&[CM], Some(PLAN)));
    assert_plan_keeps_items(&yaml);
    let json = format!(
        "\u{feff}{}",
        serde_json::to_string(
            &serde_yaml::from_str::<serde_json::Value>(&resource_list(&[CM], Some(PLAN))).unwrap()
        )
        .unwrap()
    );
    let run = run_fn(json.as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let flow = "{apiVersion: config.kubernetes.io/v1, kind: ResourceList, items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: !!null ''}}], functionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: function-input}, data: {mode: load-balancer-announcer, announcer: metallb}}}";
    let run = run_fn(flow.as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.resource_list()["items"][0]["data"]["k"], Value::Null);
}

/// kpt refuses items without `apiVersion`, `kind` or `metadata.name`; cutover reports each
/// (index, missing field, file), runs no mode, and echoes the items.
#[test]
fn items_that_are_not_krm_resources_are_error_results() {
    let nameless = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    config.kubernetes.io/path: cm.yaml\ndata: {a: b}\n";
    let input = resource_list(
        &[CM, nameless, "kind: Kustomization\nresources: [a.yaml]\n"],
        Some(PLAN),
    );
    let run = run_fn(input.as_bytes());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let inp: Value = serde_yaml::from_str(&input).unwrap();
    assert_eq!(run.resource_list()["items"], inp["items"]);
    let results = run.results();
    assert_eq!(results.len(), 1, "{results:?}");
    let r = &results[0];
    assert_eq!(r["severity"], "error");
    assert_eq!(r["file"]["path"], "cm.yaml");
    assert_eq!(r["tags"]["check"], "krm-item");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("items[1]") && message.contains("metadata.name"),
        "{message}"
    );
    assert!(run.stderr.contains("items[1]"), "{}", run.stderr);
}

/// An integer beyond 64 bits is never turned into a float: exit 1, nothing on stdout, the
/// item's index and path named, for YAML and JSON alike, in items the run only passes through.
#[test]
fn integers_beyond_64_bits_are_rejected_with_their_path() {
    let item = "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec:\n  size: 18446744073709551616\n";
    let yaml = resource_list(&[CM, item], Some(PLAN));
    assert_rejected_input(yaml.as_bytes(), "items[1].spec.size");
    let json = yaml_to_json_text(&yaml.replace("18446744073709551616", "1"))
        .replace("\"size\":1", "\"size\":18446744073709551616");
    assert_rejected_input(json.as_bytes(), "items[1].spec.size");
}

fn yaml_to_json_text(yaml: &str) -> String {
    serde_json::to_string(&serde_yaml::from_str::<serde_json::Value>(yaml).unwrap()).unwrap()
}

/// The alias budget grows with the input by a quarter node per byte: padding a bomb with a long
/// list does not buy it gigabytes.
#[test]
fn padded_alias_bombs_are_rejected() {
    let mut bomb = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\npad: [{}]\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
        "1, ".repeat(200_000)
    );
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [{}]\n",
            vec![format!("*a{p}"); 10].join(", ")
        ));
    }
    bomb.push_str(
        "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n  data: *a9\n",
    );
    assert!(bomb.len() > 600_000);
    assert_rejected_input(bomb.as_bytes(), "repetition limit");
}

/// Thousands of flow lists nested past the limit end at the first one (the parser's cost grows
/// with the nesting depth, so it is never scanned deeper than the limit).
#[test]
fn deep_flow_lists_end_at_the_first() {
    let deep = format!("{}1{}", "[".repeat(999), "]".repeat(999));
    let data: String = (0..3000).map(|i| format!("  k{i}: {deep}\n")).collect();
    let item = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep}}\ndata:\n{data}");
    let input = resource_list(&[&item], Some(PLAN));
    assert_rejected_input(input.as_bytes(), "items[0].data.k0");
}

/// A result as its stderr line: `cutover: [severity] apiVersion/Kind ns/name field: message`.
fn stderr_line(r: &Value) -> String {
    let mut line = format!("cutover: [{}]", r["severity"].as_str().unwrap());
    let rr = &r["resourceRef"];
    if let Some(kind) = rr["kind"].as_str() {
        line.push_str(&format!(" {}/{kind} ", rr["apiVersion"].as_str().unwrap()));
        if let Some(ns) = rr["namespace"].as_str() {
            line.push_str(&format!("{ns}/"));
        }
        line.push_str(rr["name"].as_str().unwrap());
    }
    if let Some(path) = r["field"]["path"].as_str() {
        line.push_str(&format!(" {path}"));
    }
    format!("{line}: {}", r["message"].as_str().unwrap())
}

/// The input of an example with a warning of each mode, by mode. The prepull examples have no
/// warning: `bgpSessionCheck` on the Sylva path (ignored there) is one.
fn warning_examples() -> Vec<(&'static str, Value)> {
    let prepull = common::with_spec(
        common::example_source("prepull-upgrade-native-bgp"),
        "bgpSessionCheck",
        common::yaml("{timeout: 5m}"),
    );
    vec![
        ("metallb-image-prepull", prepull),
        ("load-balancer-announcer", etp_local_accepted()),
        (
            "capm3-os-image-sources",
            common::example_source("capm3-workload-healthy"),
        ),
    ]
}

/// kustomize shows no results: every warning of every mode is also a line on stderr, in the
/// errors' format, once.
#[test]
fn warnings_of_every_mode_go_to_stderr_once() {
    for (mode, list) in warning_examples() {
        let run = common::run_list(&list);
        assert_eq!(run.code, 0, "{mode}: {}", run.stderr);
        let warnings: Vec<String> = run
            .results()
            .iter()
            .filter(|r| r["severity"] == "warning")
            .map(stderr_line)
            .collect();
        assert!(!warnings.is_empty(), "{mode}: no warning");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines, warnings, "{mode}");
    }
    // The format, literally.
    let run = common::run_list(&etp_local_accepted());
    assert!(
        run.stderr.starts_with(
            "cutover: [warning] v1/Service ingress/ingress spec.externalTrafficPolicy: externalTrafficPolicy: Local: "
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.lines().any(|l| l.starts_with(
            "cutover: [warning]: no Cilium HelmRelease, cozystack Package or HelmChart among the items: "
        )),
        "{}",
        run.stderr
    );
}

/// Plan mode writes its summaries to stderr beside the warnings, and each warning once.
#[test]
fn plan_mode_writes_each_warning_once() {
    let run = common::run_list(&common::example_source("announcer-metallb-plan"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = run.results();
    let warnings: Vec<String> = results
        .iter()
        .filter(|r| r["severity"] == "warning")
        .map(stderr_line)
        .collect();
    let summaries: Vec<String> = results
        .iter()
        .filter(|r| r["severity"] == "info" && r["resourceRef"].is_null())
        .map(stderr_line)
        .collect();
    assert!(!warnings.is_empty() && !summaries.is_empty());
    let lines: Vec<String> = run.stderr.lines().map(str::to_owned).collect();
    assert_eq!(lines, [warnings, summaries].concat(), "{}", run.stderr);
}

/// `failOnWarnings: true`: the same findings, every warning an error tagged
/// `promotedFrom: warning`, exit 1, the items as they came in, a ResourceList on stdout.
#[test]
fn fail_on_warnings_makes_every_warning_an_error() {
    for (mode, list) in warning_examples() {
        let plain = common::run_list(&list);
        assert_eq!(plain.code, 0, "{mode}: {}", plain.stderr);
        let warned: Vec<Value> = plain
            .results()
            .into_iter()
            .filter(|r| r["severity"] == "warning")
            .collect();
        let strict = common::run_list(&common::with_spec(
            list.clone(),
            "failOnWarnings",
            Value::Bool(true),
        ));
        assert_eq!(strict.code, 1, "{mode}: {}", strict.stderr);
        let out = strict.resource_list();
        assert_eq!(out["kind"], "ResourceList", "{mode}");
        assert_eq!(out["items"], list["items"], "{mode}: an item changed");
        let results = strict.results();
        assert!(
            !results.iter().any(|r| r["severity"] == "warning"),
            "{mode}"
        );
        let promoted: Vec<&Value> = results
            .iter()
            .filter(|r| r["tags"]["promotedFrom"] == "warning")
            .collect();
        assert_eq!(promoted.len(), warned.len(), "{mode}");
        for (p, w) in promoted.iter().zip(&warned) {
            assert_eq!(p["severity"], "error", "{mode}");
            assert_eq!(p["message"], w["message"], "{mode}");
            assert_eq!(p["tags"]["check"], w["tags"]["check"], "{mode}");
            let line = format!(
                "{} (a warning; failOnWarnings makes it an error)",
                stderr_line(p)
            );
            assert_eq!(strict.stderr.matches(&line).count(), 1, "{mode}: {line}");
        }
        assert!(!strict.stderr.contains("[warning]"), "{mode}");
        // Explicitly false is the default.
        let off = common::run_list(&common::with_spec(
            list.clone(),
            "failOnWarnings",
            Value::Bool(false),
        ));
        assert_eq!(off.code, plain.code, "{mode}");
        assert_eq!(off.results(), plain.results(), "{mode}");
        assert_eq!(
            off.resource_list()["items"],
            plain.resource_list()["items"],
            "{mode}"
        );
    }
}

/// The ConfigMap form (`kpt fn eval -- failOnWarnings=true`) reads the key as the boolean it is.
#[test]
fn fail_on_warnings_in_the_configmap_form() {
    let mut list = etp_local_accepted();
    let typed = list["functionConfig"]["spec"].clone();
    let mut data = serde_yaml::Mapping::new();
    data.insert("mode".into(), "load-balancer-announcer".into());
    for (k, v) in typed.as_mapping().unwrap() {
        let v = match v {
            Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other).unwrap().trim_end().to_owned(),
        };
        data.insert(k.clone(), v.into());
    }
    data.insert("failOnWarnings".into(), "true".into());
    list["functionConfig"] =
        common::yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\n");
    list["functionConfig"]["data"] = Value::Mapping(data);
    let run = common::run_list(&list);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let results = run.results();
    assert!(
        results
            .iter()
            .any(|r| r["tags"]["promotedFrom"] == "warning")
    );
    assert!(!results.iter().any(|r| r["severity"] == "warning"));
}

/// Plan mode (`announcer: metallb`) never fails on its warnings: it runs while the platform stays
/// on MetalLB. It says that `failOnWarnings` did not apply, on stderr too.
#[test]
fn fail_on_warnings_does_not_fail_a_plan() {
    let list = common::example_source("announcer-metallb-plan");
    let plain = common::run_list(&list);
    let strict = common::run_list(&common::with_spec(
        list.clone(),
        "failOnWarnings",
        Value::Bool(true),
    ));
    assert_eq!(strict.code, 0, "{}", strict.stderr);
    let severities = |run: &common::Run| -> Vec<Value> {
        run.results()
            .iter()
            .map(|r| r["severity"].clone())
            .collect()
    };
    let mut expected = severities(&plain);
    expected.push("info".into());
    assert_eq!(severities(&strict), expected);
    let note = "plan: failOnWarnings does not apply to a plan";
    assert!(
        strict.results().last().unwrap()["message"]
            .as_str()
            .unwrap()
            .starts_with(note)
    );
    assert_eq!(strict.stderr.matches(note).count(), 1, "{}", strict.stderr);
    assert!(
        strict.stderr.starts_with(&plain.stderr),
        "{}",
        strict.stderr
    );
}

/// `announcer-etp-local` with its `externalTrafficPolicy: Local` Service accepted: the change of
/// announcing nodes is then a warning, not an error.
fn etp_local_accepted() -> Value {
    let mut list = common::example_source("announcer-etp-local");
    list["functionConfig"]["spec"]
        .as_mapping_mut()
        .unwrap()
        .insert("acceptLocalTrafficPolicyChange".into(), Value::Bool(true));
    list
}

/// An item that cannot be copied (its alias names another item's anchor) is written from its
/// tree with its scalars as the input spelled them, the aliased one included: go-yaml reads the
/// same types in the output (`0644` stays the integer 420, not the string `"0644"`).
#[test]
fn an_item_written_from_its_tree_keeps_its_spellings() {
    let input = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n  data:\n    mode: &m 0644\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: b\n  data:\n    mode: *m\n    size: 1_048_576\n    blob: !!binary aGVsbG8=\n    eq: \"=\"\nfunctionConfig:\n{}",
        PLAN.lines().map(|l| format!("  {l}\n")).collect::<String>()
    );
    let run = run_fn(input.as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.stdout_str();
    let b = &out[out.find("name: b").expect("item b")..];
    for kept in [
        "mode: 0644\n",
        "size: 1_048_576\n",
        "blob: !!binary aGVsbG8=\n",
        "eq: \"=\"\n",
    ] {
        assert!(b.contains(kept), "{kept:?} not kept:\n{out}");
    }
}

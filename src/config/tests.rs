use serde_yaml::Value;

use super::*;
use crate::modes::announcer::Announcer;
use crate::modes::prepull::{OnTimeout, UpgradeMode};

fn fc(src: &str) -> Value {
    serde_yaml::from_str(src).unwrap()
}

fn err_path(src: &str) -> String {
    let v = fc(src);
    let e = parse(Some(&v)).unwrap_err();
    assert!(e.is_error());
    assert!(
        e.resource_ref.is_some(),
        "field errors must name the resource: {e:?}"
    );
    e.field.expect("field").path
}

#[test]
fn typed_prepull_with_defaults() {
    let cfg = parse(Some(&fc(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: MetalLBImagePrepull\nmetadata: {name: x}\n",
    )))
    .unwrap();
    let FunctionConfig::MetalLBImagePrepull(spec) = cfg else {
        panic!()
    };
    assert_eq!(spec.kustomization, "metallb");
    assert_eq!(spec.wait_timeout.as_millis(), 600_000);
    assert_eq!(spec.upgrade, UpgradeMode::Auto);
}

#[test]
fn typed_fields_are_decoded() {
    let cfg = parse(Some(&fc(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: MetalLBImagePrepull\nspec:\n  upgrade: true\n  waitTimeout: 90s\n  onTimeout: fail\n  images: [a:1]\n",
    )))
    .unwrap();
    let FunctionConfig::MetalLBImagePrepull(spec) = cfg else {
        panic!()
    };
    assert_eq!(spec.upgrade, UpgradeMode::True);
    assert_eq!(spec.on_timeout, OnTimeout::Fail);
    let images: Vec<String> = spec.images.unwrap().iter().map(|i| i.to_string()).collect();
    assert_eq!(images, vec!["a:1".to_string()]);
}

#[test]
fn typed_announcer() {
    let cfg = parse(Some(&fc(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nspec: {announcer: cilium}\n",
    )))
    .unwrap();
    let FunctionConfig::LoadBalancerAnnouncer(spec) = cfg else {
        panic!()
    };
    assert_eq!(spec.announcer, Some(Announcer::Cilium));
}

#[test]
fn errors_name_the_field() {
    let base = "apiVersion: fn.cutover.dev/v1alpha1\nkind: MetalLBImagePrepull\n";
    assert_eq!(
        err_path(&format!("{base}spec: {{waitTimeout: 10 minutes}}\n")),
        "spec.waitTimeout"
    );
    assert_eq!(
        err_path(&format!("{base}spec: {{bogus: 1}}\n")),
        "spec.bogus"
    );
    assert_eq!(
        err_path(&format!("{base}spec: {{images: [ok:1, 3]}}\n")),
        "spec.images[1]"
    );
    assert_eq!(
        err_path(&format!("{base}spec: {{onTimeout: maybe}}\n")),
        "spec.onTimeout"
    );
    assert_eq!(
        err_path(&format!(
            "{base}spec: {{source: {{sourceRef: {{kind: GitRepository}}}}}}\n"
        )),
        "spec.source.sourceRef"
    );
    assert_eq!(err_path(&format!("{base}spec: [1]\n")), "spec");
    assert_eq!(err_path(&format!("{base}extra: 1\n")), "extra");
    assert_eq!(
        err_path("apiVersion: fn.cutover.dev/v1alpha1\nkind: Nope\n"),
        "kind"
    );
    assert_eq!(
        err_path("apiVersion: fn.cutover.dev/v2\nkind: MetalLBImagePrepull\n"),
        "apiVersion"
    );
    assert_eq!(
        err_path("apiVersion: other.io/v1\nkind: Thing\n"),
        "apiVersion"
    );
    let announcer = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\n";
    assert_eq!(
        err_path(&format!("{announcer}spec: {{announcer: bgp}}\n")),
        "spec.announcer"
    );
}

#[test]
fn missing_config_is_an_error() {
    let e = parse(None).unwrap_err();
    assert_eq!(e.field.unwrap().path, "functionConfig");
}

#[test]
fn configmap_form_maps_data_onto_spec() {
    let cfg = parse(Some(&fc(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata:\n  mode: metallb-image-prepull\n  namespace: '0123'\n  upgrade: 'true'\n  images: '[quay.io/a/b:1, c:2]'\n  runAsUser: '1000'\n  source.sourceRef.kind: GitRepository\n  source.sourceRef.name: sylva-core\n  source.path: ./a/b\n  output: sylva-values\n  payloadDir: x\n",
    )))
    .unwrap();
    let FunctionConfig::MetalLBImagePrepull(spec) = cfg else {
        panic!()
    };
    assert_eq!(spec.namespace, "0123");
    assert_eq!(spec.upgrade, UpgradeMode::True);
    assert_eq!(spec.run_as_user, 1000);
    assert_eq!(spec.images.unwrap().len(), 2);
    let source = spec.source.unwrap();
    assert_eq!(source.source_ref.unwrap().name, "sylva-core");
    assert_eq!(source.path.as_deref(), Some("./a/b"));
    assert_eq!(spec.output, crate::modes::prepull::Output::SylvaValues);
    assert_eq!(spec.payload_dir, "x");

    let cfg = parse(Some(&fc(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {mode: LoadBalancerAnnouncer, announcer: cilium, ciliumVersion: '1.18'}\n",
    )))
    .unwrap();
    let FunctionConfig::LoadBalancerAnnouncer(spec) = cfg else {
        panic!()
    };
    assert_eq!(spec.cilium_version.as_deref(), Some("1.18"));
}

#[test]
fn configmap_errors_name_the_data_key() {
    let base = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\n";
    assert_eq!(err_path(&format!("{base}data: {{}}\n")), "data.mode");
    assert_eq!(err_path(base), "data.mode");
    assert_eq!(
        err_path(&format!("{base}data: {{mode: nope}}\n")),
        "data.mode"
    );
    assert_eq!(
        err_path(&format!(
            "{base}data: {{mode: metallb-image-prepull, waitTimeout: soon}}\n"
        )),
        "data.waitTimeout"
    );
    assert_eq!(
        err_path(&format!(
            "{base}data: {{mode: metallb-image-prepull, waitTimout: 5m}}\n"
        )),
        "data.waitTimout"
    );
    assert_eq!(
        err_path(&format!(
            "{base}data: {{mode: metallb-image-prepull, runAsUser: many}}\n"
        )),
        "data.runAsUser"
    );
    assert_eq!(
        err_path(&format!(
            "{base}data: {{mode: metallb-image-prepull, source.sourceRef.kind: GitRepository, source.sourceRef.nme: x}}\n"
        )),
        "data.source.sourceRef.nme"
    );
    assert_eq!(
        err_path(&format!(
            "{base}data: {{mode: metallb-image-prepull, source.path: a, source.path.x: b}}\n"
        )),
        "data.source.path.x"
    );
    assert_eq!(err_path(&format!("{base}data: [1]\n")), "data");
}

#[test]
fn capm3_typed_and_configmap_forms() {
    let cfg = parse(Some(&fc(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: Capm3OSImageSources\nmetadata: {name: x}\n",
    )))
    .unwrap();
    let FunctionConfig::Capm3OSImageSources(spec) = cfg else {
        panic!()
    };
    assert_eq!(
        spec,
        crate::modes::capm3::Capm3OSImageSourcesSpec::default()
    );
    assert_eq!(spec.served_images, "kyverno-cloned-os-image-server-images");
    let cfg = parse(Some(&fc(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {mode: capm3-os-image-sources, fix: 'true', cluster.name: cluster, cluster.namespace: '0123', serverOutput.namespace: mgmt}\n",
    )))
    .unwrap();
    let FunctionConfig::Capm3OSImageSources(spec) = cfg else {
        panic!()
    };
    assert!(spec.fix);
    assert_eq!(spec.cluster.unwrap().namespace.as_deref(), Some("0123"));
    assert_eq!(spec.server_output.namespace, "mgmt");
    assert_eq!(spec.server_output.name, "capm3-os-image-server-os-images");
    assert_eq!(
        err_path(
            "apiVersion: fn.cutover.dev/v1alpha1\nkind: Capm3OSImageSources\nspec: {context: mgmt}\n"
        ),
        "spec.context"
    );
    assert_eq!(
        err_path(
            "apiVersion: v1\nkind: ConfigMap\ndata: {mode: capm3-os-image-sources, fix: maybe}\n"
        ),
        "data.fix"
    );
}

/// A ConfigMap data value for a field that is not a string is YAML text. It is read with the
/// engine's reader, as every embedded document is; its plain scalars keep the meaning serde_yaml
/// gives them (the reader's rule), so the typed form and the ConfigMap form agree.
#[test]
fn configmap_yaml_values_read_scalars_as_serde_yaml_does() {
    let values_of = |text: &str| -> Value {
        let cm = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: function-input}}\ndata:\n  mode: metallb-image-prepull\n  values: {}\n",
            serde_json::to_string(text).unwrap()
        );
        let FunctionConfig::MetalLBImagePrepull(spec) = parse(Some(&fc(&cm))).unwrap() else {
            panic!()
        };
        spec.values.unwrap_or(Value::Null)
    };
    // The scalars YAML 1.1 readers take for numbers, booleans or null, and a few neighbours.
    for text in [
        "0123",
        "on",
        "1e3",
        "~",
        "yes",
        "off",
        "0x1F",
        "0o17",
        "-0",
        "+12",
        ".inf",
        "-.Inf",
        ".nan",
        "1_000",
        "12:30",
        "2024-01-01",
        "true",
        "False",
        "null",
        "NULL",
        "",
        "'0123'",
        "a b",
        "18446744073709551615",
        "-9223372036854775808",
    ] {
        let before: Value =
            serde_yaml::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
        let after = values_of(text);
        if before.as_f64().is_some_and(f64::is_nan) {
            assert!(
                after.as_f64().is_some_and(f64::is_nan),
                "{text:?}: {after:?}"
            );
        } else {
            assert_eq!(after, before, "{text:?}");
        }
    }
    assert_eq!(values_of("0123"), Value::from("0123"));
    assert_eq!(values_of("on"), Value::from("on"));
    assert_eq!(values_of("1e3"), Value::from(1000.0));
    assert_eq!(values_of("~"), Value::Null);
    // Inside a values document too.
    assert_eq!(
        values_of("{a: 0123, b: on, c: 1e3, d: ~}"),
        fc("{a: '0123', b: 'on', c: 1000.0, d: null}")
    );
    // The one difference: an integer of more than 128 bits, which serde_yaml reads as a float
    // (digits lost; from 65 to 128 bits it fails, so the text stays text either way), is refused
    // by the reader as it is in the typed form, so the text stays text: a number field rejects it
    // by its key.
    let huge = "1234567890123456789012345678901234567890";
    assert!(serde_yaml::from_str::<Value>(huge).unwrap().is_f64());
    assert_eq!(values_of(huge), Value::from(huge));
    assert_eq!(
        err_path(&format!(
            "apiVersion: v1\nkind: ConfigMap\ndata: {{mode: metallb-image-prepull, runAsUser: '{huge}'}}\n"
        )),
        "data.runAsUser"
    );
}

/// `failOnWarnings` is a field of every kind, `false` by default, a boolean in both forms: the
/// ConfigMap form's `"true"` is read as the other boolean keys are, anything else is an error
/// naming the key.
#[test]
fn fail_on_warnings_in_every_kind_and_form() {
    fn fail_on_warnings(cfg: FunctionConfig) -> bool {
        match cfg {
            FunctionConfig::MetalLBImagePrepull(spec) => spec.fail_on_warnings,
            FunctionConfig::LoadBalancerAnnouncer(spec) => spec.fail_on_warnings,
            FunctionConfig::Capm3OSImageSources(spec) => spec.fail_on_warnings,
        }
    }
    for kind in Kind::ALL {
        let typed = |spec: &str| {
            fc(&format!(
                "apiVersion: fn.cutover.dev/v1alpha1\nkind: {}\nmetadata: {{name: x}}\n{spec}",
                kind.name()
            ))
        };
        let configmap = |data: &str| {
            fc(&format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: function-input}}\ndata: {{mode: {}{data}}}\n",
                kind.mode()
            ))
        };
        let name = kind.name();
        assert!(
            !fail_on_warnings(parse(Some(&typed(""))).unwrap()),
            "{name}"
        );
        assert!(
            !fail_on_warnings(parse(Some(&configmap(""))).unwrap()),
            "{name}"
        );
        assert!(
            fail_on_warnings(parse(Some(&typed("spec: {failOnWarnings: true}\n"))).unwrap()),
            "{name}"
        );
        assert!(
            !fail_on_warnings(parse(Some(&typed("spec: {failOnWarnings: false}\n"))).unwrap()),
            "{name}"
        );
        assert!(
            fail_on_warnings(parse(Some(&configmap(", failOnWarnings: 'true'"))).unwrap()),
            "{name}"
        );
        assert!(
            !fail_on_warnings(parse(Some(&configmap(", failOnWarnings: 'false'"))).unwrap()),
            "{name}"
        );
        let e = parse(Some(&typed("spec: {failOnWarnings: 'true'}\n"))).unwrap_err();
        assert_eq!(e.field.unwrap().path, "spec.failOnWarnings", "{name}");
        let e = parse(Some(&configmap(", failOnWarnings: maybe"))).unwrap_err();
        assert_eq!(e.field.unwrap().path, "data.failOnWarnings", "{name}");
        // The schema says what the field is: a boolean, false by default, documented.
        let schema = schema::spec_schema(kind);
        let field = &schema["properties"]["failOnWarnings"];
        assert_eq!(field["type"], "boolean", "{name}: {field}");
        assert_eq!(field["default"], false, "{name}: {field}");
        assert!(
            field["description"]
                .as_str()
                .is_some_and(|d| d.contains("promotedFrom: warning")),
            "{name}: {field}"
        );
        let last = schema["properties"].as_object().unwrap().keys().next_back();
        assert_eq!(last.map(String::as_str), Some("failOnWarnings"), "{name}");
    }
}

//! The `output: sylva-values` form: the unit it writes into the sylva-units values is one
//! sylva-units' own schema accepts; it goes back where the values were read (a ConfigMap, a
//! Secret's base64 `data` or its `stringData`), edited line by line, and comes out again when
//! the gate closes; values it cannot write back are refused; switching between the output forms
//! leaves no dangling dependency.

use super::*;

/// `units.metallb.depends_on.metallb-image-prepull`: true only when the unit is enabled (the form
/// sylva-core uses for a dependency on a unit that may be off, e.g. metallb on monitoring-crd).
const DEPENDS_ON: &str = "{{ tuple . \"metallb-image-prepull\" | include \"unit-enabled\" }}";

/// The `values` text of the sylva-units-values ConfigMap, parsed.
fn configmap_values(list: &Value) -> Value {
    yaml(
        find(list, "ConfigMap", "sylva-units-values")["data"]["values"]
            .as_str()
            .unwrap(),
    )
}

#[test]
fn the_sylva_values_unit_is_one_sylva_units_accepts() {
    let out = ok(&source("prepull-sylva-values"));
    let values = configmap_values(&out);
    let unit = &values["units"]["metallb-image-prepull"];
    let (schema, defs) = json_schema::sylva_unit_schema();
    let instance = serde_json::to_value(unit).unwrap();
    json_schema::validate(&schema, &defs, &instance).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(unit["repo"], "platform-config");
    // Enabled exactly when sylva-units enables metallb, and only on an upgrade.
    assert_eq!(
        unit["enabled_conditions"],
        yaml(
            r#"['{{ tuple . "metallb" | include "unit-enabled" }}', '{{ .Values._internal.state.is_upgrade }}']"#
        )
    );
    assert_eq!(
        unit["kustomization_spec"]["path"],
        "./environment-values/mgmt/metallb-image-prepull"
    );
    assert_eq!(unit["kustomization_spec"]["wait"], false);
    let job = job(&out)["metadata"]["name"].clone();
    assert_eq!(unit["kustomization_spec"]["healthChecks"][0]["name"], job);
    assert_eq!(
        values["units"]["metallb"]["depends_on"]["metallb-image-prepull"],
        DEPENDS_ON
    );
    // The repo names a source_templates entry of the values (sylva-units makes the sourceRef).
    assert_eq!(
        values["source_templates"]["platform-config"]["kind"],
        "GitRepository"
    );
    // The rest of the document is untouched.
    let input = configmap_values(&source("prepull-sylva-values"));
    assert_eq!(values["metallb"], input["metallb"]);
    assert_eq!(values["units"]["monitoring"], input["units"]["monitoring"]);
    assert_eq!(items(&ok(&out)), items(&out), "idempotent");
    // Line edits: the operator's comments survive, and closing the gate gives the text back.
    let text = |l: &Value| {
        find(l, "ConfigMap", "sylva-units-values")["data"]["values"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(
        text(&out).contains("# the ToR pair of rack 1\n"),
        "{}",
        text(&out)
    );
    let closed = ok(&with_spec(out, "upgrade", false.into()));
    assert_eq!(text(&closed), text(&source("prepull-sylva-values")));
}

fn base64(text: &str) -> Value {
    serde_yaml::to_value(k8s_openapi::ByteString(text.as_bytes().to_vec())).unwrap()
}

fn unbase64(v: &Value) -> Value {
    let bytes: k8s_openapi::ByteString = serde_yaml::from_value(v.clone()).unwrap();
    yaml(std::str::from_utf8(&bytes.0).unwrap())
}

/// The `prepull-sylva-values` example with its values text (returned too) also in Secret
/// `sylva-units-secrets`, key `secrets`, which `valuesFrom` names: under `data` as base64 (as
/// kustomize's secretGenerator writes it) or under `stringData` as the text itself.
fn values_in_secret(section: &str) -> (Value, String) {
    let mut list = source("prepull-sylva-values");
    let text = find(&list, "ConfigMap", "sylva-units-values")["data"]["values"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut secret = yaml(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sylva-units-secrets\n  namespace: sylva-system\n  annotations:\n    config.kubernetes.io/path: environment-values/sylva-units-secrets.yaml\n    internal.config.kubernetes.io/path: environment-values/sylva-units-secrets.yaml\ntype: Opaque\n",
    );
    let value = match section {
        "data" => base64(&text),
        _ => text.clone().into(),
    };
    set(&mut secret, &[section, "secrets"], value);
    list["items"].as_sequence_mut().unwrap().push(secret);
    let list = with_spec(
        list,
        "valuesFrom",
        yaml("{kind: Secret, name: sylva-units-secrets, key: secrets}"),
    );
    (list, text)
}

#[test]
fn sylva_values_in_a_secret_go_back_as_base64_and_come_out_again() {
    let (list, text) = values_in_secret("data");
    let out = ok(&list);
    let secret = find(&out, "Secret", "sylva-units-secrets");
    assert!(secret.get("stringData").is_none());
    let values = unbase64(&secret["data"]["secrets"]);
    assert_eq!(
        values["units"]["metallb"]["depends_on"]["metallb-image-prepull"],
        DEPENDS_ON
    );
    assert!(values["units"]["metallb-image-prepull"].is_mapping());
    // The ConfigMap that was not the source is left alone.
    assert_eq!(
        find(&out, "ConfigMap", "sylva-units-values"),
        find(&list, "ConfigMap", "sylva-units-values")
    );
    assert_eq!(items(&ok(&out)), items(&out), "idempotent");
    // Gate closed: exactly the original tree again, and the payload gone.
    let closed = ok(&with_spec(out, "upgrade", false.into()));
    let back = &find(&closed, "Secret", "sylva-units-secrets")["data"]["secrets"];
    assert_eq!(unbase64(back), yaml(&text));
    assert_eq!(back, &base64(&text), "the very same text, re-encoded");
    assert!(generated(&closed).is_empty());
}

#[test]
fn sylva_values_in_secret_string_data_go_back_as_text_and_come_out_again() {
    // The values as an operator writes them by hand: plain text in stringData, comments included.
    let (list, text) = values_in_secret("stringData");
    assert!(text.contains("# the ToR pair of rack 1\n"));
    let string_data = |l: &Value| {
        find(l, "Secret", "sylva-units-secrets")["stringData"]["secrets"]
            .as_str()
            .unwrap_or_else(|| panic!("no stringData.secrets"))
            .to_owned()
    };
    let out = ok(&list);
    let secret = find(&out, "Secret", "sylva-units-secrets");
    assert!(
        secret.get("data").is_none(),
        "written back where it was read"
    );
    let written = string_data(&out);
    let values = yaml(&written);
    assert_eq!(
        values["units"]["metallb"]["depends_on"]["metallb-image-prepull"],
        DEPENDS_ON
    );
    assert!(values["units"]["metallb-image-prepull"].is_mapping());
    // Edited line by line: the comments stay, and every line of the input is still there.
    assert!(written.contains("# the ToR pair of rack 1\n"), "{written}");
    assert!(
        text.lines().all(|l| written.lines().any(|w| w == l)),
        "{written}"
    );
    assert_eq!(
        find(&out, "ConfigMap", "sylva-units-values"),
        find(&list, "ConfigMap", "sylva-units-values"),
        "the ConfigMap that was not the source is left alone"
    );
    assert_eq!(generated(&out).len(), 6, "the payload");
    assert_eq!(items(&ok(&out)), items(&out), "idempotent");
    // Gate closed: the very same text, byte for byte, and the payload gone.
    let closed = ok(&with_spec(out, "upgrade", false.into()));
    assert_eq!(string_data(&closed), text);
    assert!(
        find(&closed, "Secret", "sylva-units-secrets")
            .get("data")
            .is_none()
    );
    assert!(generated(&closed).is_empty());
    assert_eq!(
        items(&ok(&closed)),
        items(&closed),
        "idempotent when closed"
    );
}

#[test]
fn values_that_cannot_be_written_back_are_refused() {
    // sylva-units' own dump of its values (it rewrites it and never reads it).
    let list = with_spec(
        with_spec(
            source("prepull-upgrade-native-bgp"),
            "output",
            "sylva-values".into(),
        ),
        "source",
        yaml("{repo: platform-config, path: ./x}"),
    );
    let e = fails(&list, "data.values");
    assert_eq!(e["resourceRef"]["name"], "sylva-units-values");
    assert!(e["message"].as_str().unwrap().contains("own dump"));
    // Inline values have nowhere to go.
    let list = with_spec(source("prepull-l2-only"), "output", "sylva-values".into());
    fails(&list, "spec.output");
}

#[test]
fn switching_output_forms_moves_the_unit_without_leaving_a_dangling_dependency() {
    // Rendered first, with the values also present as the ConfigMap an operator deploys from.
    let mut list = source("prepull-upgrade-native-bgp");
    let mut values = unbase64(&find(&list, "Secret", "sylva-units-values")["data"]["values"]);
    // The repository the values form names must be one of its source_templates.
    values["source_templates"] = yaml(
        "{platform-config: {kind: GitRepository, spec: {url: https://git.example.net/p.git, ref: {branch: main}}}}",
    );
    let values_text = serde_yaml::to_string(&values).unwrap();
    let mut cm = yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sylva-units-values\n  namespace: sylva-system\n  annotations:\n    config.kubernetes.io/path: environment-values/values.yaml\n    internal.config.kubernetes.io/path: environment-values/values.yaml\ndata: {}\n",
    );
    cm["data"]["values"] = values_text.into();
    list["items"].as_sequence_mut().unwrap().push(cm);
    let rendered = ok(&list);
    assert!(
        find(&rendered, "Kustomization", "metallb")["spec"]["dependsOn"]
            .as_sequence()
            .unwrap()
            .contains(&yaml("{name: metallb-image-prepull}"))
    );
    // Now the values form.
    let switched = with_spec(
        with_spec(
            with_spec(rendered, "output", "sylva-values".into()),
            "source",
            yaml("{repo: platform-config, path: ./x/metallb-image-prepull}"),
        ),
        "valuesFrom",
        yaml("{kind: ConfigMap, name: sylva-units-values}"),
    );
    let out = ok(&switched);
    assert!(
        !items(&out)
            .iter()
            .any(|i| i["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1"
                && i["metadata"]["name"] == "metallb-image-prepull"),
        "the rendered unit goes: sylva-units renders it now"
    );
    assert_eq!(
        find(&out, "Kustomization", "metallb"),
        find(&list, "Kustomization", "metallb"),
        "metallb's rendered dependsOn entry goes with it"
    );
    assert!(configmap_values(&out)["units"]["metallb-image-prepull"].is_mapping());
    assert_eq!(generated(&out).len(), 6, "the payload stays");
    // And back: the values unit goes, the rendered one returns.
    let again = with_spec(
        with_spec(out, "output", "rendered".into()),
        "source",
        yaml(
            "{sourceRef: {kind: GitRepository, name: platform-config}, path: ./x/metallb-image-prepull}",
        ),
    );
    let back = ok(&again);
    assert!(
        configmap_values(&back)["units"]
            .get("metallb-image-prepull")
            .is_none()
    );
    assert_eq!(generated(&back).len(), 7);
}

/// The example's values with other CAPI providers (the lines `infra_provider`/`bootstrap_provider`
/// are at indentation 4 of the values text).
fn with_providers(list: Value, infra: &str, bootstrap: &str) -> Value {
    edit_item(list, "ConfigMap", "sylva-units-values", |cm| {
        let text: String = cm["data"]["values"]
            .as_str()
            .unwrap()
            .lines()
            .map(|l| match l.trim_start().split_once(": ") {
                Some(("infra_provider", _)) => format!("    infra_provider: {infra}\n"),
                Some(("bootstrap_provider", _)) => format!("    bootstrap_provider: {bootstrap}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        cm["data"]["values"] = text.into();
    })
}

#[test]
fn the_gate_follows_metallbs_enabled_conditions_as_sylva_units_evaluates_them() {
    // capo + kubeadm: the chart's condition (capd or cabpr) disables metallb, so no unit.
    let capo = with_providers(source("prepull-sylva-values"), "capo", "cabpk");
    let out = ok(&capo);
    assert_eq!(items(&out), items(&capo), "nothing written");
    let metallb = out["results"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|r| r["tags"]["check"] == "metallb")
        .unwrap();
    let message = metallb["message"].as_str().unwrap();
    assert!(message.contains("not met"), "{message}");
    assert!(
        message.contains("the chart's enabled_conditions[0] is false"),
        "{message}"
    );
    // capd + kubeadm enables it again.
    let capd = with_providers(source("prepull-sylva-values"), "capd", "cabpk");
    let opened = ok(&capd);
    assert!(configmap_values(&opened)["units"]["metallb-image-prepull"].is_mapping());
    // A provider change on values that already hold the unit takes it out again, with the
    // dependency, back to the text as it was.
    let moved = with_providers(opened, "capo", "cabpk");
    let closed = ok(&moved);
    assert_eq!(
        find(&closed, "ConfigMap", "sylva-units-values")["data"]["values"],
        find(&capo, "ConfigMap", "sylva-units-values")["data"]["values"]
    );
    // The deployment's own conditions replace the chart's (Helm replaces lists).
    let own = edit_item(capo, "ConfigMap", "sylva-units-values", |cm| {
        let text = cm["data"]["values"].as_str().unwrap().replace(
            "\nunits:\n",
            "\nunits:\n  metallb:\n    enabled_conditions:\n    - '{{ .Values.cluster.capi_providers.infra_provider | eq \"capo\" }}'\n",
        );
        cm["data"]["values"] = text.into();
    });
    let out = ok(&own);
    assert!(configmap_values(&out)["units"]["metallb-image-prepull"].is_mapping());
}

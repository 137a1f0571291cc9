//! The model against the forms sylva-core writes.

use super::*;

fn root(src: &str) -> Mapping {
    serde_yaml::from_str(src).unwrap()
}

fn enabled(src: &str) -> bool {
    unit_enabled(&root(src), METALLB).unwrap().enabled
}

#[test]
fn the_chart_condition_is_the_folded_upstream_text() {
    assert_eq!(
        metallb_chart_conditions(),
        vec![Value::from(
            "{{ or (.Values.cluster.capi_providers.infra_provider | eq \"capd\") (.Values.cluster.capi_providers.bootstrap_provider | eq \"cabpr\") }}"
        )]
    );
}

#[test]
fn metallb_is_enabled_only_with_capd_or_cabpr() {
    let providers = |infra: &str, bootstrap: &str| {
        format!(
            "cluster: {{capi_providers: {{infra_provider: {infra}, bootstrap_provider: {bootstrap}}}}}"
        )
    };
    assert!(enabled(&providers("capm3", "cabpr")));
    assert!(enabled(&providers("capd", "cabpk")));
    assert!(!enabled(&providers("capo", "cabpk")));
    assert!(!enabled(&providers("capm3", "ck8s")));
    // Chart defaults (capd/cabpk) when the values read do not set them.
    let v = unit_enabled(&root("a: 1"), METALLB).unwrap();
    assert!(v.enabled, "{v:?}");
    assert!(
        v.evidence
            .contains("the chart's enabled_conditions[0] is true"),
        "{}",
        v.evidence
    );
    assert!(
        v.evidence
            .contains("with the chart's default cluster.capi_providers.infra_provider: capd"),
        "{}",
        v.evidence
    );
}

#[test]
fn enabled_overrides_and_replaced_conditions() {
    let capo = "cluster: {capi_providers: {infra_provider: capo, bootstrap_provider: cabpk}}\n";
    assert!(!enabled(&format!(
        "{capo}units: {{metallb: {{enabled: true}}}}"
    )));
    assert!(enabled(&format!(
        "{capo}units: {{metallb: {{enabled_conditions: []}}}}"
    )));
    assert!(!enabled("units: {metallb: {enabled: 'false'}}"));
    assert!(!enabled("units_enabled_default: false"));
    assert!(!enabled("units_override_enabled: [cluster]"));
    assert!(enabled("units_override_enabled: [metallb]"));
    assert!(enabled(
        "units: {metallb: {enabled: '{{ .Values.cluster.capi_providers.bootstrap_provider | eq \"cabpk\" }}'}}"
    ));
    // A condition that reads metallb itself goes through the same helper.
    assert!(!enabled(&format!(
        "{capo}units: {{metallb: {{enabled_conditions: ['{{{{ true }}}}', '{{{{ .Values.cluster.capi_providers.infra_provider | eq \"capd\" }}}}']}}}}"
    )));
}

#[test]
fn unknown_forms_are_refused_with_their_path() {
    let r = unit_enabled(
        &root("units: {metallb: {enabled_conditions: ['{{ .Values.metallb | dig \"x\" \"\" }}']}}"),
        METALLB,
    )
    .unwrap_err();
    assert_eq!(r.path, "units.metallb.enabled_conditions[0]");
    assert!(
        r.message.contains("\"dig\" is not modelled"),
        "{}",
        r.message
    );
    let r = unit_enabled(
        &root("units: {metallb: {enabled_conditions: ['{{ .Values.other.key }}']}}"),
        METALLB,
    )
    .unwrap_err();
    assert!(
        r.message.contains("chart default is not modelled"),
        "{}",
        r.message
    );
    let r = unit_enabled(
        &root("units: {metallb: {enabled_conditions: ['{{ tuple . \"calico\" | include \"unit-enabled\" }}']}}"),
        METALLB,
    )
    .unwrap_err();
    assert!(
        r.message.contains("unit-enabled of calico"),
        "{}",
        r.message
    );
    let r = unit_enabled(
        &root("units: {metallb: {enabled_conditions: ['{{ tuple . \"metallb\" | include \"unit-enabled\" }}']}}"),
        METALLB,
    )
    .unwrap_err();
    assert!(r.message.contains("recurses without end"), "{}", r.message);
    let r = unit_enabled(&root("units: {metallb: {enabled: 'yes'}}"), METALLB).unwrap_err();
    assert_eq!(r.path, "units.metallb.enabled");
    assert!(r.message.contains("cannot cast"), "{}", r.message);
}

#[test]
fn generated_templates_are_what_upstream_writes() {
    assert_eq!(
        unit_enabled_expr("metallb-image-prepull"),
        "{{ tuple . \"metallb-image-prepull\" | include \"unit-enabled\" }}"
    );
    assert!(
        source_templates(&root("source_templates: {platform: {}}"))
            .contains(&"platform".to_string())
    );
    assert!(source_templates(&root("a: 1")).contains(&"sylva-core".to_string()));
}

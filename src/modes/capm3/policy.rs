//! Check 4: the Kyverno ClusterPolicy that copies the os-image-server output into every
//! workload-cluster namespace (sylva-core kustomize-units/mgmt-cluster-state-values/components/
//! capm3/clone-os-images-info.yaml), and the label on the workload Namespace that makes it match.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_yaml::{Mapping, Value};

use super::Finding;
use super::check::Check;
use super::config::Capm3OSImageSourcesSpec;
use super::inputs::Inputs;
use super::resources::{
    CloneFrom, ClusterPolicySpec, Generation, MatchResources, ResourceDescription, ResourceFilter,
    Rule, cluster_policy_spec,
};
use super::wiring::LEGACY_SOURCES;
use crate::krm::{KrmObject, KrmResult};

/// Label on every workload-cluster Namespace (sylva-core environment-values/workload-clusters/
/// base/kustomization.yaml) that the policy matches, with the empty value.
pub const WORKLOAD_CLUSTER_LABEL: &str = "sylva-project.org/workload-cluster";
/// Where Kyverno puts each copy: the matched Namespace.
pub const TARGET_NAMESPACE: &str = "{{request.object.metadata.name}}";

/// The `generate` of sylva-core's rule, for the names in `spec`.
fn desired_generate(spec: &Capm3OSImageSourcesSpec) -> Generation {
    Generation {
        kind: Some("ConfigMap".into()),
        api_version: Some("v1".into()),
        name: Some(spec.served_images.clone()),
        namespace: Some(TARGET_NAMESPACE.into()),
        synchronize: Some(true),
        generate_existing: None,
        clone: Some(CloneFrom {
            name: Some(spec.server_output.name.clone()),
            namespace: Some(spec.server_output.namespace.clone()),
        }),
    }
}

fn desired_match() -> MatchResources {
    MatchResources {
        any: vec![ResourceFilter {
            resources: Some(ResourceDescription {
                kinds: vec!["Namespace".into()],
                selector: Some(LabelSelector {
                    match_labels: Some([(WORKLOAD_CLUSTER_LABEL.to_owned(), String::new())].into()),
                    match_expressions: None,
                }),
            }),
        }],
        all: Vec::new(),
    }
}

/// The rule of `policy` that generates the served-images copy, if any: it clones the server
/// output (or a pre-decoupling source), or generates a ConfigMap with the clone's name.
fn clone_rule(policy: &ClusterPolicySpec, spec: &Capm3OSImageSourcesSpec) -> Option<usize> {
    policy.rules.iter().position(|rule| {
        rule.generate.as_ref().is_some_and(|g| {
            let clone_name = g.clone.as_ref().and_then(|c| c.name.as_deref());
            clone_name == Some(spec.server_output.name.as_str())
                || clone_name.is_some_and(|n| LEGACY_SOURCES.contains(&n))
                || g.name.as_deref() == Some(spec.served_images.as_str())
                || g.name
                    .as_deref()
                    .is_some_and(|n| LEGACY_SOURCES.contains(&n))
        })
    })
}

/// True when the filter matches Namespaces labelled `WORKLOAD_CLUSTER_LABEL: ""`.
fn matches_workload_namespaces(m: &MatchResources) -> bool {
    m.any.iter().chain(&m.all).any(|f| {
        f.resources.as_ref().is_some_and(|r| {
            r.kinds.iter().any(|k| k == "Namespace")
                && r.selector
                    .as_ref()
                    .and_then(|s| s.match_labels.as_ref())
                    .and_then(|l| l.get(WORKLOAD_CLUSTER_LABEL))
                    .is_some_and(String::is_empty)
        })
    })
}

/// The policies among the items that clone the served images, each with its rule.
pub fn find(
    items: &[Value],
    inputs: &Inputs,
    spec: &Capm3OSImageSourcesSpec,
) -> Result<Vec<(usize, ClusterPolicySpec, Option<usize>)>, KrmResult> {
    let mut found = Vec::new();
    for &index in &inputs.cluster_policies {
        let item = &items[index];
        let policy = cluster_policy_spec(item)?;
        let rule = clone_rule(&policy, spec);
        if rule.is_some() || item.name() == spec.clone_policy {
            found.push((index, policy, rule));
        }
    }
    Ok(found)
}

/// Checks one policy; returns the findings and the corrected item when anything is wrong.
pub fn check(
    item: &Value,
    policy: &ClusterPolicySpec,
    rule: Option<usize>,
    spec: &Capm3OSImageSourcesSpec,
) -> (Vec<Finding>, Option<Value>) {
    let Some(i) = rule else {
        return without_clone_rule(item, policy, spec);
    };
    let rule = &policy.rules[i];
    let want = desired_generate(spec);
    let mut findings = generate_findings(item, rule, i, &want);
    let match_ok = rule
        .match_
        .as_ref()
        .is_some_and(matches_workload_namespaces);
    if !match_ok {
        findings.push(Finding::fixable_error(
            Check::ClonePolicy,
            format!(
                "ClusterPolicy {} rule {}: must match Namespaces labelled {WORKLOAD_CLUSTER_LABEL}: \"\"",
                item.name(),
                rule.name
            ),
            format!("spec.rules[{i}].match"),
            yaml(&rule.match_),
            yaml(&desired_match()),
        ));
    }
    let existing = generate_existing(item, policy, Some(i));
    if let Some(finding) = existing.clone() {
        findings.push(finding);
    }
    if findings.is_empty() {
        return (findings, None);
    }
    let mut fixed = item.clone();
    if existing.is_some() {
        set_generate_existing(&mut fixed, Some((i, rule.generate.as_ref())));
    }
    fix_rule(&mut fixed, i, &want, match_ok);
    (findings, Some(fixed))
}

/// A policy named like the clone policy but with no rule that generates the copy: the rule is
/// added.
fn without_clone_rule(
    item: &Value,
    policy: &ClusterPolicySpec,
    spec: &Capm3OSImageSourcesSpec,
) -> (Vec<Finding>, Option<Value>) {
    let mut findings = Vec::new();
    findings.push(Finding::fixable_error(
        Check::ClonePolicy,
        format!(
            "ClusterPolicy {} has no rule that generates {} from {}/{}",
            item.name(),
            spec.served_images,
            spec.server_output.namespace,
            spec.server_output.name
        ),
        "spec.rules".into(),
        Value::Null,
        yaml(&desired_generate(spec)),
    ));
    let mut fixed = item.clone();
    if let Some(rules) = rules_mut(&mut fixed) {
        let rule = Rule {
            name: spec.clone_policy.clone(),
            skip_background_requests: Some(false),
            match_: Some(desired_match()),
            generate: Some(desired_generate(spec)),
        };
        rules.push(yaml(&rule));
    }
    if let Some(finding) = generate_existing(item, policy, None) {
        findings.push(finding);
        set_generate_existing(&mut fixed, None);
    }
    (findings, Some(fixed))
}

/// What is wrong in the `generate` of clone rule `i` (`rule`), against what it must be (`want`).
fn generate_findings(item: &Value, rule: &Rule, i: usize, want: &Generation) -> Vec<Finding> {
    let mut findings = Vec::new();
    let have = rule.generate.clone().unwrap_or_default();
    // (field, wrong, what is there, what belongs there, why it matters)
    let checks: [(&str, bool, Value, Value, &str); 5] = [
        (
            "kind",
            have.kind != want.kind || have.api_version != want.api_version,
            yaml(&have.kind),
            yaml(&want.kind),
            "must generate a v1 ConfigMap",
        ),
        (
            "name",
            have.name != want.name,
            yaml(&have.name),
            yaml(&want.name),
            "the copy must carry the name the workload clusters' HelmReleases read",
        ),
        (
            "namespace",
            have.namespace != want.namespace,
            yaml(&have.namespace),
            yaml(&want.namespace),
            "the copy must land in each matched workload-cluster Namespace",
        ),
        (
            "synchronize",
            have.synchronize != Some(true),
            yaml(&have.synchronize),
            Value::from(true),
            "without synchronize the copies keep the served images of the day they were made",
        ),
        (
            "clone",
            have.clone != want.clone,
            yaml(&have.clone),
            yaml(&want.clone),
            "must clone the os-image-server output",
        ),
    ];
    for (name, wrong, current, proposed, why) in checks {
        if wrong {
            findings.push(Finding::fixable_error(
                Check::ClonePolicy,
                format!("ClusterPolicy {} rule {}: {why}", item.name(), rule.name),
                format!("spec.rules[{i}].generate.{name}"),
                current,
                proposed,
            ));
        }
    }
    findings
}

/// Rule `i` of the `fixed` policy: its `generate` made what it must be (`want`, other keys kept)
/// and, unless it already matches the workload-cluster Namespaces, its `match` replaced.
fn fix_rule(fixed: &mut Value, i: usize, want: &Generation, match_ok: bool) {
    if let Some(rule_value) = rules_mut(fixed)
        .and_then(|r| r.get_mut(i))
        .and_then(Value::as_mapping_mut)
    {
        let generate = rule_value
            .entry("generate".into())
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if !generate.is_mapping() {
            *generate = Value::Mapping(Mapping::new());
        }
        if let (Value::Mapping(into), Value::Mapping(from)) = (generate, yaml(want)) {
            for (k, v) in from {
                into.insert(k, v);
            }
        }
        if !match_ok {
            rule_value.insert("match".into(), yaml(&desired_match()));
        }
    }
}

/// Whether Kyverno also generates the copy for workload-cluster Namespaces that existed before
/// the policy: the rule's `generate.generateExisting` when set, else the policy's
/// `spec.generateExisting` (default false) — kyverno pkg/policy/generate.go,
/// `handleGenerateForExisting`. sylva-core ships `spec.generateExisting: true`.
fn generate_existing(
    item: &Value,
    policy: &ClusterPolicySpec,
    rule: Option<usize>,
) -> Option<Finding> {
    let per_rule = rule.and_then(|i| policy.rules[i].generate.as_ref()?.generate_existing);
    let (effective, field, current, which) = match (per_rule, rule) {
        (Some(v), Some(i)) => (
            v,
            format!("spec.rules[{i}].generate.generateExisting"),
            Value::Bool(v),
            format!(
                "rule {} sets generate.generateExisting: {v}, which wins over spec.generateExisting",
                policy.rules[i].name
            ),
        ),
        _ => (
            policy.generate_existing.unwrap_or(false),
            "spec.generateExisting".to_owned(),
            policy.generate_existing.map_or(Value::Null, Value::Bool),
            "spec.generateExisting is not true (and the rule does not set its own)".to_owned(),
        ),
    };
    if effective {
        return None;
    }
    Some(Finding::fixable_error(
        Check::ClonePolicy,
        format!(
            "ClusterPolicy {}: {which}, so Kyverno copies the served images only into workload-cluster Namespaces created or changed after the policy; the namespaces that exist already never get the copy, and their clusters' HelmReleases fail once they read it",
            item.name()
        ),
        field,
        current,
        Value::Bool(true),
    ))
}

/// Sets `generateExisting: true` where the check found it: on the rule when the rule sets it
/// (it wins there), else on the policy, as sylva-core ships it.
fn set_generate_existing(item: &mut Value, rule: Option<(usize, Option<&Generation>)>) {
    let per_rule = rule.filter(|(_, g)| g.is_some_and(|g| g.generate_existing.is_some()));
    if let Some((i, _)) = per_rule {
        if let Some(generate) = rules_mut(item)
            .and_then(|r| r.get_mut(i))
            .and_then(|r| r.get_mut("generate"))
            .and_then(Value::as_mapping_mut)
        {
            generate.insert("generateExisting".into(), Value::Bool(true));
        }
        return;
    }
    // Where sylva-core writes it: first in `spec`, before `rules`.
    if let Some(spec) = item.get_mut("spec").and_then(Value::as_mapping_mut) {
        let mut reordered = Mapping::new();
        reordered.insert("generateExisting".into(), Value::Bool(true));
        for (k, v) in std::mem::take(spec) {
            if k.as_str() != Some("generateExisting") {
                reordered.insert(k, v);
            }
        }
        *spec = reordered;
    }
}

/// A typed value as YAML (these types always serialize).
fn yaml<T: serde::Serialize>(value: &T) -> Value {
    serde_yaml::to_value(value).expect("the policy types serialize")
}

fn rules_mut(item: &mut Value) -> Option<&mut Vec<Value>> {
    let spec = item
        .as_mapping_mut()?
        .entry("spec".into())
        .or_insert_with(|| Value::Mapping(Mapping::new()));
    if !spec.is_mapping() {
        *spec = Value::Mapping(Mapping::new());
    }
    let rules = spec
        .as_mapping_mut()?
        .entry("rules".into())
        .or_insert_with(|| Value::Sequence(Vec::new()));
    if !rules.is_sequence() {
        *rules = Value::Sequence(Vec::new());
    }
    rules.as_sequence_mut()
}

/// Checks the `sylva-project.org/workload-cluster: ""` label of a workload Namespace item.
pub fn namespace_label(item: &Value) -> Result<Option<Finding>, KrmResult> {
    // `metadata.labels` as k8s-openapi types it (`ObjectMeta.labels`); the rest of the object
    // is not decoded (see `resources::data_text`).
    let labels: BTreeMap<String, String> = match item.get("metadata").and_then(|m| m.get("labels"))
    {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(v) => serde_path_to_error::deserialize(v.clone()).map_err(|e| {
            KrmResult::error(format!("Namespace labels do not decode: {}", e.inner()))
                .about(item)
                .field(format!("metadata.labels.{}", e.path()))
                .tag("check", Check::Input)
        })?,
    };
    let label = labels.get(WORKLOAD_CLUSTER_LABEL);
    Ok(match label {
        Some(v) if v.is_empty() => None,
        other => Some(Finding::fixable_error(
            Check::NamespaceLabel,
            format!(
                "Namespace {} lacks the label {WORKLOAD_CLUSTER_LABEL}: \"\", so the Kyverno policy never copies the served images into it and the cluster's HelmRelease cannot read (B)",
                item.name()
            ),
            format!("metadata.labels.{WORKLOAD_CLUSTER_LABEL}"),
            other
                .map(|v| Value::from(v.as_str()))
                .unwrap_or(Value::Null),
            Value::from(""),
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sylva_policy() -> Value {
        // kustomize-units/mgmt-cluster-state-values/components/capm3/clone-os-images-info.yaml
        serde_yaml::from_str(
            "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: clone-os-images-info-capm3\n  annotations:\n    kustomize.toolkit.fluxcd.io/force: Enabled\n\
             spec:\n  generateExisting: true\n  rules:\n  - name: clone-os-images-info-capm3\n    skipBackgroundRequests: false\n    match:\n      any:\n      - resources:\n          kinds:\n          - Namespace\n          selector:\n            matchLabels:\n              sylva-project.org/workload-cluster: \"\"\n\
             \x20   generate:\n      kind: ConfigMap\n      apiVersion: v1\n      name: kyverno-cloned-os-image-server-images\n      namespace: \"{{request.object.metadata.name}}\"\n      synchronize: true\n      clone:\n        name: capm3-os-image-server-os-images\n        namespace: sylva-system\n",
        )
        .unwrap()
    }

    #[test]
    fn sylva_cores_policy_passes_and_the_pre_decoupling_one_is_corrected() {
        let spec = Capm3OSImageSourcesSpec::default();
        let item = sylva_policy();
        let policy = cluster_policy_spec(&item).unwrap();
        let (findings, fixed) = check(&item, &policy, clone_rule(&policy, &spec), &spec);
        assert!(findings.is_empty() && fixed.is_none(), "{findings:?}");
        // Before the decoupling: clone os-images/capm3-os-image-server-os-images-info as
        // kyverno-cloned-os-images-info-capm3.
        let text = serde_yaml::to_string(&item)
            .unwrap()
            .replace(
                "name: kyverno-cloned-os-image-server-images",
                "name: kyverno-cloned-os-images-info-capm3",
            )
            .replace(
                "name: capm3-os-image-server-os-images",
                "name: capm3-os-image-server-os-images-info",
            )
            .replace("namespace: sylva-system", "namespace: os-images")
            .replace("synchronize: true", "synchronize: false");
        let old: Value = serde_yaml::from_str(&text).unwrap();
        let policy = cluster_policy_spec(&old).unwrap();
        let (findings, fixed) = check(&old, &policy, clone_rule(&policy, &spec), &spec);
        let fields: Vec<&str> = findings.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.rules[0].generate.name",
                "spec.rules[0].generate.synchronize",
                "spec.rules[0].generate.clone"
            ]
        );
        assert_eq!(fixed.unwrap(), item);
    }

    fn checked(item: &Value) -> (Vec<Finding>, Option<Value>) {
        let spec = Capm3OSImageSourcesSpec::default();
        let policy = cluster_policy_spec(item).unwrap();
        check(item, &policy, clone_rule(&policy, &spec), &spec)
    }

    #[test]
    fn generate_existing_is_checked_per_rule_then_per_policy() {
        // Policy-level off: existing workload namespaces never get the copy.
        let mut item = sylva_policy();
        item["spec"]
            .as_mapping_mut()
            .unwrap()
            .remove("generateExisting");
        let (findings, fixed) = checked(&item);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].field, "spec.generateExisting");
        assert_eq!(findings[0].current, Value::Null);
        assert_eq!(fixed.unwrap(), sylva_policy());
        // The rule's own setting wins over the policy's (kyverno handleGenerateForExisting).
        let mut item = sylva_policy();
        item["spec"]["rules"][0]["generate"]["generateExisting"] = Value::Bool(false);
        let (findings, fixed) = checked(&item);
        assert_eq!(findings[0].field, "spec.rules[0].generate.generateExisting");
        let fixed = fixed.unwrap();
        assert_eq!(
            fixed["spec"]["rules"][0]["generate"]["generateExisting"],
            Value::Bool(true)
        );
        assert!(checked(&fixed).0.is_empty());
        let mut item = sylva_policy();
        item["spec"]["generateExisting"] = Value::Bool(false);
        item["spec"]["rules"][0]["generate"]["generateExisting"] = Value::Bool(true);
        assert!(checked(&item).0.is_empty());
    }

    #[test]
    fn namespace_label_must_be_present_and_empty() {
        let ns = |labels: &str| -> Value {
            serde_yaml::from_str(&format!(
                "apiVersion: v1\nkind: Namespace\nmetadata: {{name: wc1, labels: {labels}}}\n"
            ))
            .unwrap()
        };
        assert!(
            namespace_label(&ns("{sylva-project.org/workload-cluster: ''}"))
                .unwrap()
                .is_none()
        );
        assert!(namespace_label(&ns("{}")).unwrap().is_some());
        assert!(
            namespace_label(&ns("{sylva-project.org/workload-cluster: 'yes'}"))
                .unwrap()
                .is_some()
        );
    }
}

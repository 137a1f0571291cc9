//! Validation of emitted objects against the upstream CRD schemas in `tests/fixtures/crds/`
//! (copied unmodified from upstream; see SOURCES.md there).
//!
//! The apiserver *prunes* unknown fields of structural schemas silently; for a generator that is a
//! bug, so unknown fields are errors here. CEL rules (`x-kubernetes-validations`) are not
//! evaluated.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_yaml::Value;

/// (group, kind, version) → openAPIV3Schema
type Schemas = BTreeMap<(String, String, String), Value>;

fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds");
        let mut out = Schemas::new();
        for entry in std::fs::read_dir(&dir).expect("crd dir") {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let crd: Value = serde_yaml::from_str(&text).unwrap();
            let group = crd["spec"]["group"].as_str().unwrap().to_owned();
            let kind = crd["spec"]["names"]["kind"].as_str().unwrap().to_owned();
            for version in crd["spec"]["versions"].as_sequence().unwrap() {
                let name = version["name"].as_str().unwrap().to_owned();
                let schema = version["schema"]["openAPIV3Schema"].clone();
                out.insert((group.clone(), kind.clone(), name), schema);
            }
        }
        out
    })
}

/// True when a CRD schema is known for the object's apiVersion and kind.
pub fn has_schema(obj: &Value) -> bool {
    key(obj).is_some_and(|k| schemas().contains_key(&k))
}

fn key(obj: &Value) -> Option<(String, String, String)> {
    let api_version = obj.get("apiVersion")?.as_str()?;
    let (group, version) = api_version.split_once('/')?;
    let kind = obj.get("kind")?.as_str()?;
    Some((group.into(), kind.into(), version.into()))
}

/// Validates an object against its CRD schema; the error lists every violation with its path.
pub fn validate(obj: &Value) -> Result<(), Vec<String>> {
    let key = key(obj).ok_or_else(|| vec!["object has no apiVersion/kind".to_string()])?;
    let schema = schemas()
        .get(&key)
        .ok_or_else(|| vec![format!("no CRD schema for {key:?}")])?;
    let mut errors = Vec::new();
    // metadata is validated by the apiserver (ObjectMeta), not by the CRD schema, which only
    // declares it as an object: check it is a mapping with a name and skip its content.
    if obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        errors.push("metadata.name: missing".to_string());
    }
    let mut body = obj.clone();
    if let Some(m) = body.as_mapping_mut() {
        m.insert("metadata".into(), Value::Mapping(Default::default()));
    }
    check(schema, &body, "", &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Sequence(_) => "array",
        Value::Mapping(_) => "object",
        Value::Tagged(_) => "tagged",
    }
}

fn check(schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    let at = if path.is_empty() { "<root>" } else { path };
    if v.is_null() && schema.get("nullable").and_then(Value::as_bool) == Some(true) {
        return;
    }
    if !check_type(schema, v, at, errors) {
        return;
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_sequence)
        && !options.contains(v)
    {
        errors.push(format!("{at}: {v:?} not in enum {options:?}"));
    }
    check_combinators(schema, v, path, errors);
    match v {
        Value::Mapping(map) => check_object(schema, map, path, errors),
        Value::Sequence(seq) => check_array(schema, seq, path, errors),
        Value::String(s) => check_string(schema, s, at, errors),
        Value::Number(n) => check_number(schema, n, at, errors),
        _ => {}
    }
}

/// `type` and `x-kubernetes-int-or-string`. False when the type is wrong and nothing else of
/// the schema applies.
fn check_type(schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) -> bool {
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    if int_or_string {
        if !matches!(type_name(v), "integer" | "string") {
            errors.push(format!(
                "{at}: expected int-or-string, got {}",
                type_name(v)
            ));
        }
    } else if let Some(t) = schema.get("type").and_then(Value::as_str) {
        let actual = type_name(v);
        let ok = actual == t || (t == "number" && actual == "integer");
        if !ok {
            errors.push(format!("{at}: expected {t}, got {actual}"));
            return false;
        }
    }
    true
}

/// `allOf`, `anyOf` and `oneOf`.
fn check_combinators(schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    let at = if path.is_empty() { "<root>" } else { path };
    if let Some(all) = schema.get("allOf").and_then(Value::as_sequence) {
        for s in all {
            check(s, v, path, errors);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(any) = schema.get(key).and_then(Value::as_sequence) {
            let matching = any
                .iter()
                .filter(|s| {
                    let mut e = Vec::new();
                    check(s, v, path, &mut e);
                    e.is_empty()
                })
                .count();
            if matching == 0 || (key == "oneOf" && matching > 1) {
                errors.push(format!("{at}: matches {matching} of the {key} branches"));
            }
        }
    }
}

fn check_array(schema: &Value, seq: &[Value], path: &str, errors: &mut Vec<String>) {
    let at = if path.is_empty() { "<root>" } else { path };
    let n = seq.len() as u64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && n < min
    {
        errors.push(format!("{at}: {n} items < minItems {min}"));
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && n > max
    {
        errors.push(format!("{at}: {n} items > maxItems {max}"));
    }
    if let Some(items) = schema.get("items") {
        for (i, item) in seq.iter().enumerate() {
            check(items, item, &format!("{path}[{i}]"), errors);
        }
    }
}

fn check_string(schema: &Value, s: &str, at: &str, errors: &mut Vec<String>) {
    let n = s.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && n < min
    {
        errors.push(format!("{at}: length {n} < minLength {min}"));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && n > max
    {
        errors.push(format!("{at}: length {n} > maxLength {max}"));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        match regex::Regex::new(pattern) {
            Ok(re) if !re.is_match(s) => {
                errors.push(format!("{at}: {s:?} does not match {pattern}"))
            }
            Ok(_) => {}
            Err(e) => errors.push(format!("{at}: bad pattern {pattern}: {e}")),
        }
    }
}

fn check_number(schema: &Value, n: &serde_yaml::Number, at: &str, errors: &mut Vec<String>) {
    let x = n.as_f64().unwrap_or(0.0);
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
        && x < min
    {
        errors.push(format!("{at}: {x} < minimum {min}"));
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
        && x > max
    {
        errors.push(format!("{at}: {x} > maximum {max}"));
    }
}

fn check_object(schema: &Value, map: &serde_yaml::Mapping, path: &str, errors: &mut Vec<String>) {
    let at = if path.is_empty() { "<root>" } else { path };
    let preserve = schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true);
    let props = schema.get("properties").and_then(Value::as_mapping);
    let additional = schema.get("additionalProperties");
    if let Some(required) = schema.get("required").and_then(Value::as_sequence) {
        for r in required {
            if !map.contains_key(r) {
                errors.push(format!(
                    "{at}: missing required field {}",
                    r.as_str().unwrap_or("?")
                ));
            }
        }
    }
    if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
        && map.len() as u64 > max
    {
        errors.push(format!(
            "{at}: {} properties > maxProperties {max}",
            map.len()
        ));
    }
    for (k, child) in map {
        let name = k.as_str().unwrap_or("?");
        let child_path = if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        if let Some(s) = props.and_then(|p| p.get(k)) {
            check(s, child, &child_path, errors);
        } else if let Some(a) = additional {
            match a {
                Value::Bool(false) => errors.push(format!("{child_path}: unknown field")),
                Value::Bool(true) => {}
                s => check(s, child, &child_path, errors),
            }
        } else if props.is_some() && !preserve {
            errors.push(format!(
                "{child_path}: unknown field (the apiserver would prune it)"
            ));
        }
    }
}

#[test]
fn validator_catches_what_it_should() {
    let ok: Value = serde_yaml::from_str(
        "apiVersion: cilium.io/v2\nkind: CiliumLoadBalancerIPPool\nmetadata: {name: p}\nspec:\n  blocks: [{cidr: 10.0.0.0/24}]\n",
    )
    .unwrap();
    assert_eq!(validate(&ok), Ok(()));
    let bad: Value = serde_yaml::from_str(
        "apiVersion: cilium.io/v2\nkind: CiliumLoadBalancerIPPool\nmetadata: {name: p}\nspec:\n  blocks: [{cidr: 10.0.0.0/24, bogus: 1}]\n  allowFirstLastIPs: Maybe\n",
    )
    .unwrap();
    let errs = validate(&bad).unwrap_err();
    assert!(
        errs.iter().any(|e| e.contains("spec.blocks[0].bogus")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("allowFirstLastIPs")),
        "{errs:?}"
    );
    let flux: Value = serde_yaml::from_str(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: k}\nspec: {interval: 1x, prune: true}\n",
    )
    .unwrap();
    let errs = validate(&flux).unwrap_err();
    assert!(
        errs.iter()
            .any(|e| e.contains("missing required field sourceRef")),
        "{errs:?}"
    );
    assert!(errs.iter().any(|e| e.contains("spec.interval")), "{errs:?}");
}

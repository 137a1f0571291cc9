//! A small JSON Schema validator for the keywords sylva-units' `values.schema.json` uses in a unit
//! definition (`tests/fixtures/sylva-units/unit.schema.json`). A keyword it does not know is a
//! test failure, never silently skipped, so the check cannot pass by ignoring a constraint.

use serde_json::Value as Json;

/// The vendored extract: the unit schema and the `$defs` it references.
pub fn sylva_unit_schema() -> (Json, Json) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sylva-units/unit.schema.json");
    let doc: Json = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    (doc["unit"].clone(), doc["$defs"].clone())
}

/// Validates `instance`; the error lists every violation with its path.
pub fn validate(schema: &Json, defs: &Json, instance: &Json) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    check(schema, defs, instance, "", &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn valid(schema: &Json, defs: &Json, instance: &Json) -> bool {
    let mut errors = Vec::new();
    check(schema, defs, instance, "", &mut errors);
    errors.is_empty()
}

/// sylva-core writes GoTPL patterns such as `^{{(.|\r?\n)*}}$`; braces that are not a repetition
/// are literal for Go's RE2 but not for the regex crate, so they are escaped first.
fn regex(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern)
        .or_else(|_| regex::Regex::new(&pattern.replace('{', r"\{").replace('}', r"\}")))
        .unwrap_or_else(|e| panic!("pattern {pattern:?}: {e}"))
}

fn type_matches(t: &str, v: &Json) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "null" => v.is_null(),
        other => panic!("unknown type {other}"),
    }
}

fn check(schema: &Json, defs: &Json, v: &Json, at: &str, errors: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        if schema == &Json::Bool(false) {
            errors.push(format!("{at}: not allowed"));
        }
        return;
    };
    for (key, s) in obj {
        let here = Here { defs, v, at };
        if !check_value(key, s, &here, errors)
            && !check_applicator(key, s, obj, &here, errors)
            && !check_object(key, s, &here, errors)
        {
            panic!("keyword {key} is not supported by this validator");
        }
    }
    check_members(obj, defs, v, at, errors);
}

/// The instance being checked and where it is.
struct Here<'a> {
    defs: &'a Json,
    v: &'a Json,
    at: &'a str,
}

/// The keywords about the instance's own value; false for any other keyword.
fn check_value(key: &str, s: &Json, here: &Here, errors: &mut Vec<String>) -> bool {
    let Here { v, at, .. } = *here;
    match key {
        "$comment" | "description" | "title" | "format" | "default" | "examples" => {}
        "type" => {
            let ok = match s {
                Json::String(t) => type_matches(t, v),
                Json::Array(ts) => ts.iter().any(|t| type_matches(t.as_str().unwrap(), v)),
                _ => panic!("bad type"),
            };
            if !ok {
                errors.push(format!("{at}: {v} is not of type {s}"));
            }
        }
        "const" if v != s => errors.push(format!("{at}: {v} is not {s}")),
        "enum" if !s.as_array().unwrap().contains(v) => {
            errors.push(format!("{at}: {v} is not one of {s}"))
        }
        "const" | "enum" => {}
        "pattern" => {
            if let Some(text) = v.as_str()
                && !regex(s.as_str().unwrap()).is_match(text)
            {
                errors.push(format!("{at}: {text:?} does not match {s}"));
            }
        }
        _ => return false,
    }
    true
}

/// The keywords that apply other schemas to the instance; false for any other keyword.
fn check_applicator(
    key: &str,
    s: &Json,
    obj: &serde_json::Map<String, Json>,
    here: &Here,
    errors: &mut Vec<String>,
) -> bool {
    let Here { defs, v, at } = *here;
    match key {
        "$ref" => {
            let name = s
                .as_str()
                .unwrap()
                .strip_prefix("#/$defs/")
                .expect("local $ref");
            check(&defs[name], defs, v, at, errors);
        }
        "items" => {
            if let Some(list) = v.as_array() {
                for (i, item) in list.iter().enumerate() {
                    check(s, defs, item, &format!("{at}[{i}]"), errors);
                }
            }
        }
        "anyOf" if !s.as_array().unwrap().iter().any(|b| valid(b, defs, v)) => {
            errors.push(format!("{at}: {v} matches no anyOf branch"))
        }
        "oneOf"
            if s.as_array()
                .unwrap()
                .iter()
                .filter(|b| valid(b, defs, v))
                .count()
                != 1 =>
        {
            errors.push(format!("{at}: {v} does not match exactly one oneOf branch"))
        }
        "anyOf" | "oneOf" => {}
        "allOf" => {
            for b in s.as_array().unwrap() {
                check(b, defs, v, at, errors);
            }
        }
        "not" if valid(s, defs, v) => errors.push(format!("{at}: must not match {s}")),
        "not" => {}
        "if" => {
            let branch = if valid(s, defs, v) { "then" } else { "else" };
            if let Some(b) = obj.get(branch) {
                check(b, defs, v, at, errors);
            }
        }
        "then" | "else" => {}
        _ => return false,
    }
    true
}

/// The keywords about an object's keys; false for any other keyword. Its members' schemas are
/// applied together by [`check_members`].
fn check_object(key: &str, s: &Json, here: &Here, errors: &mut Vec<String>) -> bool {
    let Here { v, at, .. } = *here;
    match key {
        "properties" | "patternProperties" | "additionalProperties" => {}
        "required" => {
            if let Some(m) = v.as_object() {
                for r in s.as_array().unwrap() {
                    if !m.contains_key(r.as_str().unwrap()) {
                        errors.push(format!("{at}: {r} is required"));
                    }
                }
            }
        }
        "dependentRequired" | "dependencies" => {
            let Some(m) = v.as_object() else { return true };
            for (present, needs) in s.as_object().unwrap() {
                if !m.contains_key(present) {
                    continue;
                }
                let needs = needs
                    .get("required")
                    .unwrap_or(needs)
                    .as_array()
                    .expect("a list of required keys");
                for n in needs {
                    if !m.contains_key(n.as_str().unwrap()) {
                        errors.push(format!("{at}: {present} needs {n}"));
                    }
                }
            }
        }
        _ => return false,
    }
    true
}

/// Object members: properties, then patternProperties, then additionalProperties for the rest.
fn check_members(
    obj: &serde_json::Map<String, Json>,
    defs: &Json,
    v: &Json,
    at: &str,
    errors: &mut Vec<String>,
) {
    let Some(m) = v.as_object() else { return };
    let props = obj.get("properties").and_then(Json::as_object);
    let patterns: Vec<(regex::Regex, &Json)> = obj
        .get("patternProperties")
        .and_then(Json::as_object)
        .map(|p| p.iter().map(|(k, s)| (regex(k), s)).collect())
        .unwrap_or_default();
    for (name, member) in m {
        let path = format!("{at}.{name}");
        let mut matched = false;
        if let Some(s) = props.and_then(|p| p.get(name)) {
            matched = true;
            check(s, defs, member, &path, errors);
        }
        for (re, s) in &patterns {
            if re.is_match(name) {
                matched = true;
                check(s, defs, member, &path, errors);
            }
        }
        if !matched && let Some(extra) = obj.get("additionalProperties") {
            check(extra, defs, member, &path, errors);
        }
    }
}

#[test]
fn the_validator_catches_what_the_sylva_unit_schema_forbids() {
    let (unit, defs) = sylva_unit_schema();
    let ok = serde_json::json!({
        "info": {"description": "x"}, "unit_templates": [], "repo": "sylva-core",
        "kustomization_spec": {"path": "./x", "wait": true}
    });
    validate(&unit, &defs, &ok).unwrap();
    for (bad, why) in [
        (
            serde_json::json!({"info": {"description": "x"}}),
            "\"unit_templates\" is required",
        ),
        (
            serde_json::json!({"info": {"description": "x", "owner": "me"}, "unit_templates": []}),
            "owner",
        ),
        (
            serde_json::json!({"info": {"description": "x"}, "unit_templates": [], "kustomization_spec": {"path": "./x", "wait": true, "healthChecks": []}}),
            "must not match",
        ),
        (
            serde_json::json!({"info": {"description": "x"}, "unit_templates": [], "kustomization_spec": {"path": "./x", "sourceRef": {}}}),
            "must not match",
        ),
        (
            serde_json::json!({"info": {"description": "x"}, "unit_templates": [], "enabled": "maybe"}),
            "anyOf",
        ),
        (
            serde_json::json!({"info": {"description": "x"}, "unit_templates": [], "wat": 1}),
            "not allowed",
        ),
    ] {
        let errors = validate(&unit, &defs, &bad).unwrap_err();
        assert!(errors.iter().any(|e| e.contains(why)), "{bad}: {errors:?}");
    }
}

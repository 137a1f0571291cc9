//! Finding the sylva values: `spec.values` inline, the item `spec.valuesFrom` names, or the
//! items sylva-units itself renders (Secret `sylva-units-values`, a ConfigMap of the same name,
//! HelmRelease `sylva-units`).

use serde_yaml::{Mapping, Value};

use super::config::{MetalLBImagePrepullSpec, ValuesKind, ValuesSource};
use super::config_field;
use super::inputs::{FLUX_HELM_GROUP, Inputs};
use crate::krm::{KrmObject, KrmResult};

/// The sylva values and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SylvaValues {
    /// The values document (always a mapping).
    pub root: Mapping,
    /// Where it was read.
    pub origin: Origin,
}

/// Where the values were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `spec.values` of the function config.
    Inline,
    /// An input item, at a field.
    Item {
        /// Position of the item.
        index: usize,
        /// Field holding the values, e.g. `data.values`.
        field: String,
    },
}

impl SylvaValues {
    /// Human description for results, e.g. `Secret sylva-system/sylva-units-values data.values`.
    pub fn describe(&self, items: &[Value]) -> String {
        match &self.origin {
            Origin::Inline => "spec.values of the function config".into(),
            Origin::Item { index, field } => {
                let item = &items[*index];
                match item.namespace() {
                    Some(ns) => format!("{} {ns}/{} {field}", item.kind(), item.name()),
                    None => format!("{} {} {field}", item.kind(), item.name()),
                }
            }
        }
    }

    /// The value at a dotted path of mapping keys, if every step exists.
    pub fn get(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        let mut current = self.root.get(*first)?;
        for key in rest {
            current = current.as_mapping()?.get(*key)?;
        }
        Some(current)
    }
}

/// Well-known holders of the sylva values, in discovery order.
const DISCOVERY: [(ValuesKind, &str); 3] = [
    (ValuesKind::Secret, "sylva-units-values"),
    (ValuesKind::ConfigMap, "sylva-units-values"),
    (ValuesKind::HelmRelease, "sylva-units"),
];

fn kind_matches(item: &Value, kind: ValuesKind) -> bool {
    match kind {
        ValuesKind::Secret => item.is("", "Secret"),
        ValuesKind::ConfigMap => item.is("", "ConfigMap"),
        ValuesKind::HelmRelease => item.is(FLUX_HELM_GROUP, "HelmRelease"),
    }
}

fn kind_name(kind: ValuesKind) -> &'static str {
    match kind {
        ValuesKind::Secret => "Secret",
        ValuesKind::ConfigMap => "ConfigMap",
        ValuesKind::HelmRelease => "HelmRelease",
    }
}

/// Locates and decodes the values. `Ok(None)` when there are none anywhere.
pub fn locate(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
    fc: Option<&Value>,
) -> Result<Option<SylvaValues>, KrmResult> {
    let fc_error = |message: String, field: &str| {
        let r = KrmResult::error(message).field(config_field(fc, field));
        match fc {
            Some(fc) => r.about(fc),
            None => r,
        }
    };
    if let Some(values) = &spec.values {
        return match values {
            Value::Mapping(root) => Ok(Some(SylvaValues {
                root: root.clone(),
                origin: Origin::Inline,
            })),
            other => Err(fc_error(
                format!(
                    "spec.values must be a mapping of sylva values, found {}",
                    type_name(other)
                ),
                "values",
            )),
        };
    }
    if let Some(source) = &spec.values_from {
        let found: Vec<usize> = matching(items, inputs, source.kind, &source.name)
            .filter(|&i| {
                source
                    .namespace
                    .as_deref()
                    .is_none_or(|ns| items[i].namespace() == Some(ns))
            })
            .collect();
        return match found.as_slice() {
            [] => Err(fc_error(
                format!(
                    "valuesFrom names {} {} but no such item is in the input",
                    kind_name(source.kind),
                    source.name
                ),
                "valuesFrom",
            )),
            [index] => decode(items, *index, source).map(Some),
            [..] => Err(fc_error(
                format!(
                    "{} items named {} {}: set valuesFrom.namespace",
                    found.len(),
                    kind_name(source.kind),
                    source.name
                ),
                "valuesFrom.namespace",
            )),
        };
    }
    for (kind, name) in DISCOVERY {
        let found: Vec<usize> = matching(items, inputs, kind, name).collect();
        let source = ValuesSource {
            kind,
            name: name.into(),
            namespace: None,
            key: None,
        };
        match found.as_slice() {
            [] => continue,
            [index] => return decode(items, *index, &source).map(Some),
            [first, ..] => {
                return Err(KrmResult::error(format!(
                    "{} items named {} {}: say which holds the values with spec.valuesFrom (kind, name, namespace)",
                    found.len(),
                    kind_name(kind),
                    name
                ))
                .about(&items[*first]));
            }
        }
    }
    Ok(None)
}

fn matching<'a>(
    items: &'a [Value],
    inputs: &'a Inputs,
    kind: ValuesKind,
    name: &'a str,
) -> impl Iterator<Item = usize> + 'a {
    inputs
        .values_candidates
        .iter()
        .copied()
        .filter(move |&i| kind_matches(&items[i], kind) && items[i].name() == name)
}

/// Reads the values out of one item.
fn decode(items: &[Value], index: usize, source: &ValuesSource) -> Result<SylvaValues, KrmResult> {
    let item = &items[index];
    let err = |message: String, field: &str| KrmResult::error(message).about(item).field(field);
    let (field, text) = match source.kind {
        ValuesKind::HelmRelease => {
            let field = "spec.values".to_string();
            return match item.get("spec").and_then(|s| s.get("values")) {
                Some(Value::Mapping(root)) => Ok(SylvaValues {
                    root: root.clone(),
                    origin: Origin::Item { index, field },
                }),
                Some(other) => Err(err(
                    format!("values are not a mapping (found {})", type_name(other)),
                    &field,
                )),
                None => Err(err("HelmRelease has no spec.values".into(), &field)),
            };
        }
        ValuesKind::Secret => {
            let key = source.key.as_deref().unwrap_or("values");
            secret_text(item, key).map_err(|m| err(m, &format!("data.{key}")))?
        }
        ValuesKind::ConfigMap => {
            let keys: Vec<&str> = match source.key.as_deref() {
                Some(key) => vec![key],
                None => vec!["values.yaml", "values"],
            };
            let data = item.get("data").and_then(Value::as_mapping);
            let hit = keys.iter().find_map(|k| {
                data.and_then(|d| d.get(*k))
                    .map(|v| (format!("data.{k}"), v))
            });
            match hit {
                Some((field, Value::String(text))) => (field, text.clone()),
                Some((field, other)) => {
                    return Err(err(
                        format!("expected a YAML string, found {}", type_name(other)),
                        &field,
                    ));
                }
                None => {
                    return Err(err(
                        format!("ConfigMap has no data key {}", keys.join(" or ")),
                        &format!("data.{}", keys[0]),
                    ));
                }
            }
        }
    };
    // Read as Helm reads it (merge keys applied), by the engine's reader.
    let parsed: Value = crate::krm::yaml::from_str(&text)
        .map_err(|e| err(format!("values are not valid YAML: {e}"), &field))?;
    match parsed {
        Value::Mapping(root) => Ok(SylvaValues {
            root,
            origin: Origin::Item { index, field },
        }),
        other => Err(err(
            format!(
                "values are not a mapping (found {}); expected the sylva-units values document",
                type_name(&other)
            ),
            &field,
        )),
    }
}

/// `data.<key>` (base64, as sylva-units writes it) or `stringData.<key>` of a Secret.
fn secret_text(item: &Value, key: &str) -> Result<(String, String), String> {
    if let Some(encoded) = item.get("data").and_then(|d| d.get(key)) {
        let Some(encoded) = encoded.as_str() else {
            return Err("expected a base64 string".into());
        };
        // Tolerate line-wrapped base64 (some tools wrap at 76 columns); a one-line value, the
        // usual case, is decoded where it is.
        let wrapped: String;
        let compact = if encoded.bytes().all(|b| b.is_ascii_graphic()) {
            encoded
        } else {
            wrapped = encoded.chars().filter(|c| !c.is_whitespace()).collect();
            &wrapped
        };
        // The engine k8s-openapi's `ByteString` decodes a Secret's data with.
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, compact)
            .map_err(|e| format!("not valid base64: {e}"))?;
        let text =
            String::from_utf8(bytes).map_err(|_| "decoded values are not UTF-8".to_string())?;
        return Ok((format!("data.{key}"), text));
    }
    match item.get("stringData").and_then(|d| d.get(key)) {
        Some(Value::String(text)) => Ok((format!("stringData.{key}"), text.clone())),
        Some(_) => Err("expected a YAML string".into()),
        None => Err(format!("Secret has no data key {key:?}")),
    }
}

/// YAML type name for messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(src: &str) -> Value {
        serde_yaml::from_str(src).unwrap()
    }

    fn run(
        spec: &MetalLBImagePrepullSpec,
        items: &[Value],
    ) -> Result<Option<SylvaValues>, KrmResult> {
        let inputs = Inputs::scan(items, None, "metallb");
        locate(spec, items, &inputs, None)
    }

    #[test]
    fn reads_the_base64_secret_sylva_units_writes() {
        // base64 of "metallb: {bgp_lbs: {}}\n"
        let items = vec![v(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: sylva-units-values, namespace: sylva-system}\ndata:\n  values: bWV0YWxsYjoge2JncF9sYnM6IHt9fQo=\n",
        )];
        let found = run(&MetalLBImagePrepullSpec::default(), &items)
            .unwrap()
            .unwrap();
        assert!(found.get(&["metallb", "bgp_lbs"]).is_some());
        assert_eq!(
            found.describe(&items),
            "Secret sylva-system/sylva-units-values data.values"
        );
    }

    /// Base64 wrapped over lines (a literal block, as some tools write it) reads as one line.
    #[test]
    fn reads_line_wrapped_base64() {
        // base64 of "metallb: {bgp_lbs: {}}\n", wrapped after 16 characters.
        let items = vec![v(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: sylva-units-values}\ndata:\n  values: |\n    bWV0YWxsYjoge2Jn\n    cF9sYnM6IHt9fQo=\n",
        )];
        let found = run(&MetalLBImagePrepullSpec::default(), &items)
            .unwrap()
            .unwrap();
        assert!(found.get(&["metallb", "bgp_lbs"]).is_some());
    }

    #[test]
    fn inline_values_win_and_must_be_a_mapping() {
        let items = vec![v(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sylva-units-values}\ndata: {values: 'a: 1'}\n",
        )];
        let spec = MetalLBImagePrepullSpec {
            values: Some(v("b: 2")),
            ..Default::default()
        };
        assert_eq!(run(&spec, &items).unwrap().unwrap().origin, Origin::Inline);
        let spec = MetalLBImagePrepullSpec {
            values: Some(v("[1]")),
            ..Default::default()
        };
        let e = run(&spec, &items).unwrap_err();
        assert_eq!(e.field.unwrap().path, "spec.values");
    }

    #[test]
    fn configmap_and_helmrelease_sources() {
        let items = vec![
            v(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: my-values}\ndata: {values.yaml: 'a: 1'}\n",
            ),
            v(
                "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: sylva-units}\nspec: {values: {b: 2}}\n",
            ),
        ];
        let spec = from_configmap("my-values");
        assert!(run(&spec, &items).unwrap().unwrap().get(&["a"]).is_some());
        // Discovery skips the unnamed ConfigMap and finds the HelmRelease.
        let found = run(&MetalLBImagePrepullSpec::default(), &items)
            .unwrap()
            .unwrap();
        assert!(found.get(&["b"]).is_some());
    }

    fn from_configmap(name: &str) -> MetalLBImagePrepullSpec {
        MetalLBImagePrepullSpec {
            values_from: Some(ValuesSource {
                kind: ValuesKind::ConfigMap,
                name: name.into(),
                namespace: None,
                key: None,
            }),
            ..Default::default()
        }
    }

    /// Values are read as Helm reads them: a merge key brings its keys in.
    #[test]
    fn merge_keys_in_values_are_applied() {
        let items = vec![v(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: my-values}\ndata:\n  values.yaml: |\n    base: &peers {bgp_lbs: {peer: {address: 10.0.0.1}}}\n    metallb:\n      <<: *peers\n",
        )];
        let found = run(&from_configmap("my-values"), &items).unwrap().unwrap();
        assert!(found.get(&["metallb", "bgp_lbs", "peer"]).is_some());
    }

    #[test]
    fn bad_sources_are_errors_naming_the_field() {
        let items = vec![v(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: sylva-units-values}\ndata: {values: '!!notbase64'}\n",
        )];
        let e = run(&MetalLBImagePrepullSpec::default(), &items).unwrap_err();
        assert_eq!(e.field.unwrap().path, "data.values");
        let items = vec![v(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sylva-units-values}\ndata: {values: '- 1'}\n",
        )];
        let e = run(&MetalLBImagePrepullSpec::default(), &items).unwrap_err();
        assert!(e.message.contains("not a mapping"), "{}", e.message);
        assert_eq!(run(&MetalLBImagePrepullSpec::default(), &[]).unwrap(), None);
    }
}

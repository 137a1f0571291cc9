//! Finding the sylva values: `spec.values` inline, the item `spec.valuesFrom` names, or the
//! items sylva-units itself renders (Secret `sylva-units-values`, a ConfigMap of the same name,
//! HelmRelease `sylva-units`).

use serde::Deserialize as _;
use serde::de::DeserializeSeed as _;
use serde_yaml::{Mapping, Value};

use super::config::{MetalLBImagePrepullSpec, ValuesKind, ValuesSource};
use super::config_field;
use super::inputs::{FLUX_HELM_GROUP, Inputs};
use crate::krm::{KrmObject, KrmResult};

/// The sylva values and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SylvaValues {
    /// The values document (always a mapping), without the units other than `metallb` (see
    /// [`NEEDED`]): [`SylvaValues::get`] answers as on the whole document for every path but
    /// `units.<another unit>`.
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
                root: prune(root, NEEDED),
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
                    root: prune(root, NEEDED),
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
    let parsed: Pruned = serde_yaml::from_str(&text)
        .map_err(|e| err(format!("values are not valid YAML: {e}"), &field))?;
    match parsed {
        Pruned::Mapping(root) => Ok(SylvaValues {
            root,
            origin: Origin::Item { index, field },
        }),
        Pruned::Other(found) => Err(err(
            format!(
                "values are not a mapping (found {found}); expected the sylva-units values document"
            ),
            &field,
        )),
    }
}

/// Which part of a values subtree the mode reads.
#[derive(Debug)]
enum Want {
    /// The whole subtree.
    All,
    /// Some keys of a mapping.
    Keys(Keys),
}

/// The keys of a mapping that are read.
#[derive(Debug)]
struct Keys {
    /// Keys read, and how much of each.
    listed: &'static [(&'static str, Want)],
    /// Whether the keys not listed are kept whole (else they are dropped).
    others_whole: bool,
}

impl Keys {
    /// How much of `key`'s value is kept, `None` for nothing.
    fn get(&self, key: &Value) -> Option<&'static Want> {
        let listed = key
            .as_str()
            .and_then(|k| self.listed.iter().find(|(name, _)| *name == k));
        match listed {
            Some((_, want)) => Some(want),
            None if self.others_whole => Some(&Want::All),
            None => None,
        }
    }
}

/// What [`SylvaValues`] keeps of the values document: all of it except the definitions of the
/// units other than `metallb`. The document is mostly `units:` (hundreds of unit definitions)
/// and the mode reads only `units.metallb` of it (`gate`, `images`): building a `Value` tree of
/// the other units was most of the tree built on a Sylva bundle.
const NEEDED: &Keys = &Keys {
    listed: &[(
        "units",
        Want::Keys(Keys {
            listed: &[("metallb", Want::All)],
            others_whole: false,
        }),
    )],
    others_whole: true,
};

/// The wanted part of a values mapping that is already a tree (inline or HelmRelease values).
/// A key under which only some keys are wanted is dropped when its value is not a mapping:
/// `get` stops at a non-mapping either way.
fn prune(root: &Mapping, want: &'static Keys) -> Mapping {
    let mut out = Mapping::new();
    for (key, value) in root {
        match (want.get(key), value) {
            (None, _) => {}
            (Some(Want::All), v) => {
                out.insert(key.clone(), v.clone());
            }
            (Some(Want::Keys(keys)), Value::Mapping(m)) => {
                out.insert(key.clone(), Value::Mapping(prune(m, keys)));
            }
            (Some(Want::Keys(_)), _) => {}
        }
    }
    out
}

/// The values document decoded as [`prune`] would leave it, without building the rest.
///
/// It must accept and reject exactly the documents `Value` does, with the same messages: the
/// skipped parts go through [`Skim`], which checks duplicate keys as `Mapping` does and decodes
/// tagged values as `Value`; syntax, alias and depth errors come from the deserializer itself.
enum Pruned {
    /// The document is a mapping: its wanted part.
    Mapping(Mapping),
    /// It is not: what it is, for the message ([`type_name`] wording).
    Other(&'static str),
}

impl<'de> serde::Deserialize<'de> for Pruned {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Root;
        impl<'de> serde::de::Visitor<'de> for Root {
            type Value = Pruned;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Pruned, E> {
                Ok(Pruned::Other("a boolean"))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Pruned, E> {
                Ok(Pruned::Other("a number"))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Pruned, E> {
                Ok(Pruned::Other("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Pruned, E> {
                Ok(Pruned::Other("a number"))
            }
            fn visit_str<E>(self, _: &str) -> Result<Pruned, E> {
                Ok(Pruned::Other("a string"))
            }
            fn visit_unit<E>(self) -> Result<Pruned, E> {
                Ok(Pruned::Other("null"))
            }
            fn visit_none<E>(self) -> Result<Pruned, E> {
                Ok(Pruned::Other("null"))
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Pruned, D::Error> {
                // `Value` reads the inner value in place of the option.
                Pruned::deserialize(d)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Pruned, A::Error> {
                Skim.visit_seq(seq).map(|()| Pruned::Other("a list"))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Pruned, A::Error> {
                Wanted(NEEDED).visit_map(map).map(Pruned::Mapping)
            }
            fn visit_enum<A: serde::de::EnumAccess<'de>>(self, e: A) -> Result<Pruned, A::Error> {
                Skim.visit_enum(e).map(|()| Pruned::Other("a tagged value"))
            }
        }
        d.deserialize_any(Root)
    }
}

/// Decodes a mapping keeping only the wanted keys ([`Keys`]).
struct Wanted(&'static Keys);

impl<'de> serde::de::Visitor<'de> for Wanted {
    type Value = Mapping;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML mapping")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Mapping, A::Error> {
        let mut out = Mapping::new();
        let mut seen = SeenKeys::default();
        while let Some(key) = map.next_key::<Value>()? {
            let want = self.0.get(&key);
            // Only wanted keys are kept, so only they are copied.
            let kept = want.map(|_| key.clone());
            seen.insert(key)?;
            match (want, kept) {
                (None, _) | (_, None) => map.next_value_seed(Skim)?,
                (Some(Want::All), Some(key)) => {
                    let value: Value = map.next_value()?;
                    out.insert(key, value);
                }
                (Some(Want::Keys(keys)), Some(key)) => {
                    if let Some(sub) = map.next_value_seed(WantedSeed(keys))? {
                        out.insert(key, Value::Mapping(sub));
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A wanted key's value under which only some keys are wanted: `None` when it is not a mapping
/// (skimmed, as `get` would stop there).
struct WantedSeed(&'static Keys);

impl<'de> serde::de::DeserializeSeed<'de> for WantedSeed {
    type Value = Option<Mapping>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<Mapping>, D::Error> {
        struct V(&'static Keys);
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Option<Mapping>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_some<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                WantedSeed(self.0).deserialize(d)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Skim.visit_seq(seq).map(|()| None)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                Wanted(self.0).visit_map(map).map(Some)
            }
            fn visit_enum<A: serde::de::EnumAccess<'de>>(
                self,
                e: A,
            ) -> Result<Self::Value, A::Error> {
                Skim.visit_enum(e).map(|()| None)
            }
        }
        d.deserialize_any(V(self.0))
    }
}

/// Walks a value nobody reads, failing where decoding it as a `Value` would fail.
#[derive(Clone, Copy)]
struct Skim;

impl<'de> serde::de::DeserializeSeed<'de> for Skim {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Skim {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    // The scalar kinds `Value` accepts (and no others: the defaults reject the rest as `Value`'s do).
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skim)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = SeenKeys::default();
        while let Some(key) = map.next_key::<Value>()? {
            seen.insert(key)?;
            map.next_value_seed(Skim)?;
        }
        Ok(())
    }
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, e: A) -> Result<(), A::Error> {
        // Tagged values are rare: decode them as `Value` does, tag checks included.
        Value::deserialize(serde::de::value::EnumAccessDeserializer::new(e)).map(drop)
    }
}

/// The keys of one mapping so far, to reject a duplicate as `Mapping` does (same message).
/// Most mappings are small: a linear scan until they are not.
#[derive(Default)]
struct SeenKeys {
    few: Vec<Value>,
    many: std::collections::HashSet<Value>,
}

impl SeenKeys {
    const FEW: usize = 16;

    /// Records `key`, or fails when it was seen.
    fn insert<E: serde::de::Error>(&mut self, key: Value) -> Result<(), E> {
        let dup = if self.many.is_empty() {
            self.few.contains(&key)
        } else {
            self.many.contains(&key)
        };
        if dup {
            return Err(E::custom(duplicate_key_message(&key)));
        }
        if self.many.is_empty() && self.few.len() < Self::FEW {
            self.few.push(key);
        } else {
            self.many.extend(self.few.drain(..));
            self.many.insert(key);
        }
        Ok(())
    }
}

/// `serde_yaml::mapping::DuplicateKeyError`'s wording (it cannot be built outside serde_yaml).
fn duplicate_key_message(key: &Value) -> String {
    match key {
        Value::Null => "duplicate entry with null key".into(),
        Value::Bool(b) => format!("duplicate entry with key `{b}`"),
        Value::Number(n) => format!("duplicate entry with key {n}"),
        Value::String(s) => format!("duplicate entry with key {s:?}"),
        Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_) => {
            "duplicate entry in YAML map".into()
        }
    }
}

/// `data.<key>` (base64, as sylva-units writes it) or `stringData.<key>` of a Secret.
fn secret_text(item: &Value, key: &str) -> Result<(String, String), String> {
    if let Some(encoded) = item.get("data").and_then(|d| d.get(key)) {
        let Some(encoded) = encoded.as_str() else {
            return Err("expected a base64 string".into());
        };
        // Tolerate line-wrapped base64 (some tools wrap at 76 columns).
        // (Checked first: rebuilding the string char by char cost more than decoding it.)
        let compact: String = if encoded.contains(char::is_whitespace) {
            encoded.chars().filter(|c| !c.is_whitespace()).collect()
        } else {
            encoded.to_owned()
        };
        let bytes: k8s_openapi::ByteString = serde_yaml::from_value(Value::String(compact))
            .map_err(|e| format!("not valid base64: {e}"))?;
        let text =
            String::from_utf8(bytes.0).map_err(|_| "decoded values are not UTF-8".to_string())?;
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
        let spec = MetalLBImagePrepullSpec {
            values_from: Some(ValuesSource {
                kind: ValuesKind::ConfigMap,
                name: "my-values".into(),
                namespace: None,
                key: None,
            }),
            ..Default::default()
        };
        assert!(run(&spec, &items).unwrap().unwrap().get(&["a"]).is_some());
        // Discovery skips the unnamed ConfigMap and finds the HelmRelease.
        let found = run(&MetalLBImagePrepullSpec::default(), &items)
            .unwrap()
            .unwrap();
        assert!(found.get(&["b"]).is_some());
    }

    /// The pruned decode accepts, rejects and keeps exactly what decoding the whole document
    /// as a `Value` and then pruning it does (error messages included).
    #[test]
    fn pruned_decode_equals_whole_decode_then_prune() {
        let docs = [
            "units: {a: {enabled: true}, metallb: {enabled: false, x: [1, 2], helmrelease_spec: {values: {a: 1}, b: 2}}}\nmetallb_helm_values: {frr: {image: {tag: v1}}}\n",
            "_internal: {state: {is_upgrade: 'true', x: 1}, sylva_core_version: 1.5.0, other: [a]}\nmetallb: {bgp_lbs: {l3_options: {bgp_peers: [{a: 1}]}}}\n",
            "metallb: 3\nunits: [1, 2]\n_internal: {state: null}\n",
            "units: {other: {a: 1, a: 2}}\n",
            "units: {metallb: {enabled: true, enabled: false}}\n",
            "x: {1: a, 1: b}\n",
            "x: {true: a, true: b}\n",
            "x: {~: a, null: b}\n",
            "x: {[1]: a, [1]: b}\n",
            "x: !custom {a: 1}\nmetallb_helm_values: !tagged {a: 1}\n",
            "x: !<!> 1\n",
            "x: &a {b: 1}\ny: *a\nmetallb_helm_values: *a\n",
            "x: *nope\n",
            "x: [\n",
            "- 1\n",
            "just text\n",
            "7\n",
            "true\n",
            "~\n",
            "",
            "!t {a: 1}\n",
            "a: 1\n---\nb: 2\n",
            "k0: 0\nk1: 1\nk2: 2\nk3: 3\nk4: 4\nk5: 5\nk6: 6\nk7: 7\nk8: 8\nk9: 9\nk10: 10\nk11: 11\nk12: 12\nk13: 13\nk14: 14\nk15: 15\nk16: 16\nk17: 17\nk3: again\n",
            "x: 18446744073709551616\ny: 1e400\nz: .nan\n",
            "x: !!int abc\n",
            "x: !!binary aGVsbG8=\n",
        ];
        for doc in docs {
            let whole = serde_yaml::from_str::<Value>(doc).map_err(|e| e.to_string());
            let pruned = serde_yaml::from_str::<Pruned>(doc).map_err(|e| e.to_string());
            match (whole, pruned) {
                (Ok(Value::Mapping(m)), Ok(Pruned::Mapping(p))) => {
                    assert_eq!(prune(&m, NEEDED), p, "{doc}");
                }
                (Ok(other), Ok(Pruned::Other(found))) if !matches!(other, Value::Mapping(_)) => {
                    assert_eq!(type_name(&other), found, "{doc}");
                }
                (Err(w), Err(p)) => assert_eq!(w, p, "{doc}"),
                (w, p) => panic!("{doc:?}: whole {w:?}, pruned {:?}", p.is_ok()),
            }
        }
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

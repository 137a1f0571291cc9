//! The values the `cluster` unit's chart (sylva-capi-cluster) receives, computed the way Flux's
//! helm-controller does (fluxcd/pkg chartutil `ChartValuesFromReferences` and `MergeMaps`): each
//! `valuesFrom` document in order, later over earlier, maps merged key by key, anything else
//! replaced; `spec.values` over all of them. Only the referenced objects that are among the items
//! take part; the others are reported as missing.

use serde_yaml::{Mapping, Value};

use super::check::Check;
use super::inputs::{FLUX_HELM_GROUP, Inputs};
use super::resources::ValuesReference;
use crate::krm::{KrmObject, KrmResult};
use crate::modes::prepull::type_name;

/// sylva-units' default `cluster.capi_providers.infra_provider` (charts/sylva-units/values.yaml).
pub const SYLVA_DEFAULT_INFRA_PROVIDER: &str = "capd";
/// Name of the Secret, ConfigMap and HelmRelease that carry the sylva-units values.
const SYLVA_UNITS_VALUES: &str = "sylva-units-values";
const SYLVA_UNITS: &str = "sylva-units";

/// A YAML document read from one data key of a ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Position of the item.
    pub index: usize,
    /// Field holding the document, e.g. `data.values.yaml`.
    pub field: String,
    /// The document (an empty document reads as an empty mapping, as Helm reads it).
    pub root: Mapping,
}

/// The values of a `cluster` HelmRelease as far as the items tell.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartValues {
    /// The merged values.
    pub root: Mapping,
    /// `valuesFrom` entries whose object (or data key) is not among the items.
    pub missing: Vec<ValuesReference>,
}

/// Reads the document at `key` of a ConfigMap or Secret item. `Ok(None)` when the key is absent.
pub fn read_document(item: &Value, index: usize, key: &str) -> Result<Option<Document>, KrmResult> {
    let err = |message: String, field: &str| {
        KrmResult::error(message)
            .about(item)
            .field(field)
            .tag("check", Check::Input)
    };
    let secret = item.is("", "Secret");
    let data = super::resources::data_text(item, secret)?;
    let Some(text) = data.get(key) else {
        return Ok(None);
    };
    let field = if secret && item.get("data").and_then(|d| d.get(key)).is_none() {
        format!("stringData.{key}")
    } else {
        format!("data.{key}")
    };
    let parsed: Value = crate::krm::yaml::from_str(text)
        .map_err(|e| err(format!("values are not valid YAML: {e}"), &field))?;
    let root = match parsed {
        Value::Null => Mapping::new(),
        Value::Mapping(root) => root,
        other => {
            return Err(err(
                format!(
                    "values are not a mapping (found {}); Helm rejects such a values document",
                    type_name(&other)
                ),
                &field,
            ));
        }
    };
    Ok(Some(Document { index, field, root }))
}

/// Flux's `MergeMaps`: `b` over `a`, mappings merged key by key, anything else replaced.
pub fn merge_maps(a: &mut Mapping, b: &Mapping) {
    for (key, value) in b {
        match (a.get_mut(key), value) {
            (Some(Value::Mapping(into)), Value::Mapping(from)) => merge_maps(into, from),
            _ => {
                a.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The chart values of the HelmRelease `release` (at `namespace`) with `refs` as its
/// `valuesFrom` and `inline` as its `spec.values`.
pub fn chart_values(
    items: &[Value],
    inputs: &Inputs,
    namespace: Option<&str>,
    refs: &[ValuesReference],
    inline: Option<&Value>,
) -> Result<ChartValues, KrmResult> {
    let mut out = ChartValues::default();
    for r in refs {
        let Some(index) = inputs.values_source(&r.kind, namespace, &r.name) else {
            out.missing.push(r.clone());
            continue;
        };
        let item = &items[index];
        match &r.target_path {
            // A single value at a path (capo's allocated IPs): kept as the string Flux reads.
            Some(path) => {
                let data = super::resources::data_text(item, item.is("", "Secret"))?;
                match data.get(r.key()) {
                    Some(text) => set_path(&mut out.root, path, Value::String(text.clone())),
                    None => out.missing.push(r.clone()),
                }
            }
            None => match read_document(item, index, r.key())? {
                Some(doc) => merge_maps(&mut out.root, &doc.root),
                None => out.missing.push(r.clone()),
            },
        }
    }
    if let Some(Value::Mapping(inline)) = inline {
        merge_maps(&mut out.root, inline);
    }
    Ok(out)
}

/// Sets a dotted path (Helm's `--set` path without list indices or escapes, which the
/// `valuesFrom` entries sylva-units renders do not use).
fn set_path(root: &mut Mapping, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut map = root;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            map.insert(Value::from(part), value);
            return;
        }
        let entry = map
            .entry(Value::from(part))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if !entry.is_mapping() {
            *entry = Value::Mapping(Mapping::new());
        }
        let Value::Mapping(next) = entry else { return };
        map = next;
    }
}

/// The sylva-units values of one release, and where they were read.
#[derive(Debug, Clone, PartialEq)]
pub struct SylvaValues {
    /// The values.
    pub root: Mapping,
    /// The item and field, for messages (`ConfigMap wc1/sylva-units-values data.values`).
    pub origin: String,
    /// Position of the item.
    pub index: usize,
    /// Field holding the values (`data.values`, `spec.values`).
    pub field: String,
}

/// The sylva-units values of the release in `namespace`, from the items sylva-units and its
/// environment packages carry: Secret `sylva-units-values` (the chart's own dump, key `values`),
/// ConfigMap `sylva-units-values` (the environment values, key `values`, else `values.yaml`),
/// HelmRelease `sylva-units` (`spec.values`).
pub fn sylva_values(
    items: &[Value],
    inputs: &Inputs,
    namespace: Option<&str>,
) -> Result<Option<SylvaValues>, KrmResult> {
    let found = |index: usize, root: Mapping, field: String| {
        let item = &items[index];
        let origin = match item.namespace() {
            Some(ns) => format!("{} {ns}/{} {field}", item.kind(), item.name()),
            None => format!("{} {} {field}", item.kind(), item.name()),
        };
        Some(SylvaValues {
            root,
            origin,
            index,
            field,
        })
    };
    if let Some(index) = inputs.secret(namespace, SYLVA_UNITS_VALUES)
        && let Some(doc) = read_document(&items[index], index, "values")?
    {
        return Ok(found(index, doc.root, doc.field));
    }
    if let Some(index) = inputs.config_map(namespace, SYLVA_UNITS_VALUES) {
        for key in ["values", "values.yaml"] {
            if let Some(doc) = read_document(&items[index], index, key)? {
                return Ok(found(index, doc.root, doc.field));
            }
        }
    }
    for &index in &inputs.helm_releases {
        let item = &items[index];
        if item.is(FLUX_HELM_GROUP, "HelmRelease")
            && item.name() == SYLVA_UNITS
            && item.namespace() == namespace
            && let Some(Value::Mapping(values)) = item.get("spec").and_then(|s| s.get("values"))
        {
            return Ok(found(index, values.clone(), "spec.values".into()));
        }
    }
    Ok(None)
}

/// The value at a path of mapping keys.
pub fn get<'a>(root: &'a Mapping, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut current = root.get(*first)?;
    for key in rest {
        current = current.as_mapping()?.get(*key)?;
    }
    Some(current)
}

/// True for a string sylva-units has not interpreted yet (a Go template).
pub fn is_template(text: &str) -> bool {
    text.contains("{{")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(src: &str) -> Mapping {
        serde_yaml::from_str(src).unwrap()
    }

    #[test]
    fn merge_is_fluxs_merge_maps() {
        let mut a = map("os_images: {a: {sha256: '1', os: ubuntu}}\nlist: [1, 2]\nx: {y: 1}\n");
        merge_maps(
            &mut a,
            &map("os_images: {a: {sha256: '2'}, b: {sha256: '3'}}\nlist: [3]\nx: 5\n"),
        );
        assert_eq!(
            a,
            map("os_images: {a: {sha256: '2', os: ubuntu}, b: {sha256: '3'}}\nlist: [3]\nx: 5\n")
        );
    }

    #[test]
    fn chart_values_follow_valuesfrom_order_and_inline_values_win() {
        let items: Vec<Value> = serde_yaml::Deserializer::from_str(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\ndata: {values.yaml: 'k: a'}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\ndata: {values: azogcw==}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ip, namespace: n}\ndata: {allocated_ip: 10.0.0.1}\n",
        )
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
        let inputs = Inputs::scan(&items);
        let refs: Vec<ValuesReference> = serde_yaml::from_str(
            "[{kind: Secret, name: s, valuesKey: values}, {kind: ConfigMap, name: a},\n\
              {kind: ConfigMap, name: gone, optional: true},\n\
              {kind: ConfigMap, name: ip, valuesKey: allocated_ip, targetPath: cluster.vip}]",
        )
        .unwrap();
        let v = chart_values(&items, &inputs, Some("n"), &refs, None).unwrap();
        assert_eq!(v.root, map("k: a\ncluster: {vip: 10.0.0.1}\n"));
        assert_eq!(v.missing.len(), 1);
        let v = chart_values(&items, &inputs, Some("n"), &refs[..1], None).unwrap();
        assert_eq!(v.root, map("k: s\n"));
        let inline: Value = serde_yaml::from_str("k: inline").unwrap();
        let v = chart_values(&items, &inputs, Some("n"), &refs, Some(&inline)).unwrap();
        assert_eq!(get(&v.root, &["k"]), Some(&Value::from("inline")));
    }

    #[test]
    fn documents_that_are_not_mappings_are_errors_naming_the_key() {
        let item: Value = serde_yaml::from_str(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {values.yaml: '- 1'}\n",
        )
        .unwrap();
        let e = read_document(&item, 0, "values.yaml").unwrap_err();
        assert_eq!(e.field.unwrap().path, "data.values.yaml");
        assert_eq!(read_document(&item, 0, "other").unwrap(), None);
    }
}

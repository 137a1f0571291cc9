//! Mutations of the document tree (and the raw entries no tree can hold).

use serde_yaml::{Mapping, Value};

use super::super::Rng;

/// A random node of `doc` (by walking down a random path).
fn random_node<'a>(doc: &'a mut Value, rng: &mut Rng) -> &'a mut Value {
    let depth = 1 + rng.below(6);
    let mut node = doc;
    for _ in 0..depth {
        let len = match &*node {
            Value::Mapping(m) => m.len(),
            Value::Sequence(s) => s.len(),
            _ => 0,
        };
        if len == 0 {
            break;
        }
        let i = rng.below(len);
        node = match node {
            Value::Mapping(m) => m.values_mut().nth(i).unwrap(),
            Value::Sequence(s) => &mut s[i],
            _ => unreachable!(),
        };
    }
    node
}

pub(super) fn type_swap(doc: &mut Value, rng: &mut Rng) -> String {
    let node = random_node(doc, rng);
    let new = match (&*node, rng.below(3)) {
        (Value::Mapping(_), 0) | (Value::Sequence(_), 0) => Value::String("swapped".into()),
        (Value::Mapping(m), _) => Value::Sequence(m.values().cloned().collect()),
        (Value::Sequence(s), _) => Value::Mapping(
            s.iter()
                .enumerate()
                .map(|(i, v)| (Value::from(i as u64), v.clone()))
                .collect(),
        ),
        (_, 0) => Value::Mapping(Mapping::from_iter([("k".into(), node.clone())])),
        (_, 1) => Value::Sequence(vec![node.clone()]),
        (_, _) => Value::Null,
    };
    let what = format!("{} became {}", kind_of(node), kind_of(&new));
    *node = new;
    what
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a sequence",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

pub(super) fn huge_string(doc: &mut Value, rng: &mut Rng) -> String {
    let len = [2_000, 70_000, 1 << 20, 4 << 20][rng.below(4)];
    let unit = *rng.pick(&["a", "é", "x y ", "line\n", "'\"", "\\t"]);
    let s = unit.repeat(len / unit.len());
    *random_node(doc, rng) = Value::String(s);
    format!("a {len}-byte string of {unit:?}")
}

pub(super) fn big_number(doc: &mut Value, rng: &mut Rng, raw: &mut Option<String>) -> String {
    const BIG: &[&str] = &[
        "18446744073709551616",
        "18446744073709551615",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "1e400",
        "-1e400",
        "0x10000000000000000",
        "1_000_000",
        ".nan",
        "340282366920938463463374607431768211456",
    ];
    let n = *rng.pick(BIG);
    if rng.chance(50) {
        *raw = Some(format!("bigNumber: {n}"));
        format!("raw entry bigNumber: {n}")
    } else {
        *random_node(doc, rng) = Value::String(n.into());
        format!("a value set to the string {n:?}")
    }
}

pub(super) fn deep(doc: &mut Value, rng: &mut Rng, flow: bool, raw: &mut Option<String>) -> String {
    let depth = [50, 127, 129, 1_000, 1_001, 3_000, 20_000][rng.below(7)];
    if flow {
        let open = if rng.chance(50) { "[" } else { "{a: " };
        let close = if open == "[" { "]" } else { "}" };
        *raw = Some(format!(
            "deep: {}x{}",
            open.repeat(depth),
            close.repeat(depth)
        ));
    } else if depth <= 1_001 {
        let mut v = Value::String("x".into());
        for _ in 0..depth {
            v = Value::Mapping(Mapping::from_iter([("a".into(), v)]));
        }
        *random_node(doc, rng) = v;
    } else {
        // Block nesting costs its depth in indentation on every line: 2 000 levels are 2 MB.
        let mut s = String::from("deep:\n");
        for i in 1..depth.min(2_000) {
            s.push_str(&" ".repeat(i));
            s.push_str("a:\n");
        }
        *raw = Some(s);
    }
    format!(
        "nesting {depth} deep ({})",
        if flow { "flow" } else { "block" }
    )
}

pub(super) fn many_deep(rng: &mut Rng, raw: &mut Option<String>) -> String {
    let keys = [300, 1_000, 3_000][rng.below(3)];
    let list = format!("{}x{}", "[".repeat(999), "]".repeat(999));
    let mut s = String::from("deepLists:\n");
    for k in 0..keys {
        s.push_str(&format!("  k{k}: {list}\n"));
    }
    *raw = Some(s);
    format!("{keys} keys of 999-deep flow lists")
}

pub(super) fn alias_bomb(rng: &mut Rng, padded: bool, raw: &mut Option<String>) -> String {
    let levels = 4 + rng.below(6);
    let width = 4 + rng.below(6);
    let mut s = String::from("bomb:\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for l in 1..levels {
        let refs = vec![format!("*l{}", l - 1); width].join(", ");
        s.push_str(&format!("  l{l}: &l{l} [{refs}]\n"));
    }
    if padded {
        s.push_str("  padding:\n");
        for _ in 0..20_000 {
            s.push_str("  - p\n");
        }
    }
    *raw = Some(s);
    format!(
        "alias bomb: {levels} levels of {width} (~{} nodes){}",
        width.pow(levels as u32) * 10,
        if padded { ", padded" } else { "" }
    )
}

pub(super) fn krm_fields(doc: &mut Value, rng: &mut Rng) -> String {
    let Some(items) = doc.get_mut("items").and_then(Value::as_sequence_mut) else {
        return "no items".into();
    };
    if items.is_empty() {
        return "no items".into();
    }
    let i = rng.below(items.len());
    let item = &mut items[i];
    let what = match rng.below(7) {
        0 => {
            item.as_mapping_mut().map(|m| m.remove("apiVersion"));
            "apiVersion removed"
        }
        1 => {
            item.as_mapping_mut().map(|m| m.remove("kind"));
            "kind removed"
        }
        2 => {
            if let Some(m) = item.get_mut("metadata").and_then(Value::as_mapping_mut) {
                m.remove("name");
            }
            "metadata.name removed"
        }
        3 => {
            item.as_mapping_mut().map(|m| m.remove("metadata"));
            "metadata removed"
        }
        4 => {
            if let Some(m) = item.as_mapping_mut() {
                m.insert("kind".into(), "ResourceList".into());
            }
            "kind set to ResourceList"
        }
        5 => {
            if let Some(m) = item.as_mapping_mut() {
                m.insert("apiVersion".into(), Value::from(5));
            }
            "apiVersion set to a number"
        }
        _ => {
            if let Some(m) = item.get_mut("metadata").and_then(Value::as_mapping_mut) {
                m.insert("name".into(), Value::Sequence(vec![]));
            }
            "metadata.name set to a sequence"
        }
    };
    format!("item {i}: {what}")
}

pub(super) fn results(doc: &mut Value, rng: &mut Rng) -> String {
    let value: Value = serde_yaml::from_str(match rng.below(4) {
        0 => "[{message: earlier, severity: error}]",
        1 => "{items: [{message: legacy}]}",
        2 => "[5, null, [], {severity: nonsense}]",
        _ => "oops",
    })
    .unwrap();
    let what = format!(
        "results set to {}",
        super::super::check::yaml(&value).trim()
    );
    if let Some(m) = doc.as_mapping_mut() {
        m.insert("results".into(), value);
    }
    what
}

pub(super) fn function_config(doc: &mut Value, rng: &mut Rng) -> String {
    let value: Value = serde_yaml::from_str(match rng.below(6) {
        0 => "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {mode: load-balancer-announcer, phase: [1]}}",
        1 => "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {mode: nope}}",
        2 => "{apiVersion: fn.cutover.dev/v1alpha1, kind: LoadBalancerAnnouncer, metadata: {name: x}, spec: {announcer: cilium, phase: cutover, ciliumVersion: 1.18.4, poolLabel: '###'}}",
        3 => "{apiVersion: fn.cutover.dev/v1alpha1, kind: MetalLBImagePrepull, metadata: {name: x}, spec: {waitTimeout: forever, images: [a, b:latest]}}",
        4 => "[]",
        _ => "{apiVersion: fn.cutover.dev/v1alpha1, kind: Nope}",
    })
    .unwrap();
    let what = format!(
        "functionConfig set to {}",
        super::super::check::yaml(&value).trim()
    );
    if let Some(m) = doc.as_mapping_mut() {
        m.insert("functionConfig".into(), value);
    }
    what
}

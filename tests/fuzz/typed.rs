//! Typed checks: what serde_yaml cannot tell, the type a scalar has to the readers Kubernetes
//! tools use. serde_yaml reads `0644` and `"0644"` alike (a string), go-yaml reads the first as
//! the integer 420; `!!binary aGk=` is bytes to go-yaml, `=` the value key to YAML 1.1 readers.
//!
//! The check ([`untouched_keep_types`]): for every output item that is an input item (the same
//! `apiVersion`, `kind`, namespace and name), every scalar (key or value) that has, at the same
//! path, the same value to serde_yaml in the input and the output (the function did not change it)
//! has the same value **and type** in both to go-yaml v3 (kyaml: kpt, kustomize) and to go-yaml
//! v2 with YAML 1.1's extra words (sigs.k8s.io/yaml: kubectl, Flux, Helm; PyYAML in pipelines).
//! Resolution here is written from go-yaml's `resolve.go`, independently of the engine's.

use std::collections::HashMap;

use serde_yaml::Value;

use super::check::{Failure, Finding};

/// An event of [`super::events::nodes`].
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    DocumentStart,
    Scalar {
        anchor: Option<Vec<u8>>,
        value: Vec<u8>,
        plain: bool,
        tag: Option<Vec<u8>>,
    },
    Alias(Vec<u8>),
    MappingStart(Option<Vec<u8>>),
    SequenceStart(Option<Vec<u8>>),
    End,
}

/// A node, aliases expanded and merge keys applied.
#[derive(Debug, Clone)]
pub enum Node {
    Scalar {
        text: String,
        plain: bool,
        tag: Option<String>,
    },
    Map(Vec<(Node, Node)>),
    Seq(Vec<Node>),
}

/// A scalar's value and type to one reader.
#[derive(Debug, Clone, PartialEq)]
pub enum Typed {
    Null,
    Bool(bool),
    Int(i128),
    /// The bits (NaN made one).
    Float(u64),
    Str(String),
    /// `!!binary`: the base64 text without white space.
    Binary(String),
    Timestamp(String),
    /// YAML 1.1's `=` (the value key).
    ValueKey,
    /// Another tag and the text.
    Other(String, String),
    /// The reader refuses it.
    Error,
}

/// go-yaml v3, or go-yaml v2 with YAML 1.1's other words (`yes`, `on`, `=`, `1:20`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    V3,
    Yaml11,
}

const CORE: &str = "tag:yaml.org,2002:";

/// At most this many nodes are built for one document (aliases expanded): past it the check is
/// skipped (alias bombs are the bounds' business).
const NODE_BUDGET: usize = 2_000_000;

/// The document of `text` as go-yaml builds it; `None` when it does not read or is too large.
pub fn document(text: &[u8]) -> Option<Node> {
    let text = text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(text);
    let evs = super::events::nodes(text).ok()?;
    let mut b = Builder {
        evs: &evs,
        at: 0,
        anchors: HashMap::new(),
        nodes: 0,
    };
    if !matches!(b.evs.first(), Some(Event::DocumentStart)) {
        return None;
    }
    b.at = 1;
    b.node()
}

struct Builder<'e> {
    evs: &'e [Event],
    at: usize,
    anchors: HashMap<Vec<u8>, Node>,
    nodes: usize,
}

impl Builder<'_> {
    fn count(&mut self, n: usize) -> Option<()> {
        self.nodes += n;
        (self.nodes <= NODE_BUDGET).then_some(())
    }

    fn node(&mut self) -> Option<Node> {
        let ev = self.evs.get(self.at)?.clone();
        self.at += 1;
        self.count(1)?;
        let (node, anchor) = match ev {
            Event::Scalar {
                anchor,
                value,
                plain,
                tag,
            } => (
                Node::Scalar {
                    text: String::from_utf8_lossy(&value).into_owned(),
                    plain,
                    tag: tag.map(|t| String::from_utf8_lossy(&t).into_owned()),
                },
                anchor,
            ),
            Event::Alias(name) => {
                let node = self.anchors.get(&name)?.clone();
                self.count(size(&node))?;
                return Some(node);
            }
            Event::SequenceStart(anchor) => {
                let mut seq = Vec::new();
                while !matches!(self.evs.get(self.at)?, Event::End) {
                    seq.push(self.node()?);
                }
                self.at += 1;
                (Node::Seq(seq), anchor)
            }
            Event::MappingStart(anchor) => {
                let mut own: Vec<(Node, Node)> = Vec::new();
                let mut merged: Vec<Node> = Vec::new();
                while !matches!(self.evs.get(self.at)?, Event::End) {
                    let is_merge = matches!(
                        self.evs.get(self.at)?,
                        Event::Scalar { value, plain: true, tag: None, .. } if value == b"<<"
                    ) || matches!(
                        self.evs.get(self.at)?,
                        Event::Scalar { tag: Some(t), .. } if t.as_slice() == b"tag:yaml.org,2002:merge"
                    );
                    let k = self.node()?;
                    let v = self.node()?;
                    if is_merge {
                        match v {
                            Node::Seq(s) => merged.extend(s),
                            other => merged.push(other),
                        }
                    } else {
                        own.push((k, v));
                    }
                }
                self.at += 1;
                // Own keys win, then earlier sources over later ones.
                for source in merged {
                    if let Node::Map(entries) = source {
                        for (k, v) in entries {
                            if !own.iter().any(|(o, _)| same_key(o, &k)) {
                                own.push((k, v));
                            }
                        }
                    }
                }
                (Node::Map(own), anchor)
            }
            Event::End | Event::DocumentStart => return None,
        };
        if let Some(name) = anchor {
            self.anchors.insert(name, node.clone());
        }
        Some(node)
    }
}

fn size(n: &Node) -> usize {
    match n {
        Node::Scalar { .. } => 1,
        Node::Seq(s) => 1 + s.iter().map(size).sum::<usize>(),
        Node::Map(m) => 1 + m.iter().map(|(k, v)| size(k) + size(v)).sum::<usize>(),
    }
}

fn same_key(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Scalar { .. }, Node::Scalar { .. }) => typed(a, Reader::V3) == typed(b, Reader::V3),
        _ => false,
    }
}

/// A scalar's value and type to `reader` (`Error` for a collection).
pub fn typed(n: &Node, reader: Reader) -> Typed {
    let Node::Scalar { text, plain, tag } = n else {
        return Typed::Error;
    };
    match tag.as_deref() {
        Some(t) => match t.strip_prefix(CORE) {
            Some("str") => Typed::Str(text.clone()),
            Some("null") => Typed::Null,
            Some("bool") => match text.as_str() {
                "true" | "True" | "TRUE" => Typed::Bool(true),
                "false" | "False" | "FALSE" => Typed::Bool(false),
                _ => Typed::Error,
            },
            Some("int") => int(text).map_or(Typed::Error, Typed::Int),
            Some("float") => float(text)
                .or_else(|| int(text).map(|i| i as f64))
                .map_or(Typed::Error, float_bits),
            Some("binary") => Typed::Binary(text.split_whitespace().collect()),
            Some("timestamp") => Typed::Timestamp(text.clone()),
            Some("merge") => Typed::Str(text.clone()),
            _ if t == "!" => Typed::Str(text.clone()),
            _ => Typed::Other(t.to_owned(), text.clone()),
        },
        None if !plain => Typed::Str(text.clone()),
        None => plain_scalar(text, reader),
    }
}

fn float_bits(f: f64) -> Typed {
    Typed::Float(if f.is_nan() {
        f64::NAN.to_bits()
    } else {
        f.to_bits()
    })
}

/// go-yaml's `resolve` for a plain scalar.
fn plain_scalar(text: &str, reader: Reader) -> Typed {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Typed::Null,
        "true" | "True" | "TRUE" => return Typed::Bool(true),
        "false" | "False" | "FALSE" => return Typed::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return float_bits(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return float_bits(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return float_bits(f64::NAN),
        _ => {}
    }
    if reader == Reader::Yaml11 {
        match text {
            "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => return Typed::Bool(true),
            "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => return Typed::Bool(false),
            "=" => return Typed::ValueKey,
            _ => {}
        }
        if let Some(i) = sexagesimal(text) {
            return Typed::Int(i);
        }
    }
    let first = text.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return Typed::Str(text.to_owned());
    }
    if first.is_ascii_digit() && is_timestamp(text) {
        return Typed::Timestamp(text.to_owned());
    }
    if let Some(i) = int(text) {
        return Typed::Int(i);
    }
    if let Some(f) = float(text) {
        return float_bits(f);
    }
    Typed::Str(text.to_owned())
}

/// `_` removed, then Go's `ParseInt(s, 0, 64)` / `ParseUint(s, 0, 64)`.
fn int(text: &str) -> Option<i128> {
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    let (neg, body) = match plain.as_bytes().first()? {
        b'-' => (true, &plain[1..]),
        b'+' => (false, &plain[1..]),
        _ => (false, plain.as_str()),
    };
    let (digits, radix) = match body.get(..2) {
        Some("0x" | "0X") => (&body[2..], 16),
        Some("0o" | "0O") => (&body[2..], 8),
        Some("0b" | "0B") => (&body[2..], 2),
        _ if body.len() > 1 && body.starts_with('0') => (&body[1..], 8),
        _ => (body, 10),
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let u = u64::from_str_radix(digits, radix).ok()?;
    let i = i128::from(u);
    let v = if neg { -i } else { i };
    (v >= i128::from(i64::MIN)).then_some(v)
}

/// go-yaml's float syntax `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (`_` removed).
fn float(text: &str) -> Option<f64> {
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    let body = plain.strip_prefix(['+', '-']).unwrap_or(&plain);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    } && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    if !ok {
        return None;
    }
    plain.parse().ok()
}

/// go-yaml's timestamp forms, roughly: `YYYY-M-D` then nothing, or `T`/`t`/space and a time.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let Some((month, rest)) = rest.split_once('-') else {
        return false;
    };
    let day: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = &rest[day.len()..];
    (1..=2).contains(&month.len())
        && month.bytes().all(|c| c.is_ascii_digit())
        && (1..=2).contains(&day.len())
        && (after.is_empty() || after.starts_with(['T', 't', ' ']))
}

/// YAML 1.1's base 60 integers (`1:20`, `190:20:30`).
fn sexagesimal(s: &str) -> Option<i128> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut parts = body.split(':');
    let head = parts.next()?;
    if head.is_empty() || !head.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    let mut v: i128 = head.replace('_', "").parse().ok()?;
    let mut any = false;
    for p in parts {
        any = true;
        if p.is_empty() || p.len() > 2 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let d: i128 = p.parse().ok()?;
        if d >= 60 {
            return None;
        }
        v = v.checked_mul(60)? + d;
    }
    any.then(|| if s.starts_with('-') { -v } else { v })
}

/// The value serde_yaml (and so the engine and the suites' oracle) gives a scalar, for deciding
/// whether the function changed it; `None` when serde_yaml gives none.
fn serde_view(n: &Node, memo: &mut HashMap<String, Option<Value>>) -> Option<Value> {
    let Node::Scalar { text, plain, tag } = n else {
        return None;
    };
    match tag.as_deref() {
        None if !plain => Some(Value::String(text.clone())),
        None => memo
            .entry(text.clone())
            .or_insert_with(|| serde_yaml::from_str::<Value>(text).ok())
            .clone(),
        // serde_yaml's reading of the core tags (`!!binary`, `!!timestamp` and the non-specific
        // `!` keep the text as a string); a local tag stays apart.
        Some(t) => match t.strip_prefix(CORE) {
            Some("int" | "float" | "bool" | "null") => serde_yaml::from_str(&format!("{t} {text}"))
                .ok()
                .or_else(|| serde_yaml::from_str(text).ok()),
            Some(_) => Some(Value::String(text.clone())),
            None if t == "!" => Some(Value::String(text.clone())),
            None => Some(Value::String(format!("{t} {text} {plain}"))),
        },
    }
}

/// `apiVersion`, `kind`, namespace and name of an item, as text.
fn identity(item: &Node) -> Option<[String; 4]> {
    let get = |n: &Node, key: &str| -> Option<Node> {
        let Node::Map(m) = n else { return None };
        m.iter()
            .find(|(k, _)| matches!(k, Node::Scalar { text, .. } if text == key))
            .map(|(_, v)| v.clone())
    };
    let text = |n: Option<Node>| match n {
        Some(Node::Scalar { text, .. }) => text,
        _ => String::new(),
    };
    let meta = get(item, "metadata");
    Some([
        text(get(item, "apiVersion")),
        text(get(item, "kind")),
        text(meta.as_ref().and_then(|m| get(m, "namespace"))),
        text(meta.as_ref().and_then(|m| get(m, "name"))),
    ])
}

fn items(doc: &Node) -> &[Node] {
    let Node::Map(m) = doc else { return &[] };
    m.iter()
        .find(|(k, _)| matches!(k, Node::Scalar { text, .. } if text == "items"))
        .and_then(|(_, v)| match v {
            Node::Seq(s) => Some(s.as_slice()),
            _ => None,
        })
        .unwrap_or(&[])
}

/// The check of the module doc on one run: `input` and the function's `output`.
pub fn untouched_keep_types(input: &[u8], output: &[u8]) -> Result<(), Finding> {
    if output.is_empty() {
        return Ok(());
    }
    let (Some(before), Some(after)) = (document(input), document(output)) else {
        return Ok(());
    };
    let mut by_id: HashMap<[String; 4], Option<&Node>> = HashMap::new();
    for item in items(&before) {
        if let Some(id) = identity(item) {
            // Two items with one identity: neither is compared.
            by_id
                .entry(id)
                .and_modify(|e| *e = None)
                .or_insert(Some(item));
        }
    }
    let mut memo = HashMap::new();
    for (i, item) in items(&after).iter().enumerate() {
        let Some(Some(old)) = identity(item).and_then(|id| by_id.get(&id)) else {
            continue;
        };
        let mut path = format!("items[{i}]");
        compare(old, item, &mut path, &mut memo)?;
    }
    Ok(())
}

fn compare(
    old: &Node,
    new: &Node,
    path: &mut String,
    memo: &mut HashMap<String, Option<Value>>,
) -> Result<(), Finding> {
    match (old, new) {
        (Node::Scalar { .. }, Node::Scalar { .. }) => scalar_pair(old, new, path, memo),
        (Node::Seq(a), Node::Seq(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                compare(x, y, path, memo)?;
                path.truncate(len);
            }
            Ok(())
        }
        (Node::Map(a), Node::Map(b)) => {
            for (k, v) in a {
                let Some(kv) = serde_view(k, memo) else {
                    continue;
                };
                let Some((k2, v2)) = b
                    .iter()
                    .find(|(k2, _)| serde_view(k2, memo).as_ref() == Some(&kv))
                else {
                    continue;
                };
                let len = path.len();
                path.push('.');
                path.push_str(&crate::fuzz::truncate(&format!("{kv:?}"), 60));
                scalar_pair(k, k2, &mut format!("{path} (key)"), memo)?;
                compare(v, v2, path, memo)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn scalar_pair(
    old: &Node,
    new: &Node,
    path: &mut String,
    memo: &mut HashMap<String, Option<Value>>,
) -> Result<(), Finding> {
    let (Some(a), Some(b)) = (serde_view(old, memo), serde_view(new, memo)) else {
        return Ok(());
    };
    let same = a == b
        || matches!((&a, &b), (Value::Number(x), Value::Number(y))
            if x.as_f64().is_some_and(f64::is_nan) && y.as_f64().is_some_and(f64::is_nan));
    if !same {
        return Ok(());
    }
    for reader in [Reader::V3, Reader::Yaml11] {
        let (x, y) = (typed(old, reader), typed(new, reader));
        if x != y {
            return Err(Finding::new(
                Failure::TypeChanged,
                format!(
                    "{path}: unchanged to serde_yaml ({a:?}) but {x:?} in the input and {y:?} in \
                     the output to {reader:?} (input {old:?}, output {new:?})"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, reader: Reader) -> Typed {
        let doc = document(format!("- {text}\n").as_bytes()).unwrap();
        let Node::Seq(s) = doc else { panic!() };
        typed(&s[0], reader)
    }

    #[test]
    fn go_yaml_types() {
        use Reader::*;
        assert_eq!(read("0644", V3), Typed::Int(420));
        assert_eq!(read("012", V3), Typed::Int(10));
        assert_eq!(read("08", V3), float_bits(8.0));
        assert_eq!(read("1_000", V3), Typed::Int(1000));
        assert_eq!(read("0o17", V3), Typed::Int(15));
        assert_eq!(read("0x1F", V3), Typed::Int(31));
        assert_eq!(read("1e3", V3), float_bits(1000.0));
        assert_eq!(read(".5", V3), float_bits(0.5));
        assert_eq!(read("+1", V3), Typed::Int(1));
        assert_eq!(read("\"0644\"", V3), Typed::Str("0644".into()));
        assert_eq!(read("!!binary aGk=", V3), Typed::Binary("aGk=".into()));
        assert_eq!(
            read("!!timestamp 2001-12-14", V3),
            Typed::Timestamp("2001-12-14".into())
        );
        assert_eq!(
            read("2001-12-14", V3),
            Typed::Timestamp("2001-12-14".into())
        );
        assert_eq!(read("=", V3), Typed::Str("=".into()));
        assert_eq!(read("=", Yaml11), Typed::ValueKey);
        assert_eq!(read("on", Yaml11), Typed::Bool(true));
        assert_eq!(read("1:20", Yaml11), Typed::Int(80));
        assert_eq!(read("10.0.0.1", V3), Typed::Str("10.0.0.1".into()));
    }
}

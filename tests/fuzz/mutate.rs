//! Mutations for the mutation fuzzer: damage to the bytes (truncation, flips, invalid UTF-8,
//! BOM, CRLF, tabs, duplicated lines) and to the document (type swaps, huge values, deep
//! nesting, alias bombs, missing or wrong `apiVersion`/`kind`/`metadata.name`, several
//! documents). Each returns a description for the failure report.

use serde_yaml::{Mapping, Value};

use super::Rng;
use super::style;

/// A family of mutations (the fuzzer can leave families out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mutation {
    Truncate,
    ByteFlip,
    InsertSyntax,
    InvalidUtf8,
    DuplicateLine,
    MoveLines,
    TabIndent,
    Bom,
    Crlf,
    TypeSwap,
    HugeString,
    BigNumber,
    DeepFlow,
    /// Thousands of keys, each a 999-deep flow list (just under the depth limit).
    ManyDeepFlow,
    DeepBlock,
    AliasBomb,
    /// An alias bomb padded with a long list, so the input's size raises serde_yaml's alias
    /// budget.
    PaddedAliasBomb,
    KrmFields,
    MultiDocument,
    TinyDocument,
    Results,
    FunctionConfig,
}

impl Mutation {
    pub const ALL: &'static [Mutation] = &[
        Mutation::Truncate,
        Mutation::ByteFlip,
        Mutation::InsertSyntax,
        Mutation::InvalidUtf8,
        Mutation::DuplicateLine,
        Mutation::MoveLines,
        Mutation::TabIndent,
        Mutation::Bom,
        Mutation::Crlf,
        Mutation::TypeSwap,
        Mutation::HugeString,
        Mutation::BigNumber,
        Mutation::DeepFlow,
        Mutation::ManyDeepFlow,
        Mutation::DeepBlock,
        Mutation::AliasBomb,
        Mutation::PaddedAliasBomb,
        Mutation::KrmFields,
        Mutation::MultiDocument,
        Mutation::TinyDocument,
        Mutation::Results,
        Mutation::FunctionConfig,
    ];

    /// Mutations of the document tree (the others work on bytes).
    fn on_tree(self) -> bool {
        matches!(
            self,
            Mutation::TypeSwap
                | Mutation::HugeString
                | Mutation::BigNumber
                | Mutation::DeepFlow
                | Mutation::ManyDeepFlow
                | Mutation::DeepBlock
                | Mutation::AliasBomb
                | Mutation::PaddedAliasBomb
                | Mutation::KrmFields
                | Mutation::Results
                | Mutation::FunctionConfig
        )
    }
}

/// A mutated input and what was done to it.
pub struct Mutated {
    pub bytes: Vec<u8>,
    pub applied: Vec<(Mutation, String)>,
}

/// Applies one to three mutations from `allowed` to `doc` (written as `text`).
pub fn mutate(doc: &Value, text: &str, allowed: &[Mutation], rng: &mut Rng) -> Mutated {
    let count = 1 + rng.below(3);
    let picks: Vec<Mutation> = (0..count).map(|_| *rng.pick(allowed)).collect();
    let mut applied = Vec::new();
    // Tree mutations first, on the document; then the text is written and damaged.
    let mut doc = doc.clone();
    let mut raw_tail: Option<String> = None;
    let mut tree_changed = false;
    for &m in picks.iter().filter(|m| m.on_tree()) {
        let what = match m {
            Mutation::TypeSwap => type_swap(&mut doc, rng),
            Mutation::HugeString => huge_string(&mut doc, rng),
            Mutation::BigNumber => big_number(&mut doc, rng, &mut raw_tail),
            Mutation::DeepFlow => deep(&mut doc, rng, true, &mut raw_tail),
            Mutation::ManyDeepFlow => many_deep(rng, &mut raw_tail),
            Mutation::DeepBlock => deep(&mut doc, rng, false, &mut raw_tail),
            Mutation::AliasBomb => alias_bomb(rng, false, &mut raw_tail),
            Mutation::PaddedAliasBomb => alias_bomb(rng, true, &mut raw_tail),
            Mutation::KrmFields => krm_fields(&mut doc, rng),
            Mutation::Results => results(&mut doc, rng),
            Mutation::FunctionConfig => function_config(&mut doc, rng),
            _ => unreachable!(),
        };
        tree_changed = true;
        applied.push((m, what));
    }
    let mut bytes = if tree_changed {
        style::plain(&doc).into_bytes()
    } else {
        text.as_bytes().to_vec()
    };
    if let Some(tail) = raw_tail {
        // Text that no tree can hold (numbers past 64 bits, nesting past serde_yaml's limit,
        // aliases): appended as an extra entry of the last item's metadata... or the document.
        splice_raw(&mut bytes, &tail, rng);
    }
    for &m in picks.iter().filter(|m| !m.on_tree()) {
        let what = match m {
            Mutation::Truncate => {
                let at = rng.below(bytes.len().max(1));
                bytes.truncate(at);
                format!("truncated at byte {at}")
            }
            Mutation::ByteFlip => {
                let n = 1 + rng.below(4);
                for _ in 0..n {
                    if bytes.is_empty() {
                        break;
                    }
                    let at = rng.below(bytes.len());
                    bytes[at] ^= 1 << rng.below(8);
                }
                format!("{n} bit flips")
            }
            Mutation::InsertSyntax => {
                const SYNTAX: &[&str] = &[
                    ":",
                    "- ",
                    " ",
                    "\n",
                    "'",
                    "\"",
                    "{",
                    "}",
                    "[",
                    "]",
                    "&a ",
                    "*a",
                    "!",
                    "|",
                    ">",
                    "# ",
                    "\t",
                    "%",
                    "@",
                    "? ",
                    "<<: ",
                    "---\n",
                    "...\n",
                    "\\",
                    ",",
                    "!!binary ",
                ];
                let what = *rng.pick(SYNTAX);
                let at = rng.below(bytes.len() + 1);
                bytes.splice(at..at, what.bytes());
                format!("inserted {what:?} at byte {at}")
            }
            Mutation::InvalidUtf8 => {
                const BAD: &[&[u8]] = &[
                    b"\xff",
                    b"\xc3",
                    b"\xc0\xaf",
                    b"\xed\xa0\x80",
                    b"\xf4\x90\x80\x80",
                    b"\x80",
                    b"\x00",
                ];
                let what = *rng.pick(BAD);
                let at = rng.below(bytes.len() + 1);
                bytes.splice(at..at, what.iter().copied());
                format!("inserted bytes {what:?} at byte {at}")
            }
            Mutation::DuplicateLine => {
                let lines = line_starts(&bytes);
                let i = rng.below(lines.len());
                let line = bytes[lines[i]..line_end(&bytes, lines[i])].to_vec();
                let end = line_end(&bytes, lines[i]);
                let mut ins = vec![b'\n'];
                ins.extend(&line);
                bytes.splice(end..end, ins);
                format!("line {} duplicated", i + 1)
            }
            Mutation::MoveLines => {
                let lines = line_starts(&bytes);
                let a = rng.below(lines.len());
                let b = (a + 1 + rng.below(5)).min(lines.len());
                let end = if b < lines.len() {
                    lines[b]
                } else {
                    bytes.len()
                };
                let chunk: Vec<u8> = bytes.drain(lines[a]..end).collect();
                let lines = line_starts(&bytes);
                let to = lines[rng.below(lines.len())];
                let len = chunk.len();
                bytes.splice(to..to, chunk);
                format!("{len} bytes of lines {}..{b} moved to byte {to}", a + 1)
            }
            Mutation::TabIndent => {
                let lines = line_starts(&bytes);
                let i = rng.below(lines.len());
                let at = lines[i];
                if bytes.get(at..at + 2) == Some(b"  ") {
                    bytes.splice(at..at + 2, [b'\t']);
                }
                format!("tab indentation on line {}", i + 1)
            }
            Mutation::Bom => {
                bytes.splice(0..0, "\u{feff}".bytes());
                "BOM".into()
            }
            Mutation::Crlf => {
                let mixed = rng.chance(50);
                let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 20);
                for &b in &bytes {
                    if b == b'\n' && (!mixed || rng.chance(50)) {
                        out.push(b'\r');
                    }
                    out.push(b);
                }
                bytes = out;
                if mixed { "mixed CRLF and LF" } else { "CRLF" }.into()
            }
            Mutation::MultiDocument => {
                let extra: &[u8] = match rng.below(3) {
                    0 => b"---\napiVersion: v1\nkind: ConfigMap\n",
                    1 => b"---\n",
                    _ => b"...\n---\nitems: []\n",
                };
                bytes.extend_from_slice(extra);
                "a second document".into()
            }
            Mutation::TinyDocument => {
                const TINY: &[&str] = &[
                    "",
                    " ",
                    "\n",
                    "null",
                    "~",
                    "[]",
                    "{}",
                    "---",
                    "...",
                    "items:",
                    "kind: ResourceList",
                    "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n",
                    "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: {}\n",
                    "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [null]\n",
                    "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [[]]\n",
                    "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig: 5\n",
                    "\u{feff}",
                    "{\"apiVersion\": \"config.kubernetes.io/v1\", \"kind\": \"ResourceList\", \"items\": []}",
                ];
                let what = *rng.pick(TINY);
                bytes = what.as_bytes().to_vec();
                format!("replaced by {what:?}")
            }
            _ => unreachable!(),
        };
        applied.push((m, what));
    }
    Mutated { bytes, applied }
}

fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .filter(|&i| i < bytes.len()),
    );
    v
}

fn line_end(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| start + p)
}

/// Puts raw YAML text `tail` (one mapping entry, `key: value`, at column 0) into the document:
/// as a new top-level entry, or into an item by re-indenting it under the item's first line.
fn splice_raw(bytes: &mut Vec<u8>, tail: &str, rng: &mut Rng) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let item_starts: Vec<usize> = text.match_indices("\n- ").map(|(i, _)| i + 1).collect();
    if item_starts.is_empty() || rng.chance(30) {
        // Top level, right after `kind: ResourceList` or at the end.
        let mut out = text;
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(tail);
        out.push('\n');
        *bytes = out.into_bytes();
        return;
    }
    let at = *rng.pick(&item_starts);
    let end = text[at..].find('\n').map_or(text.len(), |p| at + p + 1);
    let indented: String = tail.lines().map(|l| format!("  {l}\n")).collect();
    let mut out = text[..end].to_owned();
    out.push_str(&indented);
    out.push_str(&text[end..]);
    *bytes = out.into_bytes();
}

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

fn type_swap(doc: &mut Value, rng: &mut Rng) -> String {
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

fn huge_string(doc: &mut Value, rng: &mut Rng) -> String {
    let len = [2_000, 70_000, 1 << 20, 4 << 20][rng.below(4)];
    let unit = *rng.pick(&["a", "é", "x y ", "line\n", "'\"", "\\t"]);
    let s = unit.repeat(len / unit.len());
    *random_node(doc, rng) = Value::String(s);
    format!("a {len}-byte string of {unit:?}")
}

fn big_number(doc: &mut Value, rng: &mut Rng, raw: &mut Option<String>) -> String {
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

fn deep(doc: &mut Value, rng: &mut Rng, flow: bool, raw: &mut Option<String>) -> String {
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

fn many_deep(rng: &mut Rng, raw: &mut Option<String>) -> String {
    let keys = [300, 1_000, 3_000][rng.below(3)];
    let list = format!("{}x{}", "[".repeat(999), "]".repeat(999));
    let mut s = String::from("deepLists:\n");
    for k in 0..keys {
        s.push_str(&format!("  k{k}: {list}\n"));
    }
    *raw = Some(s);
    format!("{keys} keys of 999-deep flow lists")
}

fn alias_bomb(rng: &mut Rng, padded: bool, raw: &mut Option<String>) -> String {
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

fn krm_fields(doc: &mut Value, rng: &mut Rng) -> String {
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

fn results(doc: &mut Value, rng: &mut Rng) -> String {
    let value: Value = serde_yaml::from_str(match rng.below(4) {
        0 => "[{message: earlier, severity: error}]",
        1 => "{items: [{message: legacy}]}",
        2 => "[5, null, [], {severity: nonsense}]",
        _ => "oops",
    })
    .unwrap();
    let what = format!("results set to {}", super::check::yaml(&value).trim());
    if let Some(m) = doc.as_mapping_mut() {
        m.insert("results".into(), value);
    }
    what
}

fn function_config(doc: &mut Value, rng: &mut Rng) -> String {
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
        super::check::yaml(&value).trim()
    );
    if let Some(m) = doc.as_mapping_mut() {
        m.insert("functionConfig".into(), value);
    }
    what
}

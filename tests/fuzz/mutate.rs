//! Mutations for the mutation fuzzer: damage to the bytes (truncation, flips, invalid UTF-8,
//! BOM, CRLF, tabs, duplicated lines) and to the document (type swaps, huge values, deep
//! nesting, alias bombs, missing or wrong `apiVersion`/`kind`/`metadata.name`, several
//! documents). Each returns a description for the failure report.

mod tree;

use std::borrow::Cow;

use serde_yaml::Value;

use super::Rng;
use super::style;
use tree::*;

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
    /// A scalar value's text replaced by a spelling go-yaml or YAML 1.1 readers read as another
    /// type than serde_yaml does (`0644`, `1_000`, `!!binary …`, `=`), for the typed checks.
    Spellings,
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
        Mutation::Spellings,
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
    // Tree mutations first, on the document; then the text is written and damaged. The
    // document is copied only when a tree mutation is picked.
    let mut doc = Cow::Borrowed(doc);
    let mut raw_tail: Option<String> = None;
    let mut tree_changed = false;
    for &m in picks.iter().filter(|m| m.on_tree()) {
        let doc = doc.to_mut();
        let what = match m {
            Mutation::TypeSwap => type_swap(doc, rng),
            Mutation::HugeString => huge_string(doc, rng),
            Mutation::BigNumber => big_number(doc, rng, &mut raw_tail),
            Mutation::DeepFlow => deep(doc, rng, true, &mut raw_tail),
            Mutation::ManyDeepFlow => many_deep(rng, &mut raw_tail),
            Mutation::DeepBlock => deep(doc, rng, false, &mut raw_tail),
            Mutation::AliasBomb => alias_bomb(rng, false, &mut raw_tail),
            Mutation::PaddedAliasBomb => alias_bomb(rng, true, &mut raw_tail),
            Mutation::KrmFields => krm_fields(doc, rng),
            Mutation::Results => results(doc, rng),
            Mutation::FunctionConfig => function_config(doc, rng),
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
        let what = damage_text(m, &mut bytes, rng);
        applied.push((m, what));
    }
    Mutated { bytes, applied }
}

/// Applies text mutation `m` to `bytes`, the written document, and says what it did.
fn damage_text(m: Mutation, bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    match m {
        Mutation::Truncate => truncate(bytes, rng),
        Mutation::Spellings => spellings(bytes, rng),
        Mutation::ByteFlip => byte_flips(bytes, rng),
        Mutation::InsertSyntax => insert_syntax(bytes, rng),
        Mutation::InvalidUtf8 => invalid_utf8(bytes, rng),
        Mutation::DuplicateLine => duplicate_line(bytes, rng),
        Mutation::MoveLines => move_lines(bytes, rng),
        Mutation::TabIndent => tab_indent(bytes, rng),
        Mutation::Bom => {
            bytes.splice(0..0, "\u{feff}".bytes());
            "BOM".into()
        }
        Mutation::Crlf => crlf(bytes, rng),
        Mutation::MultiDocument => multi_document(bytes, rng),
        Mutation::TinyDocument => tiny_document(bytes, rng),
        _ => unreachable!(),
    }
}

/// Cuts the text at a random byte.
fn truncate(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    let at = rng.below(bytes.len().max(1));
    bytes.truncate(at);
    format!("truncated at byte {at}")
}

/// Flips one to four bits.
fn byte_flips(bytes: &mut [u8], rng: &mut Rng) -> String {
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

/// Inserts one piece of YAML syntax at a random byte.
fn insert_syntax(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
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

/// Inserts bytes that are not UTF-8 (or a NUL) at a random byte.
fn invalid_utf8(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
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

/// Writes a line twice.
fn duplicate_line(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    let lines = line_starts(bytes);
    let i = rng.below(lines.len());
    let line = bytes[lines[i]..line_end(bytes, lines[i])].to_vec();
    let end = line_end(bytes, lines[i]);
    let mut ins = vec![b'\n'];
    ins.extend(&line);
    bytes.splice(end..end, ins);
    format!("line {} duplicated", i + 1)
}

/// Moves one to five lines elsewhere.
fn move_lines(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    let lines = line_starts(bytes);
    let a = rng.below(lines.len());
    let b = (a + 1 + rng.below(5)).min(lines.len());
    let end = if b < lines.len() {
        lines[b]
    } else {
        bytes.len()
    };
    let chunk: Vec<u8> = bytes.drain(lines[a]..end).collect();
    let lines = line_starts(bytes);
    let to = lines[rng.below(lines.len())];
    let len = chunk.len();
    bytes.splice(to..to, chunk);
    format!("{len} bytes of lines {}..{b} moved to byte {to}", a + 1)
}

/// Indents a line with a tab where it had two spaces.
fn tab_indent(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    let lines = line_starts(bytes);
    let i = rng.below(lines.len());
    let at = lines[i];
    if bytes.get(at..at + 2) == Some(b"  ") {
        bytes.splice(at..at + 2, [b'\t']);
    }
    format!("tab indentation on line {}", i + 1)
}

/// Ends every line, or a random half of them, with CRLF.
fn crlf(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    let mixed = rng.chance(50);
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 20);
    for &b in bytes.iter() {
        if b == b'\n' && (!mixed || rng.chance(50)) {
            out.push(b'\r');
        }
        out.push(b);
    }
    *bytes = out;
    if mixed { "mixed CRLF and LF" } else { "CRLF" }.into()
}

/// Appends a second YAML document.
fn multi_document(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    let extra: &[u8] = match rng.below(3) {
        0 => b"---\napiVersion: v1\nkind: ConfigMap\n",
        1 => b"---\n",
        _ => b"...\n---\nitems: []\n",
    };
    bytes.extend_from_slice(extra);
    "a second document".into()
}

/// Replaces the document with a tiny one, valid YAML or not.
fn tiny_document(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
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
    *bytes = what.as_bytes().to_vec();
    format!("replaced by {what:?}")
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

/// Spellings that go-yaml (or a YAML 1.1 reader) reads as another value or type than serde_yaml.
pub const SPELLINGS: &[&str] = &[
    "0644",
    "012",
    "08",
    "1_000",
    "0o17",
    "0x1F",
    "1e3",
    ".5",
    "+1",
    "!!binary aGVsbG8=",
    "!!timestamp 2001-12-14",
    "=",
];

/// Replaces the values of one to eight `key: value` lines (a plain one-line value) with
/// [`SPELLINGS`], and sometimes adds a `fuzzTyped: <spelling>` line after one.
fn spellings(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return "no spellings (not UTF-8)".into();
    };
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let candidates: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let body = l.trim_end_matches(['\n', '\r']);
            let Some((key, value)) = body.split_once(": ") else {
                return false;
            };
            let key = key.trim_start_matches([' ', '-']);
            !key.is_empty()
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
                && !value.is_empty()
                && value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
                && !matches!(key, "apiVersion" | "kind" | "name" | "namespace")
        })
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return "no spellings (no plain value)".into();
    }
    let n = 1 + rng.below(8);
    let mut done = Vec::new();
    for _ in 0..n {
        let i = candidates[rng.below(candidates.len())];
        let spelling = *rng.pick(SPELLINGS);
        let line = &lines[i];
        let end = line.trim_end_matches(['\n', '\r']).len();
        let colon = line.find(": ").unwrap_or(0) + 2;
        let mut new = format!("{}{spelling}{}", &line[..colon], &line[end..]);
        if rng.chance(25) {
            let indent = line.len() - line.trim_start_matches([' ', '-']).len();
            let pad = " ".repeat(indent);
            new.push_str(&format!("{pad}fuzzTyped: {}\n", rng.pick(SPELLINGS)));
        }
        lines[i] = new;
        done.push(format!("line {}: {spelling}", i + 1));
    }
    *bytes = lines.concat().into_bytes();
    done.join(", ")
}

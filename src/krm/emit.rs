//! A YAML emitter for `serde_yaml::Value`, written for KRM output.
//!
//! Why not `serde_yaml::to_writer`: it writes strings such as `on`, `yes`, `off` or `0755` plain,
//! which YAML 1.1 readers (sigs.k8s.io/yaml, used by `kubectl apply` and Flux) read back as
//! booleans or octal numbers — a ConfigMap value `"on"` would silently become `true`. This
//! emitter quotes every string that any YAML 1.1 or 1.2 reader could take for something else,
//! with double quotes as go-yaml v3 (and therefore kpt and kustomize) write them, so quoted values
//! in the user's files keep their quotes. Layout follows kyaml: two-space indent, compact
//! sequences (`- ` at the parent key's indent), literal block scalars for multi-line strings.

use std::fmt::Write;

use serde_yaml::value::Tag;
use serde_yaml::{Mapping, Value};

use super::yaml::spelling::{self, Spelled, Spellings};

/// Appends `value` as a YAML document body (no `---`) to `out`.
pub fn emit_document(out: &mut String, value: &Value) {
    match value {
        Value::Mapping(m) if !m.is_empty() => emit_mapping(out, m, 0, None),
        Value::Sequence(s) if !s.is_empty() => emit_sequence(out, s, 0, None),
        other => {
            emit_inline(out, other, 0);
            out.push('\n');
        }
    }
}

/// Where the input's spellings are looked up while a node is written: the spellings and the
/// node's path (see [`crate::krm::yaml::spelling`]).
type At<'a> = Option<(&'a Spellings<'a>, u64)>;

/// The path of the key hashed `h` of the mapping at `at`, and of its value.
fn entry_paths<'a>(at: At<'a>, key: &Value) -> (At<'a>, At<'a>) {
    match at {
        Some((sp, map)) => {
            let h = spelling::hash(key);
            (
                Some((sp, sp.resolve(spelling::key(map, h)))),
                Some((sp, sp.resolve(spelling::value(map, h)))),
            )
        }
        None => (None, None),
    }
}

/// The path of entry `i` of the sequence at `at`.
fn index_path<'a>(at: At<'a>, i: usize) -> At<'a> {
    at.map(|(sp, seq)| (sp, sp.resolve(spelling::index(seq, i))))
}

/// Emits a non-empty mapping whose keys start at column `indent`; the first key is written at
/// the current position (the caller has already indented it).
fn emit_mapping(out: &mut String, map: &Mapping, indent: usize, at: At<'_>) {
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        let (key_at, value_at) = entry_paths(at, key);
        emit_key(out, key, indent, key_at);
        match value {
            Value::Mapping(m) if !m.is_empty() => {
                out.push('\n');
                pad(out, indent + 2);
                emit_mapping(out, m, indent + 2, value_at);
            }
            Value::Sequence(s) if !s.is_empty() => {
                out.push('\n');
                pad(out, indent);
                emit_sequence(out, s, indent, value_at);
            }
            Value::Tagged(t) if is_block(&t.value) => {
                out.push(' ');
                write_tag(out, &t.tag);
                out.push('\n');
                pad(out, indent + 2);
                emit_block_body(out, &t.value, indent + 2, value_at);
            }
            scalar => {
                out.push(' ');
                emit_scalar(out, scalar, indent + 2, value_at);
                out.push('\n');
            }
        }
    }
}

/// Emits a non-empty sequence whose dashes are at column `indent`.
fn emit_sequence(out: &mut String, seq: &[Value], indent: usize, at: At<'_>) {
    for (i, item) in seq.iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        emit_entry_at(out, item, indent, index_path(at, i));
    }
}

/// Emits one sequence entry (`- ` and its value) whose dash is at column `indent`; the caller has
/// already indented the line.
pub fn emit_entry(out: &mut String, item: &Value, indent: usize) {
    emit_entry_at(out, item, indent, None);
}

/// Emits input item `index` of the items list at column 0 ([`emit_entry`]), its scalars that
/// still have the value they were read with written as the input spelled them (`spellings`).
pub fn emit_item(out: &mut String, item: &Value, spellings: &Spellings<'_>, index: usize) {
    if spellings.entries.is_empty() {
        return emit_entry(out, item, 0);
    }
    let path = spellings.resolve(spelling::index(spelling::ITEMS, index));
    emit_entry_at(out, item, 0, Some((spellings, path)));
}

fn emit_entry_at(out: &mut String, item: &Value, indent: usize, at: At<'_>) {
    out.push_str("- ");
    match item {
        Value::Mapping(m) if !m.is_empty() => emit_mapping(out, m, indent + 2, at),
        Value::Sequence(s) if !s.is_empty() => emit_sequence(out, s, indent + 2, at),
        Value::Tagged(t) if is_block(&t.value) => {
            write_tag(out, &t.tag);
            out.push('\n');
            pad(out, indent + 2);
            emit_block_body(out, &t.value, indent + 2, at);
        }
        scalar => {
            emit_scalar(out, scalar, indent + 2, at);
            out.push('\n');
        }
    }
}

/// A scalar (or empty collection) as [`emit_inline`] writes it, or as the input spelled it at
/// `at` when that spelling still reads as it.
fn emit_scalar(out: &mut String, v: &Value, indent: usize, at: At<'_>) {
    if let Some((sp, path)) = at {
        match sp.spelled(path, v, false) {
            Spelled::Text(text) => return out.push_str(&text),
            Spelled::Tag(tag) => {
                out.push_str(tag);
                out.push(' ');
            }
            Spelled::No => {}
        }
    }
    emit_inline(out, v, indent);
}

/// True when the emitter writes the string `s` plain (so as a plain scalar reads it).
pub(crate) fn plain_as_read(s: &str) -> bool {
    !s.is_empty() && plain_ok(s)
}

/// The emitter's one-line form of a scalar (what the loader compares a scalar's text with).
pub(crate) fn scalar(out: &mut String, v: &Value) {
    emit_inline(out, v, 0);
}

fn is_block(v: &Value) -> bool {
    matches!(v, Value::Mapping(m) if !m.is_empty())
        || matches!(v, Value::Sequence(s) if !s.is_empty())
}

fn emit_block_body(out: &mut String, v: &Value, indent: usize, at: At<'_>) {
    match v {
        Value::Mapping(m) => emit_mapping(out, m, indent, at),
        Value::Sequence(s) => emit_sequence(out, s, indent, at),
        _ => unreachable!("only called for block collections"),
    }
}

/// Appends the mapping entry `key: value` (both strings without newlines) at `indent`, exactly
/// as the mapping emitter writes it, followed by a newline.
pub fn emit_string_pair(out: &mut String, key: &str, value: &str, indent: usize) {
    debug_assert!(!key.contains('\n') && !value.contains('\n'));
    pad(out, indent);
    emit_string_key(out, key, indent);
    out.push(':');
    out.push(' ');
    emit_string(out, value, indent);
    out.push('\n');
}

/// Appends a string without newlines as a one-line scalar (plain when every reader reads it
/// back as this string, else double-quoted).
pub fn emit_one_line_string(out: &mut String, s: &str) {
    debug_assert!(!s.contains('\n'));
    emit_string(out, s, 0);
}

/// Longest key written as a simple key (`key: value`). YAML readers give up on a simple key
/// whose `:` is more than 1024 characters after its start (libyaml, go-yaml); unsafe-libyaml
/// counts bytes, so bytes it is. Longer keys are written as explicit `? key` / `: value`.
const MAX_SIMPLE_KEY: usize = 1024;

/// A string key, simple when short, else explicit (`? key`, then the `:` on the next line at
/// `indent`); the caller writes the `:`.
fn emit_string_key(out: &mut String, key: &str, indent: usize) {
    let start = out.len();
    emit_string(out, key, indent + 2);
    if out.len() - start > MAX_SIMPLE_KEY || out[start..].contains('\n') {
        out.truncate(start);
        out.push_str("? ");
        emit_string(out, key, indent + 2);
        // As after a value: a block scalar's last line break is written by its parent.
        out.push('\n');
        pad(out, indent);
    }
}

fn emit_key(out: &mut String, key: &Value, indent: usize, at: At<'_>) {
    if let Some((sp, path)) = at
        && !matches!(key, Value::Mapping(_) | Value::Sequence(_))
    {
        match sp.spelled(path, key, true) {
            Spelled::Text(text) if text.len() <= MAX_SIMPLE_KEY => {
                out.push_str(&text);
                out.push(':');
                return;
            }
            Spelled::Tag(tag) if !matches!(key, Value::Tagged(_)) => {
                // A multi-line key: explicit, its tag kept.
                out.push_str("? ");
                out.push_str(tag);
                out.push(' ');
                emit_inline(out, key, indent + 2);
                out.push('\n');
                pad(out, indent);
                out.push(':');
                return;
            }
            _ => {}
        }
    }
    match key {
        Value::String(s) => emit_string_key(out, s, indent),
        Value::Null | Value::Bool(_) | Value::Number(_) => emit_inline(out, key, 0),
        // Complex keys are legal YAML but never appear in KRM; write them as an explicit JSON
        // (flow) key so the output still parses to the same value.
        other => {
            out.push_str("? ");
            emit_flow(out, other);
            out.push('\n');
            pad(out, indent);
        }
    }
    out.push(':');
}

/// Writes a scalar (or an empty collection) after a `key: ` or `- `. Multi-line strings become
/// literal block scalars indented to `indent`.
fn emit_inline(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => emit_string(out, s, indent),
        Value::Sequence(_) => out.push_str("[]"),
        Value::Mapping(_) => out.push_str("{}"),
        Value::Tagged(t) => {
            write_tag(out, &t.tag);
            out.push(' ');
            emit_inline(out, &t.value, indent);
        }
    }
}

/// Writes a local tag as `!name`, every byte of `name` outside YAML's tag characters
/// percent-encoded: a tag read from `!a%20b` is `a b`, which written as is would end the tag at
/// the space; `!`, `%` and the flow indicators are encoded too, so the tag reads back as itself
/// in block and flow context alike.
fn write_tag(out: &mut String, tag: &Tag) {
    let shown = tag.to_string();
    // serde_yaml shows a tag as `!` and its name (a name that is `!` itself shows as `!!`).
    let name = shown.strip_prefix('!').unwrap_or(&shown);
    out.push('!');
    for &b in name.as_bytes() {
        let plain = b.is_ascii_alphanumeric() || b"-_;/?:@&=+$.~*'()".contains(&b);
        if plain {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// JSON-compatible flow form (used only for complex mapping keys).
fn emit_flow(out: &mut String, v: &Value) {
    match v {
        Value::Sequence(s) => {
            out.push('[');
            for (i, item) in s.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                emit_flow(out, item);
            }
            out.push(']');
        }
        Value::Mapping(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                // The same bound as for block keys: a longer key is written explicit
                // (`? key : value`), which flow mappings allow too.
                let start = out.len();
                emit_flow(out, k);
                if out.len() - start > MAX_SIMPLE_KEY {
                    out.insert_str(start, "? ");
                    out.push(' ');
                }
                out.push_str(": ");
                emit_flow(out, item);
            }
            out.push('}');
        }
        Value::String(s) => double_quoted(out, s),
        Value::Tagged(t) => {
            write_tag(out, &t.tag);
            out.push(' ');
            emit_flow(out, &t.value);
        }
        scalar => emit_inline(out, scalar, 0),
    }
}

fn emit_string(out: &mut String, s: &str, indent: usize) {
    if s.contains('\n') && literal_ok(s) {
        literal(out, s, indent);
    } else if plain_ok(s) {
        out.push_str(s);
    } else {
        double_quoted(out, s);
    }
}

/// Words that some YAML reader resolves to a bool or null (YAML 1.1 and 1.2, any case variant
/// those specs list).
const AMBIGUOUS_WORDS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
    "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~", "",
    // The merge key: YAML 1.1 readers and go-yaml resolve a plain `<<` to it, key or value.
    "<<",
    // The value key: YAML 1.1 readers resolve a plain `=` to it (PyYAML's `safe_load` refuses
    // it); go-yaml reads a string.
    "=",
];

/// True when `s` can be written as a plain scalar and every YAML 1.1/1.2 reader reads it back as
/// this same string.
fn plain_ok(s: &str) -> bool {
    // No ambiguous word is longer than 5 bytes: most strings are not looked up.
    if (s.len() <= 5 && AMBIGUOUS_WORDS.contains(&s)) || looks_numeric(s) {
        return false;
    }
    let bytes = s.as_bytes();
    let first = bytes[0];
    let last = bytes[bytes.len() - 1];
    if matches!(
        first,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
            | b' '
            | b'\t'
    ) || matches!(last, b' ' | b'\t' | b':')
    {
        return false;
    }
    if s.is_ascii() {
        // The checks below in one pass over the bytes (most strings are ASCII; four substring
        // searches and a char walk per string were the emitter's largest cost): no `: `, ` #`,
        // `:\t`, `\t#`, and no control character (tab included).
        return plain_ok_tail_ascii(s.as_bytes());
    }
    plain_ok_tail(s)
}

/// [`plain_ok_tail`] for ASCII text, in one pass.
fn plain_ok_tail_ascii(b: &[u8]) -> bool {
    b.iter().enumerate().all(|(i, &c)| {
        !(c < 0x20
            || c == 0x7f
            || (c == b':' && matches!(b.get(i + 1), Some(b' ' | b'\t')))
            || (c == b'#' && i > 0 && matches!(b[i - 1], b' ' | b'\t')))
    })
}

/// The last checks of [`plain_ok`], for any text.
fn plain_ok_tail(s: &str) -> bool {
    if s.contains(": ") || s.contains(" #") || s.contains(":\t") || s.contains("\t#") {
        return false;
    }
    // Control characters, the BOM and line separators need escapes.
    !s.chars().any(|c| {
        (c.is_control() && c != '\t')
            || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{85}')
    }) && !s.contains('\t')
}

/// Anything a YAML 1.1 or 1.2 reader could resolve to a number or timestamp: integers in any
/// base (`0755`, `0x1F`, `0o17`, `0b1`, `1_000`), floats (`1.5`, `.5`, `1e3`, `.inf`, `.nan`),
/// YAML 1.1 sexagesimals (`60:30`) and dates (`2001-12-14...`). Strings with several dots, such
/// as IP addresses and versions, are not numbers to any reader and stay plain.
fn looks_numeric(s: &str) -> bool {
    let r = s.strip_prefix(['+', '-']).unwrap_or(s);
    // Numbers, dates and sexagesimals start with a digit or a dot, and `inf`, `nan` and
    // `infinity` are the only words below: a name or a message is none of them.
    if r.as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() && !matches!(b.to_ascii_lowercase(), b'i' | b'n'))
    {
        return false;
    }
    // Lower-cased on the stack when short (every scalar goes through here; a heap copy each
    // showed in profiles). ASCII lower-casing keeps UTF-8 valid, so the fallback never runs.
    let mut buf = [0u8; 64];
    let owned;
    let lower: &str = match buf.get_mut(..r.len()) {
        Some(short) => {
            short.copy_from_slice(r.as_bytes());
            short.make_ascii_lowercase();
            match std::str::from_utf8(short) {
                Ok(text) => text,
                Err(_) => {
                    owned = r.to_ascii_lowercase();
                    &owned
                }
            }
        }
        None => {
            owned = r.to_ascii_lowercase();
            &owned
        }
    };
    if matches!(lower, ".inf" | ".nan" | "inf" | "nan" | "infinity") {
        return true;
    }
    let digits =
        |t: &str, ok: fn(u8) -> bool| !t.is_empty() && t.bytes().all(|b| ok(b) || b == b'_');
    let dec = |b: u8| b.is_ascii_digit();
    if let Some(rest) = lower.strip_prefix("0x") {
        return digits(rest, |b| b.is_ascii_hexdigit());
    }
    if let Some(rest) = lower.strip_prefix("0o") {
        return digits(rest, |b| (b'0'..=b'7').contains(&b));
    }
    if let Some(rest) = lower.strip_prefix("0b") {
        return digits(rest, |b| b == b'0' || b == b'1');
    }
    if digits(r, dec) && r.as_bytes()[0].is_ascii_digit() {
        return true;
    }
    if is_date_prefix(r) {
        return true;
    }
    // Sexagesimal: 1:20, 190:20:30(.5)
    if r.contains(':') {
        let mut parts = r.split(':');
        let head = parts.next().unwrap_or("");
        return digits(head, dec)
            && parts.all(|p| {
                let p = p.split_once('.').map_or(p, |(a, b)| {
                    if digits(b, dec) || b.is_empty() {
                        a
                    } else {
                        "x"
                    }
                });
                !p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit())
            });
    }
    // Floats: mantissa with at most one dot, optional exponent.
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (lower, None),
    };
    if let Some(e) = exponent {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        if !digits(e, dec) {
            return false;
        }
    }
    let mantissa = mantissa.strip_prefix(['+', '-']).unwrap_or(mantissa);
    match mantissa.split_once('.') {
        Some((int, frac)) => {
            (int.is_empty() || digits(int, dec))
                && (frac.is_empty() || digits(frac, dec))
                && mantissa.bytes().any(|b| b.is_ascii_digit())
        }
        None => exponent.is_some() && digits(mantissa, dec),
    }
}

/// `YYYY-M-D` at the start (YAML 1.1 timestamps).
fn is_date_prefix(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let (month, rest) = match rest.split_once('-') {
        Some(x) => x,
        None => return false,
    };
    let day: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (1..=2).contains(&month.len())
        && month.bytes().all(|c| c.is_ascii_digit())
        && (1..=2).contains(&day.len())
}

fn literal_ok(s: &str) -> bool {
    // Literal scalars cannot hold control characters (other than tab/newline), carriage returns,
    // or trailing spaces on a line (kept, but some tools strip them), nor start with a space on
    // the first line without an indentation indicator — fall back to double quotes for those.
    !s.starts_with(' ')
        && !s.starts_with('\n')
        && !s.chars().any(|c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{85}')
        })
        && !s
            .lines()
            .any(|l| l.ends_with(' ') || l.ends_with('\t') || l.starts_with('\t'))
}

fn literal(out: &mut String, s: &str, indent: usize) {
    let body = s.trim_end_matches('\n');
    let trailing = s.len() - body.len();
    out.push('|');
    match trailing {
        0 => out.push('-'),
        1 => {}
        _ => out.push('+'),
    }
    for line in s[..body.len()].split('\n') {
        out.push('\n');
        if !line.is_empty() {
            pad(out, indent);
            out.push_str(line);
        }
    }
    // With `+` the extra newlines are part of the value; the final one ends the scalar line.
    for _ in 1..trailing {
        out.push('\n');
    }
}

fn double_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if c.is_control() || c == '\u{feff}' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn pad(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass ASCII check agrees with the general one on every string of up to four
    /// characters from the characters that matter.
    #[test]
    fn ascii_tail_check_equals_general_check() {
        let alphabet = [b'a', b':', b' ', b'\t', b'#', b'\n', 0x7f, 0x01, b'1'];
        let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = strings
                .iter()
                .filter(|s| s.len() == strings.last().map_or(0, Vec::len))
                .flat_map(|s| {
                    alphabet.iter().map(move |&c| {
                        let mut t = s.clone();
                        t.push(c);
                        t
                    })
                })
                .collect();
            strings.extend(longer);
        }
        assert!(strings.len() > 7000);
        for b in &strings {
            let s = std::str::from_utf8(b).unwrap();
            assert_eq!(plain_ok_tail_ascii(b), plain_ok_tail(s), "{s:?}");
        }
    }

    #[test]
    fn numeric_check_is_the_same_for_long_strings() {
        let long = format!("{}1", "0".repeat(70));
        assert!(looks_numeric(&long));
        assert!(looks_numeric(&"1".repeat(64)));
        assert!(!looks_numeric(&"x".repeat(64)));
        assert!(looks_numeric("0X1F") && looks_numeric("-.INF") && looks_numeric("1E3"));
    }

    fn emit(v: &Value) -> String {
        let mut s = String::new();
        emit_document(&mut s, v);
        s
    }

    /// Emitting then parsing gives back the same value.
    fn roundtrip(src: &str) -> String {
        let v: Value = serde_yaml::from_str(src).unwrap();
        let out = emit(&v);
        let back: Value = serde_yaml::from_str(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert_eq!(back, v, "\n{out}");
        out
    }

    /// Local tags whose names hold characters a tag cannot show as they are (read from
    /// percent escapes) come out encoded and read back as the same tags, in block and flow
    /// context; the non-specific tag `!` leaves a string or a plain mapping.
    #[test]
    fn tags_read_back_as_themselves() {
        let src = "a: !x%20y 1\nb: !x%21 {k: !p%2C%5B%5D v}\nc: !%25 [1]\nd: ! 12\ne: ! {k: v}\n\
                   f: !ok-_;/?:@&=+$.~*'() [!t {x: y}]\ng: !x%21\n  k: v\n";
        let v = crate::krm::yaml::from_str(src).unwrap();
        let out = emit(&v);
        let back = crate::krm::yaml::from_str(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert_eq!(back, v, "\n{out}");
        assert!(out.contains("a: !x%20y 1\n"), "{out}");
        assert!(out.contains("!x%21"), "{out}");
        assert!(out.contains("f: !ok-_;/?:@&=+$.~*'()\n"), "{out}");
        assert_eq!(v["d"], Value::from("12"));
        assert_eq!(v["e"]["k"], Value::from("v"));
        // serde_yaml, a reader the engine does not share, agrees.
        let other: Value = serde_yaml::from_str(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert_eq!(other, v, "\n{out}");
    }

    #[test]
    fn layout_matches_kyaml() {
        let out = roundtrip(
            "kind: X\nmetadata:\n  name: a\n  labels: {}\nspec:\n  list:\n  - a: 1\n    b: [x, z]\n  - - 1\n    - 2\n  - []\n  empty: []\n",
        );
        assert_eq!(
            out,
            "kind: X\nmetadata:\n  name: a\n  labels: {}\nspec:\n  list:\n  - a: 1\n    b:\n    - x\n    - z\n  - - 1\n    - 2\n  - []\n  empty: []\n"
        );
    }

    #[test]
    fn ambiguous_strings_are_double_quoted() {
        let out = roundtrip(
            "a: 'on'\nb: 'yes'\nc: '0755'\nd: '1e3'\ne: 'true'\nf: ''\ng: '~'\nh: '2001-12-14'\ni: '60:30'\nj: '.inf'\nk: '- x'\nl: 'a: b'\nm: 'x #y'\nn: ' lead'\no: '0x1F'\np: '1_000'\nq: '+1'\nr: 'null'\ns: '1.5'\nt: '.5'\nu: '-2e-3'\nv: '1:20'\nw: '2026-11-30T01:02:03Z'\nx: '1.'\n",
        );
        for line in out.lines() {
            assert!(line.contains(": \""), "unquoted: {line}");
        }
    }

    /// The short cuts of `plain_ok` and `looks_numeric` hold: no ambiguous word is longer than
    /// 5 bytes, and the numeric words all start with `i` or `n` (any case, after a sign).
    #[test]
    fn the_short_cuts_of_the_plain_test_hold() {
        assert!(AMBIGUOUS_WORDS.iter().all(|w| w.len() <= 5));
        for word in [
            "inf",
            "Inf",
            "INF",
            "+inf",
            "-Infinity",
            "nan",
            "NaN",
            "NAN",
            ".inf",
            "+.Inf",
        ] {
            assert!(looks_numeric(word), "{word}");
        }
        for text in [
            "e5", "E5", "a1", "x0", "Zz", "+e1", "-f", "infx", "nanx", "no",
        ] {
            assert!(!looks_numeric(text), "{text}");
        }
    }

    #[test]
    fn ordinary_strings_stay_plain() {
        let out = roundtrip(
            "a: nginx:1.27.0\nb: quay.io/metallb/frr-k8s:v0.0.25\nc: 192.168.1.0/24\nd: hello world\ne: v1\nf: a-b\ng: 10m\nh: 192.168.123.200\ni: 1.27.0\nj: 192.168.123.200-192.168.123.250\nk: 1d\n",
        );
        assert!(!out.contains('"'), "{out}");
    }

    #[test]
    fn multiline_strings_are_literal_blocks() {
        let out = roundtrip(
            "a: |\n  line one\n  line two\nb: |-\n  no newline\n  end\nc: \"x\\n\\n\"\nd: \"  lead\\nx\"\ne: \"trail \\nx\"\n",
        );
        assert!(out.contains("a: |\n  line one\n  line two\n"), "{out}");
        assert!(out.contains("b: |-\n"), "{out}");
        assert!(out.contains("c: |+\n"), "{out}");
        assert!(out.contains("d: \"  lead\\nx\""), "{out}");
        roundtrip("list:\n- |\n  in a list\n  two\n- k: |\n    nested\n    x\n");
    }

    #[test]
    fn escapes_and_unicode() {
        roundtrip(
            "a: \"tab\\there\"\nb: \"bell\\a\"\nc: \"quote \\\" and \\\\\"\nd: \"\\u2028\"\ne: café ☕\n",
        );
    }

    #[test]
    fn numbers_bools_null_tags_and_odd_keys() {
        roundtrip(
            "1: one\ntrue: yes\nnull: ~\nf: 1.5\ni: -3\nbig: 18446744073709551615\ninf: .inf\nt: !custom {a: 1}\nu: !scalar x\n? [1, 2]\n: complex\n",
        );
        roundtrip("- !tag\n  - 1\n- x\n");
    }

    /// The engine's own reader (merge keys applied, long simple keys refused as libyaml
    /// refuses them) reads the emitted text back as the same value.
    fn read_back(out: &str) -> Value {
        let doc = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {}",
            out.replace('\n', "\n  ")
        );
        let list = crate::krm::io::parse(doc.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{doc}"));
        list.items[0].clone()
    }

    #[test]
    fn keys_read_back_as_the_same_keys() {
        let long = "k".repeat(1100);
        let long_quoted = "é".repeat(600);
        for key in [
            "<<",
            "a",
            "on",
            "- x",
            long.as_str(),
            long_quoted.as_str(),
            "two\nlines",
            "x\n\n",
        ] {
            let mut inner = Mapping::new();
            inner.insert(Value::from(key), Value::from("v"));
            inner.insert(Value::from("after"), Value::from(1));
            let mut outer = Mapping::new();
            outer.insert(Value::from("m"), Value::Mapping(inner));
            let v = Value::Mapping(outer);
            let out = emit(&v);
            assert_eq!(read_back(&out), v, "{key:?}\n{out}");
            let back: Value = serde_yaml::from_str(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
            assert_eq!(back, v, "{out}");
        }
        // `<<` is quoted wherever it is written.
        let mut m = Mapping::new();
        m.insert("<<".into(), "<<".into());
        assert_eq!(emit(&Value::Mapping(m)), "\"<<\": \"<<\"\n");
        // A key of exactly 1024 bytes is still simple; one more and it is explicit.
        let mut m = Mapping::new();
        m.insert(Value::from("k".repeat(1024)), 1.into());
        assert!(!emit(&Value::Mapping(m)).starts_with("? "));
        let mut m = Mapping::new();
        m.insert(Value::from("k".repeat(1025)), 1.into());
        assert!(emit(&Value::Mapping(m)).starts_with("? "));
        // Written as a simple key, it would not read back (the bound is the readers').
        let simple = format!(
            "a: [{{{}: 1}}]\n{}: 2\n",
            "k".repeat(1025),
            "k".repeat(1025)
        );
        assert!(serde_yaml::from_str::<Value>(&simple).is_err());
    }

    /// A complex key is written in flow form; the keys inside it obey the same 1024-byte bound
    /// as block keys, whether they are long strings or long complex keys themselves.
    #[test]
    fn long_keys_inside_a_complex_key_read_back() {
        let mut long_string_key = Mapping::new();
        long_string_key.insert(Value::from("k".repeat(1100)), 1.into());
        let mut long_complex_key = Mapping::new();
        let mut inner = Mapping::new();
        inner.insert(Value::Mapping(long_string_key.clone()), Value::Null);
        inner.insert(Value::from("short"), Value::from("x".repeat(1100)));
        long_complex_key.insert(Value::Mapping(inner), Value::Null);
        for key in [long_string_key, long_complex_key] {
            let mut m = Mapping::new();
            m.insert(Value::Mapping(key), Value::from("v"));
            let v = Value::Mapping(m);
            let out = emit(&v);
            assert_eq!(read_back(&out), v, "{out}");
            let back: Value = serde_yaml::from_str(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
            assert_eq!(back, v, "{out}");
        }
    }

    /// Pseudo-random strings over YAML's awkward characters survive emit → parse, as values,
    /// keys and sequence entries, at several nesting depths.
    #[test]
    fn random_strings_round_trip() {
        const ALPHABET: &[&str] = &[
            "a", "Z", "0", "7", ".", "-", ":", "#", " ", "'", "\"", "\n", "\t", "{", "}", "[", "]",
            ",", "!", "&", "*", "|", ">", "%", "@", "`", "?", "~", "e", "x", "_", "+", "é", "\\",
            "\r", "\u{1}", "on", "yes", "null", "0x", "1.5", ": ", " #",
        ];
        let mut rng = crate::test_rng::XorShift(0x9e3779b97f4a7c15);
        let mut next = move || rng.next_u64();
        for _ in 0..3000 {
            let len = (next() % 8) as usize;
            let s: String = (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect();
            let mut inner = Mapping::new();
            inner.insert(Value::from(s.clone()), Value::from(s.clone()));
            inner.insert(
                "list".into(),
                Value::Sequence(vec![Value::from(s.clone()), Value::from("x")]),
            );
            let mut outer = Mapping::new();
            outer.insert("v".into(), Value::from(s.clone()));
            outer.insert("m".into(), Value::Mapping(inner));
            let v = Value::Sequence(vec![Value::Mapping(outer), Value::from(s.clone())]);
            let out = emit(&v);
            let back: Value =
                serde_yaml::from_str(&out).unwrap_or_else(|e| panic!("{s:?}: {e}\n{out}"));
            assert_eq!(back, v, "{s:?}\n{out}");
        }
    }
}

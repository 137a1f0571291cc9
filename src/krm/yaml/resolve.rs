//! What a scalar means: serde_yaml 0.9's resolution for untagged scalars (so nothing in the
//! project changes meaning), the YAML core schema's explicit tags as go-yaml v3 reads them, and
//! integers beyond 64 bits refused instead of turned into floats.
//!
//! Untagged plain scalars (serde_yaml's `visit_untagged_scalar`): empty, `~`, `null`, `Null`,
//! `NULL` are null; `true`/`True`/`TRUE`/`false`/… booleans; integers in decimal (no leading
//! zero), `0x`, `0o`, `0b`, with one `+` or `-`; floats as Rust parses them plus `.inf`, `.nan`;
//! everything else a string. Quoted and block scalars are strings.
//!
//! Explicit tags (go-yaml v3 `resolve.go`): `!!null` on the empty string or a null word is null
//! (serde_yaml refused `!!null ""`); `!!bool`, `!!int`, `!!float` parse their value or fail;
//! `!!str` and every other `tag:yaml.org,2002:` tag (`!!binary`, `!!timestamp`) keep the text
//! as a string; a local tag (`!custom`) becomes a `Value::Tagged`, as in serde_yaml; the
//! non-specific tag `!` makes a scalar a string and leaves a collection as it is.

use serde_yaml::Value;
use serde_yaml::value::{Tag, TaggedValue};

use super::events::ScalarStyle;

/// The core schema's tag prefix (`!!` expands to it).
pub const CORE: &[u8] = b"tag:yaml.org,2002:";

/// Why a scalar cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScalarError {
    /// An integer that does not fit 64 bits.
    BigInteger(String),
    /// An explicit core tag whose value does not parse as that type.
    BadTagged {
        /// `!!int`, `!!null`, …
        tag: &'static str,
        /// The text.
        value: String,
    },
}

impl std::fmt::Display for ScalarError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScalarError::BigInteger(v) => write!(
                f,
                "integer {v} does not fit in 64 bits (Kubernetes tools would read it as an \
                 inexact float); quote it to keep it as a string"
            ),
            ScalarError::BadTagged { tag, value } => {
                write!(f, "{value:?} cannot be read as {tag}")
            }
        }
    }
}

/// The value of a scalar event.
pub fn scalar(text: &str, tag: Option<&[u8]>, style: ScalarStyle) -> Result<Value, ScalarError> {
    let Some(tag) = tag else {
        return if style == ScalarStyle::Plain {
            untagged(text)
        } else {
            Ok(Value::from(text))
        };
    };
    if let Some(local) = local_tag(tag) {
        let value = if style == ScalarStyle::Plain {
            untagged(text)?
        } else {
            Value::from(text)
        };
        return Ok(Value::Tagged(Box::new(TaggedValue { tag: local, value })));
    }
    let bad = |tag| ScalarError::BadTagged {
        tag,
        value: text.to_owned(),
    };
    match tag.strip_prefix(CORE) {
        Some(b"null") => match text {
            "" | "~" | "null" | "Null" | "NULL" => Ok(Value::Null),
            _ => Err(bad("!!null")),
        },
        Some(b"bool") => parse_bool(text)
            .map(Value::Bool)
            .ok_or_else(|| bad("!!bool")),
        Some(b"int") => match int(text) {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(e),
            None => Err(bad("!!int")),
        },
        Some(b"float") => parse_f64(text)
            .map(|f| Value::Number(f.into()))
            .ok_or_else(|| bad("!!float")),
        _ => Ok(Value::from(text)),
    }
}

/// A tag starting with `!` (not a core tag) as serde_yaml names it: without the `!`. The
/// non-specific tag `!` alone (`! 12`, `! {a: b}`) is no tag of its own: YAML gives the node
/// its kind's default (a string, a mapping, a sequence), as go-yaml's `resolve` does for a
/// scalar (an unresolvable tag keeps the text as a string), so it is `None` here.
pub fn local_tag(tag: &[u8]) -> Option<Tag> {
    let rest = tag.strip_prefix(b"!")?;
    if rest.is_empty() {
        return None;
    }
    Some(Tag::new(String::from_utf8_lossy(rest)))
}

/// An untagged plain scalar (serde_yaml's `visit_untagged_scalar`).
fn untagged(text: &str) -> Result<Value, ScalarError> {
    if text.is_empty() || matches!(text, "~" | "null" | "Null" | "NULL") {
        return Ok(Value::Null);
    }
    if let Some(b) = parse_bool(text) {
        return Ok(Value::Bool(b));
    }
    // Most strings start with a letter: skip the number parsers for them.
    let first = text.as_bytes()[0];
    if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.') {
        if let Some(v) = int(text) {
            return v;
        }
        if !digits_but_not_number(text)
            && let Some(f) = parse_f64(text)
        {
            return Ok(Value::Number(f.into()));
        }
    }
    Ok(Value::from(text))
}

/// Whether a plain untagged scalar may mean something other than its text as a string (and so
/// may fail to resolve, or equal a scalar spelled otherwise): the cases [`untagged`] tries
/// before it settles on a string. It takes the scalar's bytes: the skipping reader asks before
/// it needs the text.
pub fn plain_may_not_be_string(text: &[u8]) -> bool {
    let Some(&first) = text.first() else {
        return true;
    };
    matches!(
        text,
        b"~" | b"null"
            | b"Null"
            | b"NULL"
            | b"true"
            | b"True"
            | b"TRUE"
            | b"false"
            | b"False"
            | b"FALSE"
    ) || first.is_ascii_digit()
        || matches!(first, b'+' | b'-' | b'.')
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// An integer as serde_yaml reads one: `Some(Ok)` when it fits u64 or i64, `Some(Err)` when it
/// has integer syntax but does not fit (serde_yaml failed on 65 to 128 bits and read longer
/// decimals as floats; go-yaml reads them as floats or strings), `None` when it is no integer.
fn int(s: &str) -> Option<Result<Value, ScalarError>> {
    if let Some(u) = parse_unsigned(s) {
        return Some(Ok(Value::Number(u.into())));
    }
    if let Some(i) = parse_negative(s) {
        return Some(Ok(Value::Number(i.into())));
    }
    integer_syntax(s).then(|| Err(ScalarError::BigInteger(s.to_owned())))
}

/// serde_yaml's `parse_unsigned_int` for u64.
fn parse_unsigned(s: &str) -> Option<u64> {
    let unpositive = s.strip_prefix('+').unwrap_or(s);
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = unpositive.strip_prefix(prefix) {
            if rest.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(v) = u64::from_str_radix(rest, radix) {
                return Some(v);
            }
        }
    }
    if unpositive.starts_with(['+', '-']) || digits_but_not_number(s) {
        return None;
    }
    unpositive.parse().ok()
}

/// serde_yaml's `parse_negative_int` for i64.
fn parse_negative(s: &str) -> Option<i64> {
    for (prefix, radix) in [("-0x", 16), ("-0o", 8), ("-0b", 2)] {
        if let Some(rest) = s.strip_prefix(prefix)
            && let Ok(v) = i64::from_str_radix(&format!("-{rest}"), radix)
        {
            return Some(v);
        }
    }
    if digits_but_not_number(s) {
        return None;
    }
    s.parse().ok()
}

/// True for the integer forms serde_yaml parses, whatever their size: one optional sign, then
/// `0x`/`0o`/`0b` and digits of that base, or decimal digits without a leading zero.
fn integer_syntax(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let all = |t: &str, ok: fn(&u8) -> bool| !t.is_empty() && t.as_bytes().iter().all(ok);
    if let Some(rest) = body.strip_prefix("0x") {
        return all(rest, u8::is_ascii_hexdigit);
    }
    if let Some(rest) = body.strip_prefix("0o") {
        return all(rest, |b| (b'0'..=b'7').contains(b));
    }
    if let Some(rest) = body.strip_prefix("0b") {
        return all(rest, |b| matches!(b, b'0' | b'1'));
    }
    all(body, u8::is_ascii_digit) && !digits_but_not_number(s)
}

/// serde_yaml's `parse_f64`.
fn parse_f64(s: &str) -> Option<f64> {
    let unpositive = match s.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return None,
        Some(rest) => rest,
        None => s,
    };
    if let ".inf" | ".Inf" | ".INF" = unpositive {
        return Some(f64::INFINITY);
    }
    if let "-.inf" | "-.Inf" | "-.INF" = s {
        return Some(f64::NEG_INFINITY);
    }
    if let ".nan" | ".NaN" | ".NAN" = s {
        return Some(f64::NAN.copysign(1.0));
    }
    unpositive.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Leading zeros followed by digits: a string in YAML 1.2 (serde_yaml's rule).
fn digits_but_not_number(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    s.len() > 1 && s.starts_with('0') && s[1..].bytes().all(|b| b.is_ascii_digit())
}

/// An integer the engine must interpret (a value a mode reads, such as a rate limit), read as
/// go-yaml v3 resolves a plain scalar (`resolve.go`: `_` removed, then Go's `ParseInt` with base
/// 0 — `0x`, `0o`, `0b`, and a leading `0` for octal, so `0644` is 420 — then a float with an
/// integral value, so `08` is 8). A number already read is taken as it is; a string (serde_yaml
/// reads `0644`, `1_000` and `08` as strings) is read by those rules, the text trimmed.
pub fn go_yaml_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| n.as_f64().and_then(integral)),
        Value::String(s) => go_yaml_int_text(s.trim()),
        _ => None,
    }
}

/// [`go_yaml_i128`] as a `u64`.
pub fn go_yaml_u64(v: &Value) -> Option<u64> {
    go_yaml_i128(v).and_then(|i| u64::try_from(i).ok())
}

/// [`go_yaml_i128`] as an `i64`.
pub fn go_yaml_i64(v: &Value) -> Option<i64> {
    go_yaml_i128(v).and_then(|i| i64::try_from(i).ok())
}

fn integral(f: f64) -> Option<i128> {
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 1.8e19).then_some(f as i128)
}

fn go_yaml_int_text(text: &str) -> Option<i128> {
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    let (negative, body) = match plain.as_bytes().first() {
        Some(b'-') => (true, &plain[1..]),
        Some(b'+') => (false, &plain[1..]),
        _ => (false, plain.as_str()),
    };
    let lower = body.to_ascii_lowercase();
    let (digits, radix) = if let Some(rest) = lower.strip_prefix("0x") {
        (rest, 16)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (rest, 8)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (rest, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    let int = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| u64::from_str_radix(digits, radix).ok())
        .flatten()
        .map(|u| {
            if negative {
                -i128::from(u)
            } else {
                i128::from(u)
            }
        });
    if int.is_some() {
        return int;
    }
    // go-yaml's float syntax: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
    let float_syntax = {
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], Some(&body[i + 1..])),
            None => (body, None),
        };
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let mantissa_ok = match mantissa.split_once('.') {
            Some(("", frac)) => digits(frac),
            Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
            None => digits(mantissa),
        };
        let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
        mantissa_ok && exponent_ok
    };
    if !float_syntax {
        return None;
    }
    let f: f64 = body.parse().ok()?;
    integral(if negative { -f } else { f })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> Result<Value, ScalarError> {
        scalar(s, None, ScalarStyle::Plain)
    }

    /// Plain scalars of every kind serde_yaml resolves: nulls, booleans, integers in every base,
    /// floats, and strings that look like them.
    const PLAIN_SCALARS: &[&str] = &[
        "",
        "~",
        "null",
        "Null",
        "NULL",
        "nULL",
        "true",
        "True",
        "TRUE",
        "tRUE",
        "false",
        "yes",
        "on",
        "0",
        "-0",
        "+0",
        "00",
        "0755",
        "-0755",
        "+12",
        "+-1",
        "-+1",
        "12",
        "-12",
        "0x1F",
        "0X1F",
        "-0x1F",
        "+0x1F",
        "0x-1",
        "0o17",
        "-0o17",
        "0b101",
        "-0b101",
        "0b2",
        "1.5",
        "-1.5",
        "+1.5",
        ".5",
        "5.",
        "1e3",
        "1E3",
        "-2e-3",
        "1e400",
        ".inf",
        "-.inf",
        "+.inf",
        ".nan",
        ".NaN",
        "-.nan",
        "inf",
        "nan",
        "NaN",
        "infinity",
        "1_000",
        "1:20",
        "2001-12-14",
        "10.0.0.1",
        "1.27.0",
        "v1",
        "a b",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "18446744073709551615",
        "0x_1",
        "0.",
        "-.",
        ".",
        "+",
        "0x",
        "0o",
        "0b",
        "1e",
        "e3",
    ];

    /// The skipping reader's byte test flags every plain scalar that does not read as its own
    /// text: were one missed, a skipped key could equal another spelled otherwise.
    #[test]
    fn plain_may_not_be_string_flags_every_scalar_that_is_no_string() {
        for case in PLAIN_SCALARS
            .iter()
            .chain(&["False", "FALSE", "fALSE", "<<", "x1"])
        {
            let is_text = plain(case).is_ok_and(|v| v.as_str() == Some(case));
            assert!(
                is_text || plain_may_not_be_string(case.as_bytes()),
                "{case:?} reads as {:?}",
                plain(case)
            );
        }
        assert!(!plain_may_not_be_string(b"nginx"));
        assert!(
            !plain_may_not_be_string(b"yes"),
            "a string in YAML 1.2, as serde_yaml reads it"
        );
    }

    /// Untagged scalars read exactly as serde_yaml 0.9 reads them (every case where serde_yaml
    /// gives a value; the 65-to-128-bit integers it failed on are covered below).
    #[test]
    fn untagged_scalars_equal_serde_yaml() {
        for s in PLAIN_SCALARS {
            let want: Value = serde_yaml::from_str(&format!("k: {s}\n"))
                .map(|m: serde_yaml::Mapping| m["k"].clone())
                .unwrap_or_else(|e| panic!("{s:?}: {e}"));
            let got = plain(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            // NaN != NaN: compare the YAML text.
            assert_eq!(
                serde_yaml::to_string(&got).unwrap(),
                serde_yaml::to_string(&want).unwrap(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn integers_beyond_64_bits_are_errors() {
        for s in [
            "18446744073709551616",
            "-9223372036854775809",
            "340282366920938463463374607431768211456",
            "1844674407370955161600000000000000000000000",
            "0x10000000000000000",
            "-0x8000000000000001",
            "0o2000000000000000000000",
            "+18446744073709551616",
        ] {
            assert_eq!(
                plain(s),
                Err(ScalarError::BigInteger(s.to_owned())),
                "{s:?}"
            );
        }
        // Quoted, it is a string.
        assert_eq!(
            scalar("18446744073709551616", None, ScalarStyle::DoubleQuoted),
            Ok(Value::from("18446744073709551616"))
        );
        // A float with many digits stays a float.
        assert!(plain("18446744073709551616.0").unwrap().is_f64());
    }

    #[test]
    fn core_tags_read_as_go_yaml_reads_them() {
        let tag = |t: &str| format!("tag:yaml.org,2002:{t}").into_bytes();
        let s = |v: &str, t: &str, style| scalar(v, Some(&tag(t)), style);
        assert_eq!(s("", "null", ScalarStyle::DoubleQuoted), Ok(Value::Null));
        assert_eq!(s("~", "null", ScalarStyle::Plain), Ok(Value::Null));
        assert!(s("x", "null", ScalarStyle::Plain).is_err());
        assert_eq!(s("123", "str", ScalarStyle::Plain), Ok(Value::from("123")));
        assert_eq!(
            s("true", "str", ScalarStyle::Plain),
            Ok(Value::from("true"))
        );
        assert_eq!(
            s("12", "int", ScalarStyle::SingleQuoted),
            Ok(Value::from(12))
        );
        assert!(s("x", "int", ScalarStyle::Plain).is_err());
        assert!(matches!(
            s("18446744073709551616", "int", ScalarStyle::Plain),
            Err(ScalarError::BigInteger(_))
        ));
        assert_eq!(s("1", "float", ScalarStyle::Plain), Ok(Value::from(1.0)));
        assert_eq!(
            s("True", "bool", ScalarStyle::DoubleQuoted),
            Ok(Value::Bool(true))
        );
        assert!(s("yes", "bool", ScalarStyle::Plain).is_err());
        assert_eq!(
            s("aGk=", "binary", ScalarStyle::Plain),
            Ok(Value::from("aGk="))
        );
        assert_eq!(
            s("2001-12-14", "timestamp", ScalarStyle::Plain),
            Ok(Value::from("2001-12-14"))
        );
    }

    #[test]
    fn local_tags_are_tagged_values_as_in_serde_yaml() {
        for src in ["k: !custom 12\n", "k: !custom '12'\n"] {
            let want: serde_yaml::Mapping = serde_yaml::from_str(src).unwrap();
            let style = if src.contains('\'') {
                ScalarStyle::SingleQuoted
            } else {
                ScalarStyle::Plain
            };
            let got = scalar("12", Some(b"!custom"), style).unwrap();
            assert_eq!(got, want["k"], "{src}");
        }
    }

    /// Numbers a mode interprets read as go-yaml reads them.
    #[test]
    fn numbers_read_as_go_yaml_reads_them() {
        let read = |s: &str| go_yaml_i128(&plain(s).unwrap());
        for (text, want) in [
            ("0644", Some(420)),
            ("012", Some(10)),
            ("08", Some(8)),
            ("1_048_576", Some(1_048_576)),
            ("0o17", Some(15)),
            ("0x1F", Some(31)),
            ("0b101", Some(5)),
            ("1e3", Some(1000)),
            ("+1", Some(1)),
            ("-0644", Some(-420)),
            ("20", Some(20)),
            ("1.5", None),
            (".5", None),
            ("0x", None),
            ("abc", None),
            ("1_0.0", Some(10)),
        ] {
            assert_eq!(read(text), want, "{text}");
        }
        // Quoted, the text is read by the same rules (a value the mode interprets).
        assert_eq!(go_yaml_u64(&Value::from(" 0644 ")), Some(420));
        assert_eq!(go_yaml_u64(&Value::from("-1")), None);
        assert_eq!(go_yaml_i64(&Value::from(2.0)), Some(2));
    }

    /// `! 12` is the string "12" (go-yaml keeps an unresolvable tag's text as a string), not
    /// serde_yaml's value tagged `!`, which it shows as `!!` and cannot write back.
    #[test]
    fn the_non_specific_tag_makes_a_string() {
        assert_eq!(
            scalar("12", Some(b"!"), ScalarStyle::Plain),
            Ok(Value::from("12"))
        );
        assert_eq!(local_tag(b"!"), None);
        assert_eq!(local_tag(b"!x"), Some(Tag::new("x")));
    }
}

//! Scalar representations: which YAML styles can carry a given string, and how each is
//! written. Every function here returns text that serde_yaml reads back as exactly the input
//! (the suites check that on every case: a writer bug is reported as such, never as an engine
//! bug).

use std::collections::HashMap;

use serde_yaml::Value;

/// Characters YAML allows in content without escapes (no C0/C1 controls besides tab, no BOM, no
/// Unicode line or paragraph separators, which libyaml treats as line breaks).
pub fn printable(c: char) -> bool {
    c == '\t'
        || (' '..='~').contains(&c)
        || (c >= '\u{A0}' && !matches!(c, '\u{FEFF}' | '\u{2028}' | '\u{2029}'))
}

/// Words YAML 1.1 readers (go-yaml v2, PyYAML) take for booleans or null: never written plain,
/// so the styled documents mean the same to every Kubernetes tool.
const YAML11_WORDS: &[&str] = &[
    "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~",
];

/// Strings serde_yaml reads plain as themselves and go-yaml (or a YAML 1.1 reader) as another
/// type: octal, `_`-separated and leading-zero integers, the YAML 1.1 value key.
pub const TYPED_PLAIN: &[&str] = &["0644", "012", "08", "1_000", "1_048_576", "="];
/// Strings written `!!binary` (go-yaml decodes them; serde_yaml keeps the text).
pub const TYPED_BINARY: &[&str] = &["aGVsbG8=", "aGk="];
/// Strings written `!!timestamp`.
pub const TYPED_TIMESTAMP: &[&str] = &["2001-12-14"];

/// True when `s` may be written as a plain scalar in block context and still be the string `s`
/// to serde_yaml and to YAML 1.1 readers (conservative: starts with a letter, `/` or `_`, no
/// indicator sequence inside).
pub fn plain_ok(s: &str, flow: bool, memo: &mut HashMap<String, bool>) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || first == '/' || first == '_')
        || s.ends_with([' ', '\t', ':'])
        || s.contains(": ")
        || s.contains(":\t")
        || s.contains(" #")
        || s.contains("\t#")
        || s.chars().any(|c| !printable(c) || c == '\t')
        || YAML11_WORDS.contains(&s.to_ascii_lowercase().as_str())
        || (flow && s.contains([',', '[', ']', '{', '}', ':', '#']))
    {
        return false;
    }
    if let Some(&ok) = memo.get(s) {
        return ok;
    }
    let ok = matches!(serde_yaml::from_str::<Value>(s), Ok(Value::String(back)) if back == s);
    memo.insert(s.to_owned(), ok);
    ok
}

/// `'…'` on one line, when every character is printable (no line breaks).
pub fn single_ok(s: &str) -> bool {
    s.chars().all(printable)
}

/// Single-quoted, one line.
pub fn single(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Double-quoted, one line, with escapes for everything not printable.
pub fn double(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for unit in double_units(s) {
        out.push_str(&unit);
    }
    out.push('"');
    out
}

/// The escaped pieces of a double-quoted scalar, one per input character: a line break may be
/// put between any two of them.
pub fn double_units(s: &str) -> Vec<String> {
    s.chars()
        .map(|c| match c {
            '"' => "\\\"".to_owned(),
            '\\' => "\\\\".to_owned(),
            '\n' => "\\n".to_owned(),
            '\t' => "\\t".to_owned(),
            '\r' => "\\r".to_owned(),
            c if printable(c) => c.to_string(),
            c if (c as u32) < 0x100 => format!("\\x{:02X}", c as u32),
            c if (c as u32) < 0x10000 => format!("\\u{:04X}", c as u32),
            c => format!("\\U{:08X}", c as u32),
        })
        .collect()
}

/// A multi-line value as the text runs between its line breaks: `(newlines before, text)`,
/// the last run's text possibly empty (trailing newlines). `"a\n\nb\n"` is
/// `[(0, "a"), (2, "b"), (1, "")]`.
pub fn runs(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut breaks = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if c == '\n' {
            if i > start {
                out.push((breaks, &s[start..i]));
                breaks = 0;
            }
            breaks += 1;
            start = i + 1;
        }
    }
    if start < s.len() || out.is_empty() || breaks > 0 {
        out.push((breaks, &s[start..]));
    }
    out
}

/// True when the runs of `s` survive flow-scalar line folding: a text next to a line break has
/// no blank at that side (folding strips them), and no text is only blanks.
pub fn foldable(s: &str) -> bool {
    let runs = runs(s);
    let last = runs.len() - 1;
    runs.iter().enumerate().all(|(i, (before, text))| {
        let blank = |c: char| c == ' ' || c == '\t';
        let lead_ok = (i == 0 && *before == 0) || !text.starts_with(blank);
        let trail_ok = i == last || !text.ends_with(blank);
        let not_only_blanks = text.is_empty() || !text.chars().all(blank);
        lead_ok && trail_ok && not_only_blanks && text.chars().all(|c| printable(c) && c != '\t')
    })
}

/// Positions (byte offsets) of single spaces between two non-blank characters: where a long
/// text may be folded onto the next line (the break reads back as that one space).
pub fn fold_points(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    (1..b.len().saturating_sub(1))
        .filter(|&i| b[i] == b' ' && b[i - 1] != b' ' && b[i + 1] != b' ' && b[i - 1] != b'\t')
        .filter(|&i| b[i + 1] != b'\t')
        .collect()
}

/// Block scalar (`|` or `>`) lines for `s` and the header's chomping indicator, or `None`
/// when the style cannot carry `s`. `folded` picks `>`; `fold_at` says which single spaces of
/// a folded text become line breaks.
pub fn block_lines(
    s: &str,
    folded: bool,
    fold_at: &mut dyn FnMut(usize) -> bool,
) -> Option<(char, Vec<String>)> {
    if !s.chars().all(|c| printable(c) || c == '\n') {
        return None;
    }
    let body = s.trim_end_matches('\n');
    let trailing = s.len() - body.len();
    if body.is_empty()
        || body
            .split('\n')
            .any(|l| l.chars().all(|c| c == ' ') && !l.is_empty())
    {
        return None;
    }
    let chomp = match trailing {
        0 => '-',
        1 => ' ',
        _ => '+',
    };
    let mut lines = Vec::new();
    if folded {
        // Folded: text lines separated by n empty lines are n newlines; a text line break is a
        // space. Lines starting with a blank would not fold: refused.
        for (before, text) in runs(body) {
            if text.starts_with([' ', '\t']) {
                return None;
            }
            lines.extend(std::iter::repeat_n(String::new(), before));
            let points = fold_points(text);
            let mut from = 0;
            for p in points {
                if fold_at(p) {
                    lines.push(text[from..p].to_owned());
                    from = p + 1;
                }
            }
            lines.push(text[from..].to_owned());
        }
    } else {
        lines.extend(body.split('\n').map(str::to_owned));
    }
    lines.extend(std::iter::repeat_n(
        String::new(),
        trailing.saturating_sub(1),
    ));
    Some((chomp, lines))
}

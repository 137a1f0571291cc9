//! Scalars in block context: plain, quoted, block (`|`, `>`) and multi-line flow scalars.

use serde_yaml::Value;

use super::{Feature, Rng, Slot, Writer, join, pad, scalar};

impl Writer<'_> {
    /// Plain text of a non-string scalar (empty = an empty node, only where `may_be_empty`).
    pub(super) fn scalar_text(&mut self, v: &Value, flow: bool, may_be_empty: bool) -> String {
        match v {
            Value::Null => {
                let forms: &[&str] = if may_be_empty && !flow {
                    &["null", "~", "Null", "NULL", ""]
                } else {
                    &["null", "~", "Null", "NULL"]
                };
                let i = self.choose(Feature::ScalarForms, &[80, 5, 5, 5, 5]);
                forms[i.min(forms.len() - 1)].to_owned()
            }
            Value::Bool(b) => {
                let forms = if *b {
                    ["true", "True", "TRUE"]
                } else {
                    ["false", "False", "FALSE"]
                };
                forms[self.choose(Feature::ScalarForms, &[80, 10, 10])].to_owned()
            }
            Value::Number(n) => {
                let form = self.choose(Feature::ScalarForms, &[85, 5, 5, 5]);
                match (n.as_u64(), n.as_f64(), form) {
                    (Some(u), _, 1) => format!("+{u}"),
                    (Some(u), _, 2) => format!("0x{u:X}"),
                    (Some(u), _, 3) => format!("0o{u:o}"),
                    // `1e3`, `.5`: floats in go-yaml's forms (`1e3` is a string to YAML 1.1).
                    (None, Some(f), 1 | 2) if n.is_f64() && f.is_finite() && f != 0.0 => {
                        let e = format!("{f:e}");
                        let back: Result<Value, _> = serde_yaml::from_str(&e);
                        if back.ok().as_ref() == Some(&Value::Number(n.clone())) {
                            e
                        } else {
                            n.to_string()
                        }
                    }
                    (None, Some(f), 3) if n.is_f64() && f > 0.0 && f < 1.0 => {
                        let t = n.to_string();
                        t.strip_prefix('0').map_or(t.clone(), str::to_owned)
                    }
                    _ => n.to_string(),
                }
            }
            Value::String(s) => scalar::double(s),
            other => self.flow(other, 2),
        }
    }

    /// A string in a block slot: every scalar style that can carry it is a candidate.
    pub(super) fn block_string(&mut self, s: &str, slot: Slot, props: &str) {
        let style = self.choose(Feature::Quoting, &[80, 10, 10]);
        let block = self.choose(Feature::BlockScalars, &[88, 6, 6]);
        let mut block_rng = self.sub();
        let multi = self.choose(Feature::MultiLine, &[85, 5, 5, 5]);
        let mut multi_rng = self.sub();
        let col0 = self.choose(Feature::ColumnZero, &[80, 20]) == 1;
        if block != 0 && self.write_block_scalar(s, slot, props, block == 2, &mut block_rng) {
            return;
        }
        if multi != 0 && !matches!(slot, Slot::Top) {
            let cont = self.flow_indent(slot);
            let text = match multi {
                1 => self.flow_multiline(s, Some('\''), cont, col0, &mut multi_rng),
                2 => self.flow_multiline(s, None, cont, false, &mut multi_rng),
                _ => Some(double_multiline(s, cont, col0, &mut multi_rng)),
            };
            if let Some(text) = text {
                self.inline(slot, &join(&[props, &text]));
                return;
            }
        }
        if let Some(raw) = self.typed_spelling(s, props) {
            self.inline(slot, &join(&[props, &raw]));
            return;
        }
        let plain = !s.contains('\n') && scalar::plain_ok(s, false, &mut self.memo);
        let text = match style {
            0 if plain => s.to_owned(),
            1 if scalar::single_ok(s) && !s.contains('\n') => scalar::single(s),
            _ => scalar::double(s),
        };
        self.inline(slot, &join(&[props, &text]));
    }

    /// A spelling of `s` that serde_yaml reads as the string `s` but go-yaml or YAML 1.1 readers
    /// read as another type (`0644` is 420 to go-yaml, `=` the value key to YAML 1.1,
    /// `!!binary aGk=` bytes), drawn for the typed checks (`fuzz/typed.rs`): what the function
    /// leaves untouched must keep it.
    pub(super) fn typed_spelling(&mut self, s: &str, props: &str) -> Option<String> {
        let tag = if scalar::TYPED_PLAIN.contains(&s) {
            ""
        } else if scalar::TYPED_BINARY.contains(&s) {
            "!!binary "
        } else if scalar::TYPED_TIMESTAMP.contains(&s) {
            "!!timestamp "
        } else {
            return None;
        };
        if self.choose(Feature::ScalarForms, &[40, 60]) == 0
            || (!tag.is_empty() && props.contains('!'))
        {
            return None;
        }
        Some(format!("{tag}{s}"))
    }

    /// `|` or `>` block scalar, if it can carry `s` here.
    pub(super) fn write_block_scalar(
        &mut self,
        s: &str,
        slot: Slot,
        props: &str,
        folded: bool,
        rng: &mut Rng,
    ) -> bool {
        let (parent, content) = match slot {
            Slot::MapValue { col } => (col, col + 2),
            Slot::SeqItem { col } => (col, col + 2),
            Slot::Top => return false,
        };
        let mut fold_at = |_p: usize| rng.chance(30);
        let Some((chomp, lines)) = scalar::block_lines(s, folded, &mut fold_at) else {
            return false;
        };
        let first = lines.iter().find(|l| !l.is_empty());
        // A first line starting with a space, or a tab (libyaml takes a tab where it detects
        // the indentation for an indentation error), needs an explicit indentation indicator.
        let needs_indicator = first.is_some_and(|l| l.starts_with([' ', '\t']));
        if needs_indicator && !matches!(slot, Slot::MapValue { .. }) {
            return false;
        }
        let mut header = String::from(if folded { ">" } else { "|" });
        if needs_indicator {
            header.push_str(&(content - parent).to_string());
        }
        if chomp != ' ' {
            header.push(chomp);
        }
        self.out.push(' ');
        self.out.push_str(&join(&[props, &header]));
        self.out.push('\n');
        for line in lines {
            if !line.is_empty() {
                self.out.push_str(&pad(content));
                self.out.push_str(&line);
            }
            self.out.push('\n');
        }
        true
    }

    /// A single-quoted (`quote`) or plain flow scalar over several lines: its line breaks as
    /// empty lines, long texts folded at single spaces; continuation lines at `cont` (or at
    /// column 0 with `col0`, quoted only). `None` when the style cannot carry `s`.
    pub(super) fn flow_multiline(
        &mut self,
        s: &str,
        quote: Option<char>,
        cont: usize,
        col0: bool,
        rng: &mut Rng,
    ) -> Option<String> {
        let plain = quote.is_none();
        if !scalar::foldable(s)
            || (plain
                && (s.contains('\n') && s.trim_matches('\n') != s
                    || !scalar::plain_ok(&s.replace('\n', " "), false, &mut self.memo)))
        {
            return None;
        }
        let runs = scalar::runs(s);
        if runs.len() < 2 && scalar::fold_points(s).is_empty() {
            return None;
        }
        // With `col0`, kpt's shape: the closing quote after a line break at column 0; half the
        // time every continuation line too.
        let indent = if col0 && !plain && rng.chance(50) {
            0
        } else {
            cont
        };
        let escape = |t: &str| {
            if plain {
                t.to_owned()
            } else {
                t.replace('\'', "''")
            }
        };
        let mut out = String::new();
        if let Some(q) = quote {
            out.push(q);
        }
        let last = runs.len() - 1;
        for (i, (before, text)) in runs.iter().enumerate() {
            if *before > 0 || i > 0 {
                out.push('\n');
                out.push_str(&"\n".repeat(*before));
                let closing_only = i == last && text.is_empty();
                // kpt puts a closing quote that follows a line break at column 0.
                out.push_str(&pad(if closing_only && col0 { 0 } else { indent }));
            }
            let mut from = 0;
            for p in scalar::fold_points(text) {
                if rng.chance(25) {
                    out.push_str(&escape(&text[from..p]));
                    out.push('\n');
                    out.push_str(&pad(indent));
                    from = p + 1;
                }
            }
            out.push_str(&escape(&text[from..]));
        }
        if let Some(q) = quote {
            out.push(q);
        }
        // Continuation lines: a document marker at column 0, or (plain) anything but a word.
        let bad = out.lines().skip(1).any(|l| {
            let t = l.trim_start();
            (l.starts_with("---") || l.starts_with("..."))
                || (plain && !t.is_empty() && !t.starts_with(|c: char| c.is_ascii_alphanumeric()))
        });
        (!bad).then_some(out)
    }
}

/// A double-quoted scalar broken over lines with escaped line breaks.
fn double_multiline(s: &str, cont: usize, col0: bool, rng: &mut Rng) -> String {
    let indent = if col0 { 0 } else { cont };
    let units = scalar::double_units(s);
    let mut out = String::from("\"");
    for (i, unit) in units.iter().enumerate() {
        let rest_marker = {
            let rest: String = units[i..].iter().take(3).map(String::as_str).collect();
            rest.starts_with("---") || rest.starts_with("...")
        };
        if i > 0 && rng.chance(8) && !(indent == 0 && rest_marker) {
            out.push_str("\\\n");
            out.push_str(&pad(indent));
            if unit == " " {
                out.push_str("\\ ");
                continue;
            }
        }
        out.push_str(unit);
    }
    out.push('"');
    out
}

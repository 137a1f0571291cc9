//! Patching an item's *text* with [`PatchOp`]s, for items whose tree the engine released (see
//! [`super::io::Observer`]).
//!
//! Only the shape kpt and kustomize write is handled: block YAML, the item a `- ` entry at
//! column 0 with its keys at column 2, `metadata` a block mapping whose `labels` and
//! `annotations` are block mappings of one line per entry. Only ops on
//! `metadata.{labels,annotations}.<key>` with single-line string values are applied. Anything else
//! (comments, blank lines, tabs, flow or multi-line entries, quoted keys, other paths) gives
//! `None`, and the engine parses the item again and patches the tree instead.
//!
//! The line scan finds keys by indentation. A scalar spanning lines could fool it, so the engine
//! first checks the scan against the parsed tree while it still has it ([`patchable_maps`]: the
//! same top-level keys, `metadata` keys and label/annotation keys in the same order) and patches
//! text only where that passed and [`can_patch`] accepts the ops, so [`patch_text_into`] cannot fail
//! there. Lines the ops do not touch are kept byte for byte, as an
//! unchanged item's text is.

use std::borrow::Cow;

use serde_yaml::Value;

use super::emit;
use super::outcome::PatchOp;

/// The metadata maps the text patch can edit.
const MAPS: [&str; 2] = ["labels", "annotations"];

/// Leading spaces.
fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// `key: rest` or `key:` with a plain key: `(key, rest)`. `None` for anything else (quoted or
/// complex keys, sequence entries, comments, lines without a `: ` separator).
fn key_line(content: &str) -> Option<(&str, &str)> {
    let b = content.as_bytes();
    if b"-?:,[]{}#&*!|>'\"%@`".contains(b.first()?) {
        return None;
    }
    // One pass to the first `:`: it must end the line or be followed by a space (a `:` inside
    // the key, or ` #` before it, is not a plain key this scan handles).
    let mut at = 0;
    loop {
        match b.get(at)? {
            b':' => break,
            b'#' if b[at - 1] == b' ' => return None,
            _ => at += 1,
        }
    }
    let rest = match b.get(at + 1) {
        None => "",
        Some(b' ') => content[at + 2..].trim_start_matches(' '),
        Some(_) => return None,
    };
    let key = &content[..at];
    if key.ends_with(' ') {
        return None;
    }
    Some((key, rest.trim_end_matches(' ')))
}

/// A value that ends on its own line (so the entry is exactly one line).
fn single_line_value(rest: &str) -> bool {
    match rest.chars().next() {
        None => true,
        Some('|' | '>' | '{' | '[' | '&' | '*' | '!') => false,
        Some(q @ ('\'' | '"')) => {
            let body = rest
                .split(" #")
                .next()
                .unwrap_or(rest)
                .trim_end_matches(' ');
            // A closing `"` preceded by an odd number of backslashes is escaped.
            let escapes = body[..body.len().saturating_sub(1)]
                .bytes()
                .rev()
                .take_while(|b| *b == b'\\')
                .count();
            body.len() >= 2 && body.ends_with(q) && (q == '\'' || escapes % 2 == 0)
        }
        Some(_) => true,
    }
}

/// The item's lines (content only) when the text has the kpt shape at all.
fn lines(text: &str) -> Option<Vec<&str>> {
    if !text.starts_with("- ") || text.bytes().any(|b| b == b'\r' || b == b'\t') {
        return None;
    }
    let text = text.strip_suffix('\n').unwrap_or(text);
    Some(text.split('\n').collect())
}

/// Line positions of the metadata block and its editable maps.
struct Meta {
    /// Line of `metadata:`.
    key: usize,
    /// One past the block's last line.
    end: usize,
    /// Indentation of metadata's keys.
    indent: usize,
}

/// A block map under metadata: its key line and its one-line entries `(line, key)`.
struct MapAt<'t> {
    key: usize,
    entries: Vec<(usize, &'t str)>,
    /// End of the entries (one past the last).
    end: usize,
}

/// One of [`MAPS`] under metadata: its name, and its entries when it is a block map of one-line
/// entries.
type NamedMap<'t> = (&'t str, Option<MapAt<'t>>);

/// The content of line `i` seen at its column (the first line's `- ` is the entry indicator).
fn content<'t>(lines: &[&'t str], i: usize) -> &'t str {
    if i == 0 {
        &lines[0][2..]
    } else {
        lines[i].trim_start_matches(' ')
    }
}

/// Top-level keys (column 2) and the metadata block; `None` when the layout is not kpt's.
fn top<'t>(lines: &[&'t str]) -> Option<(Vec<&'t str>, Option<Meta>)> {
    let mut keys = Vec::new();
    let mut meta: Option<Meta> = None;
    for i in 0..lines.len() {
        let line = lines[i];
        let at = if i == 0 { 2 } else { indent(line) };
        if line.len() == at || line.as_bytes()[at] == b'#' {
            if meta.as_ref().is_some_and(|m| m.end == i) {
                return None; // blank or comment line inside metadata
            }
            continue;
        }
        if i > 0 && at < 2 {
            return None;
        }
        if at == 2 {
            if let Some(m) = &mut meta
                && m.end == i
                && m.indent == 0
            {
                return None; // `metadata:` with nothing under it
            }
            let c = content(lines, i);
            if c.starts_with("- ") || c == "-" {
                continue; // compact sequence of the previous key
            }
            let (key, rest) = key_line(c)?;
            keys.push(key);
            if key == "metadata" {
                if !rest.is_empty() {
                    return None;
                }
                meta = Some(Meta {
                    key: i,
                    end: i + 1,
                    indent: 0,
                });
            }
        } else if let Some(m) = &mut meta
            && m.end == i
        {
            if m.indent == 0 {
                m.indent = at;
            }
            if at < m.indent {
                return None;
            }
            m.end = i + 1;
        }
    }
    if meta.as_ref().is_some_and(|m| m.indent == 0) {
        return None;
    }
    Some((keys, meta))
}

/// Metadata's keys, and for each of [`MAPS`] present: `Some(entries)` when it is a block map of
/// one-line entries with plain keys, `None` when it is there in another form.
fn meta_keys<'t>(lines: &[&'t str], meta: &Meta) -> Option<(Vec<&'t str>, Vec<NamedMap<'t>>)> {
    let mut keys = Vec::new();
    let mut maps = Vec::new();
    let mut i = meta.key + 1;
    while i < meta.end {
        let line = lines[i];
        if indent(line) != meta.indent {
            i += 1;
            continue;
        }
        let c = content(lines, i);
        if c.starts_with("- ") || c == "-" {
            i += 1;
            continue;
        }
        let (key, rest) = key_line(c)?;
        keys.push(key);
        let mut end = i + 1;
        while end < meta.end && indent(lines[end]) > meta.indent {
            end += 1;
        }
        if MAPS.contains(&key) {
            let map = rest.is_empty().then(|| map_at(lines, i, end)).flatten();
            maps.push((key, map));
        }
        i = end;
    }
    Some((keys, maps))
}

/// The entries of the map whose key is on line `key` and whose lines run to `end`.
fn map_at<'t>(lines: &[&'t str], key: usize, end: usize) -> Option<MapAt<'t>> {
    let mut entries = Vec::new();
    let entry_indent = lines.get(key + 1).map(|l| indent(l));
    for (i, line) in lines.iter().enumerate().take(end).skip(key + 1) {
        if Some(indent(line)) != entry_indent {
            return None;
        }
        let (k, rest) = key_line(content(lines, i))?;
        if !single_line_value(rest) {
            return None;
        }
        entries.push((i, k));
    }
    Some(MapAt { key, entries, end })
}

/// Which of `metadata.labels` and `metadata.annotations` (in that order) ops may patch in this
/// item's text: none unless the line scan sees exactly the structure of the parsed `item` (the
/// same top-level keys, metadata keys, and label and annotation keys, in the same order); then
/// each map that is a block map of one-line entries, or absent (ops create it). Items without
/// `metadata` get none.
pub fn patchable_maps(text: &str, item: &Value) -> [bool; 2] {
    let none = [false; 2];
    let Some(lines) = lines(text) else {
        return none;
    };
    let Some((keys, Some(meta))) = top(&lines) else {
        return none;
    };
    let Some(map) = item.as_mapping() else {
        return none;
    };
    let same = |keys: &[&str], m: &serde_yaml::Mapping| {
        keys.len() == m.len() && m.keys().zip(keys).all(|(a, b)| a.as_str() == Some(*b))
    };
    if !same(&keys, map) {
        return none;
    }
    let Some(tree) = map.get("metadata").and_then(Value::as_mapping) else {
        return none;
    };
    let Some((keys, maps)) = meta_keys(&lines, &meta) else {
        return none;
    };
    if !same(&keys, tree) {
        return none;
    }
    let mut patchable = [true; 2];
    for (name, at) in &maps {
        let ok = at.as_ref().is_some_and(|at| {
            tree.get(*name)
                .and_then(Value::as_mapping)
                .is_some_and(|m| {
                    m.len() == at.entries.len()
                        && m.keys()
                            .zip(&at.entries)
                            .all(|(a, (_, b))| a.as_str() == Some(*b))
                })
        });
        if let Some(i) = MAPS.iter().position(|m| m == name) {
            patchable[i] = ok;
        }
    }
    patchable
}

/// Whether [`patch_text_into`] applies `ops` to a text whose [`patchable_maps`] are `maps`: every op
/// sets or removes `metadata.<map>.<key>` of a patchable map, with a one-line string value.
pub fn can_patch(maps: [bool; 2], ops: &[PatchOp]) -> bool {
    ops.iter().all(|op| {
        let target = match op.path() {
            [m, map, _] if m == "metadata" => MAPS.iter().position(|n| *n == map),
            _ => None,
        };
        let value_ok = match op {
            PatchOp::Set { value, .. } => value.as_str().is_some_and(|v| !v.contains('\n')),
            PatchOp::Remove { .. } => true,
        };
        value_ok && target.is_some_and(|i| maps[i])
    })
}

/// An entry of a map being patched: its key and its line (without newline), from the input or
/// newly emitted.
type Entry<'t> = (Cow<'t, str>, Cow<'t, str>);

/// One of [`MAPS`] as the ops leave it.
struct Model<'t> {
    name: &'t str,
    /// Where it is in the input: the key line and one past its last entry; `None` when the ops
    /// create it.
    at: Option<(usize, usize)>,
    /// Indentation of its entries.
    indent: usize,
    entries: Vec<Entry<'t>>,
}

/// `key: value` at `indent`, one line, as the emitter writes it.
fn entry(key: &str, value: &str, indent: usize) -> String {
    let mut out = String::with_capacity(indent + key.len() + value.len() + 8);
    emit::emit_string_pair(&mut out, key, value, indent);
    out.pop(); // the newline
    out
}

/// [`patch_text_into`] into a new string (tests).
#[cfg(test)]
pub fn patch_text(text: &str, ops: &[PatchOp]) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 256);
    patch_text_into(&mut out, text, ops).then_some(out)
}

/// Applies `ops` to the item text (see the module docs), appending the result to `out`; false
/// (and `out` unchanged) when it cannot. It can when [`can_patch`] accepts the ops for the
/// text's [`patchable_maps`].
pub fn patch_text_into(out: &mut String, text: &str, ops: &[PatchOp]) -> bool {
    let start = out.len();
    let done = patch(out, text, ops).is_some();
    if !done {
        out.truncate(start);
    }
    done
}

fn patch(out: &mut String, text: &str, ops: &[PatchOp]) -> Option<()> {
    let lines = lines(text)?;
    let (_, meta) = top(&lines)?;
    let meta = meta?;
    let (_, maps) = meta_keys(&lines, &meta)?;
    let mut models: Vec<Model> = Vec::with_capacity(2);
    for (name, at) in maps {
        // A map present in another form (`annotations: ~`, flow, multi-line entries) is left to
        // the tree patch, but only if an op touches it.
        let Some(at) = at else {
            if ops
                .iter()
                .any(|op| op.path().get(1).map(|k| &**k) == Some(name))
            {
                return None;
            }
            continue;
        };
        let indent = at
            .entries
            .first()
            .map_or(meta.indent + 2, |(l, _)| indent(lines[*l]));
        let entries = at
            .entries
            .iter()
            .map(|(l, k)| (Cow::Borrowed(*k), Cow::Borrowed(lines[*l])))
            .collect();
        models.push(Model {
            name,
            at: Some((at.key, at.end)),
            indent,
            entries,
        });
    }
    for op in ops {
        let (name, key) = match op.path() {
            [m, map, key] if m == "metadata" && MAPS.contains(&&**map) => (&**map, &**key),
            _ => return None,
        };
        let value = match op {
            PatchOp::Set { value, .. } => Some(value.as_str().filter(|v| !v.contains('\n'))?),
            PatchOp::Remove { .. } => None,
        };
        let model = match (models.iter().position(|m| m.name == name), value) {
            (Some(i), _) => &mut models[i],
            (None, None) => continue,
            // A new map goes last in metadata, as the tree patch adds the key.
            (None, Some(_)) => {
                let name = MAPS.iter().copied().find(|m| *m == name)?;
                models.push(Model {
                    name,
                    at: None,
                    indent: meta.indent + 2,
                    entries: Vec::new(),
                });
                models.last_mut()?
            }
        };
        let hit = model.entries.iter().position(|(k, _)| k == key);
        match (hit, value) {
            (Some(i), Some(v)) => model.entries[i].1 = Cow::Owned(entry(key, v, model.indent)),
            (None, Some(v)) => model.entries.push((
                Cow::Owned(key.to_owned()),
                Cow::Owned(entry(key, v, model.indent)),
            )),
            (Some(i), None) => {
                model.entries.remove(i);
            }
            (None, None) => {}
        }
    }
    let push = |out: &mut String, line: &str| {
        out.push_str(line);
        out.push('\n');
    };
    let write_map = |out: &mut String, m: &Model| {
        let pad = " ".repeat(meta.indent);
        if m.entries.is_empty() {
            // Emptied (or never filled) by the ops: `annotations: {}`, as the tree patch leaves it.
            push(out, &format!("{pad}{}: {{}}", m.name));
        } else {
            push(out, &format!("{pad}{}:", m.name));
            for (_, line) in &m.entries {
                push(out, line);
            }
        }
    };
    let mut i = 0;
    while i < lines.len() {
        if i == meta.end {
            for m in models.iter().filter(|m| m.at.is_none()) {
                write_map(out, m);
            }
        }
        match models
            .iter()
            .find(|m| m.at.is_some_and(|(key, _)| key == i))
        {
            Some(m) => {
                write_map(out, m);
                i = m.at.map_or(i + 1, |(_, end)| end);
            }
            None => {
                push(out, lines[i]);
                i += 1;
            }
        }
    }
    if meta.end == lines.len() {
        for m in models.iter().filter(|m| m.at.is_none()) {
            write_map(out, m);
        }
    }
    Some(())
}

#[cfg(test)]
mod tests;

//! Patching an item's *text* with [`PatchOp`]s, for items whose tree the engine released (see
//! [`super::io::Observer`]).
//!
//! The patch works only on positions the parser's events proved while the item was read
//! ([`Layout`], recorded by [`super::yaml::load`]): `metadata` a block mapping, `labels` and
//! `annotations` block mappings (or absent) whose keys are plain scalars alone at the start of
//! their lines. Only ops on `metadata.{labels,annotations}.<key>` with one-line string values are
//! applied; anything else, or a map in another form (flow, null, quoted keys, anchors), and the
//! engine parses the item again and patches the tree instead. Bytes no op needs to change are
//! kept: a set replaces only the value's text, a removal only the entry's lines, an addition
//! inserts lines; a map no op touches is not rewritten.
//!
//! The result equals the tree patch's item (`src/krm/splice/tests.rs` checks op by op): set keys
//! keep their place, new ones go last in their map, a map emptied by removals becomes
//! `name: {}`, a new map goes last in metadata.

use std::borrow::Cow;

use super::emit;
use super::outcome::PatchOp;
use super::yaml::layout::{
    EntryAt, MAPS, MapLayout, MetaLayout, line_start_before_spaces, next_line,
};

/// Where a released item's metadata maps sit in its text (offsets from the text's start).
#[derive(Debug, Clone, Copy)]
pub struct Layout<'a> {
    /// The metadata block and its maps.
    pub meta: &'a MetaLayout,
    /// The arena the maps' entries index into.
    pub entries: &'a [EntryAt],
}

/// One change to the text: replace `range` with `text` (insertions have an empty range).
#[derive(Debug)]
struct TextEdit {
    range: std::ops::Range<usize>,
    /// Tie-break at one position: entries added to a map, then new maps in creation order.
    order: usize,
    text: String,
}

/// An entry of a map as the ops leave it.
enum Slot<'t> {
    /// An entry of the input, possibly with a new value.
    Kept(&'t EntryAt, Option<&'t str>),
    /// A new entry.
    Added(Cow<'t, str>, &'t str),
}

impl Slot<'_> {
    fn key<'k>(&'k self, text: &'k str) -> &'k str {
        match self {
            Slot::Kept(e, _) => entry_key(text, e),
            Slot::Added(k, _) => k,
        }
    }
}

fn entry_key<'t>(text: &'t str, e: &EntryAt) -> &'t str {
    &text[e.key()]
}

/// One of [`MAPS`] as the ops leave it.
struct Model<'t> {
    /// Its input entries (empty when absent).
    input: &'t [EntryAt],
    slots: Vec<Slot<'t>>,
    /// Changed by an op.
    touched: bool,
    /// Created by an op (absent in the input): its rank among created maps.
    created: Option<usize>,
}

/// A text patch [`plan_patch`] found the layout proves: the edits, written with the text they
/// were planned on by [`Planned::write_into`]. Planned once, when the engine decides how an
/// edited item is written, and applied as the output is written.
#[derive(Debug)]
pub struct Planned(Vec<TextEdit>);

impl Planned {
    /// Appends `text`, the text the patch was planned on, with the patch applied.
    pub fn write_into(&self, out: &mut String, text: &str) {
        let mut at = 0;
        for edit in &self.0 {
            out.push_str(&text[at..edit.range.start]);
            out.push_str(&edit.text);
            at = edit.range.end;
        }
        out.push_str(&text[at..]);
    }
}

/// The text patch that applies `ops` to `text` with this layout, or `None` when an op is
/// outside what the layout proves (the item is then patched as a tree).
pub fn plan_patch(text: &str, layout: Option<Layout<'_>>, ops: &[PatchOp]) -> Option<Planned> {
    plan(text, layout?, ops).map(Planned)
}

/// Whether [`patch_text_into`] applies `ops` to `text` with this layout.
#[cfg(test)]
pub fn can_patch(text: &str, layout: Option<Layout<'_>>, ops: &[PatchOp]) -> bool {
    plan_patch(text, layout, ops).is_some()
}

/// [`patch_text_into`] into a new string (tests).
#[cfg(test)]
pub fn patch_text(text: &str, layout: Layout<'_>, ops: &[PatchOp]) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 256);
    patch_text_into(&mut out, text, layout, ops).then_some(out)
}

/// Applies `ops` to the item text (see the module docs), appending the result to `out`; false
/// (and `out` unchanged) when it cannot ([`can_patch`] says so beforehand).
#[cfg(test)]
pub fn patch_text_into(out: &mut String, text: &str, layout: Layout<'_>, ops: &[PatchOp]) -> bool {
    let Some(planned) = plan_patch(text, Some(layout), ops) else {
        return false;
    };
    planned.write_into(out, text);
    true
}

/// The text edits that apply `ops`, or `None` when an op is outside what the layout proves.
fn plan(text: &str, layout: Layout<'_>, ops: &[PatchOp]) -> Option<Vec<TextEdit>> {
    let meta = layout.meta;
    let mut models: Vec<Option<Model>> = meta
        .maps
        .iter()
        .map(|m| match m {
            MapLayout::Absent => Some(Model {
                input: &[],
                slots: Vec::new(),
                touched: false,
                created: None,
            }),
            MapLayout::Block { first, count, .. } => {
                let first = *first as usize;
                let input = layout.entries.get(first..first + usize::from(*count))?;
                Some(Model {
                    input,
                    slots: input.iter().map(|e| Slot::Kept(e, None)).collect(),
                    touched: false,
                    created: None,
                })
            }
            MapLayout::Other => None,
        })
        .collect();
    let mut created = 0;
    for op in ops {
        let (i, key) = match op.path() {
            [m, map, key] if m == "metadata" => (MAPS.iter().position(|n| n == map)?, &**key),
            _ => return None,
        };
        let value = match op {
            PatchOp::Set { value, .. } => Some(value.as_str().filter(|v| !v.contains('\n'))?),
            PatchOp::Remove { .. } => None,
        };
        // A map in a form the layout does not cover: only if no op touches it.
        let model = models[i].as_mut()?;
        let hit = model.slots.iter().position(|s| s.key(text) == key);
        match (hit, value) {
            (Some(at), Some(v)) => {
                match &mut model.slots[at] {
                    Slot::Kept(e, new) => {
                        if !e.is(EntryAt::SINGLE_LINE) && !e.is(EntryAt::EMPTY) {
                            return None;
                        }
                        *new = Some(v);
                    }
                    Slot::Added(_, old) => *old = v,
                }
                model.touched = true;
            }
            (None, Some(v)) => {
                if model.input.is_empty() && model.created.is_none() {
                    model.created = Some(created);
                    created += 1;
                }
                model.slots.push(Slot::Added(Cow::Borrowed(key), v));
                model.touched = true;
            }
            (Some(at), None) => {
                model.slots.remove(at);
                model.touched = true;
            }
            (None, None) => {}
        }
    }
    let mut edits = Vec::new();
    for (i, model) in models.iter().enumerate() {
        let Some(model) = model.as_ref().filter(|m| m.touched) else {
            continue;
        };
        map_edits(text, meta, i, model, &mut edits)?;
    }
    edits.sort_by_key(|e| (e.range.start, e.order));
    // Proven positions never overlap; refuse rather than trust that.
    let ordered = edits.windows(2).all(|w| w[0].range.end <= w[1].range.start);
    let inside = edits.last().is_none_or(|e| e.range.end <= text.len());
    (ordered && inside).then_some(edits)
}

/// The edits that turn map `i` of the input into `model`.
fn map_edits(
    text: &str,
    meta: &MetaLayout,
    i: usize,
    model: &Model<'_>,
    edits: &mut Vec<TextEdit>,
) -> Option<()> {
    let name = MAPS[i];
    let pad = meta.indent as usize;
    let MapLayout::Block { key_line, .. } = &meta.maps[i] else {
        // Absent: a new map, last in metadata (the tree patch adds the key there).
        if model.slots.is_empty() {
            return Some(());
        }
        let mut block = String::new();
        push_pad(&mut block, pad);
        block.push_str(name);
        block.push_str(":\n");
        for slot in &model.slots {
            if let Slot::Added(k, v) = slot {
                emit::emit_string_pair(&mut block, k, v, pad + 2);
            }
        }
        let at = meta.end as usize;
        edits.push(TextEdit {
            range: at..at,
            order: 1 + model.created.unwrap_or(0),
            text: block,
        });
        return Some(());
    };
    let key_line = *key_line as usize;
    // The map ends with the line of its last entry's value.
    let end = next_line(text, model.input.last()?.value().end)?;
    if model.slots.is_empty() {
        // Emptied: `name: {}`, as the emitter writes the tree patch's empty mapping.
        let mut line = String::new();
        push_pad(&mut line, pad);
        line.push_str(name);
        line.push_str(": {}\n");
        edits.push(TextEdit {
            range: key_line..end,
            order: 0,
            text: line,
        });
        return Some(());
    }
    let first = model.input.first()?.key().start;
    let entry_indent = first - line_start_before_spaces(text, first)?;
    for e in model.input {
        let slot = model
            .slots
            .iter()
            .find(|s| matches!(s, Slot::Kept(k, _) if std::ptr::eq(*k, e)));
        match slot {
            None => {
                let line = line_start_before_spaces(text, e.key().start)?;
                edits.push(TextEdit {
                    range: line..next_line(text, e.value().end)?,
                    order: 0,
                    text: String::new(),
                });
            }
            Some(Slot::Kept(_, Some(v))) => {
                let mut new = String::new();
                if e.is(EntryAt::EMPTY) {
                    new.push(' ');
                }
                emit::emit_one_line_string(&mut new, v);
                edits.push(TextEdit {
                    range: e.value(),
                    order: 0,
                    text: new,
                });
            }
            Some(_) => {}
        }
    }
    let mut added = String::new();
    for slot in &model.slots {
        if let Slot::Added(k, v) = slot {
            emit::emit_string_pair(&mut added, k, v, entry_indent);
        }
    }
    if !added.is_empty() {
        edits.push(TextEdit {
            range: end..end,
            order: 0,
            text: added,
        });
    }
    Some(())
}

fn push_pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

#[cfg(test)]
mod tests;

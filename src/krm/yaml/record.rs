//! What the loader records of the item it is reading: where `metadata.labels` and
//! `metadata.annotations` sit in its text ([`super::layout`]), from the events' marks, for the
//! text patch.

use super::layout::{EntryAt, MapLayout, MetaLayout, line_start_before_spaces, next_line};
use super::load::Role;

/// One mapping entry as the recorder sees it (absolute offsets).
pub(super) struct RecordedEntry {
    pub(super) key_start: usize,
    pub(super) key_len: usize,
    /// Plain, untagged, single-line key without anchor.
    pub(super) simple_key: bool,
    pub(super) value_start: Option<usize>,
    pub(super) value_end: Option<usize>,
    pub(super) single_line: bool,
    pub(super) empty: bool,
}

/// A map under metadata while it is recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum MapRecord {
    /// Not seen.
    #[default]
    Absent,
    /// Seen in a form the text patch does not take.
    Other,
    /// A block map: its key's line, where its entries are in the recorder's entries, the
    /// indentation of its keys and where it ends.
    Block {
        /// Start of the key's line.
        key_line: usize,
        /// Its entries in the recorder's entries.
        entries: std::ops::Range<usize>,
        /// Bytes of indentation of the keys.
        indent: Option<usize>,
        /// Start of the line after the last entry.
        end: Option<usize>,
    },
}

/// What the loader records of the current item's metadata (absolute offsets).
#[derive(Debug, Default)]
pub struct Recorder {
    /// Recording this item.
    pub(super) active: bool,
    /// Metadata was a block mapping: its key indentation (all keys alike), where it ends, and
    /// whether every key sat alone at the start of its line.
    metadata: Option<MetaRecord>,
    /// The entries of the block maps.
    entries: Vec<RawEntry>,
}

/// An [`EntryAt`] with absolute offsets.
#[derive(Debug, Clone, Copy)]
struct RawEntry {
    key: usize,
    key_len: usize,
    value: usize,
    value_end: usize,
    flags: u16,
}

/// See [`Recorder::metadata`].
#[derive(Debug, Clone, Default)]
struct MetaRecord {
    /// Bytes of indentation of metadata's keys.
    indent: Option<usize>,
    /// Start of the line after metadata's last entry.
    end: Option<usize>,
    /// Every key was first on its line, at the same indentation.
    aligned: bool,
    /// `labels`, `annotations`.
    maps: [MapRecord; 2],
}

impl Recorder {
    /// The recorded layout with offsets relative to `base` (the start of the item's text), its
    /// entries appended to `arena`; `None` when metadata was not a block mapping of aligned
    /// keys with a known end, or an offset does not fit 32 bits.
    pub fn finish(&self, base: usize, arena: &mut Vec<EntryAt>) -> Option<MetaLayout> {
        let meta = self.metadata.as_ref().filter(|m| m.aligned)?;
        let rel = |at: usize| at.checked_sub(base);
        let rel32 = |at: usize| rel(at).and_then(|r| u32::try_from(r).ok());
        let indent = u16::try_from(meta.indent?).ok()?;
        let end = rel32(meta.end?)?;
        let mut entries = Vec::new();
        let mut maps: [MapLayout; 2] = Default::default();
        for (slot, record) in maps.iter_mut().zip(&meta.maps) {
            *slot = match record {
                MapRecord::Absent => MapLayout::Absent,
                MapRecord::Block {
                    key_line,
                    entries: range,
                    end: Some(_),
                    ..
                } if !range.is_empty() => {
                    let first = u32::try_from(arena.len() + entries.len()).ok()?;
                    for e in &self.entries[range.clone()] {
                        entries.push(EntryAt::new(
                            rel(e.key)?,
                            e.key_len,
                            rel(e.value)?,
                            rel(e.value_end)?,
                            e.flags,
                        )?);
                    }
                    MapLayout::Block {
                        key_line: rel32(*key_line)?,
                        first,
                        count: u16::try_from(range.len()).ok()?,
                    }
                }
                MapRecord::Other | MapRecord::Block { .. } => MapLayout::Other,
            };
        }
        arena.extend(entries);
        Some(MetaLayout { end, indent, maps })
    }

    pub(super) fn reset(&mut self, active: bool) {
        self.active = active;
        self.metadata = None;
        self.entries.clear();
    }

    pub(super) fn open_metadata(&mut self) {
        self.metadata = Some(MetaRecord {
            aligned: true,
            ..MetaRecord::default()
        });
    }

    pub(super) fn close_metadata(&mut self, text: &str) {
        if let Some(m) = &mut self.metadata {
            m.end = m.end.and_then(|end| next_line(text, end));
        }
    }

    pub(super) fn open_map(&mut self, i: usize, key_line: usize) {
        let first = self.entries.len();
        if let Some(m) = &mut self.metadata {
            m.maps[i] = MapRecord::Block {
                key_line,
                entries: first..first,
                indent: None,
                end: None,
            };
        }
    }

    pub(super) fn other_map(&mut self, i: usize) {
        if let Some(m) = &mut self.metadata {
            m.maps[i] = MapRecord::Other;
        }
    }

    pub(super) fn close_map(&mut self, i: usize) {
        let last = self.entries.len();
        if let Some(m) = &mut self.metadata {
            match &mut m.maps[i] {
                MapRecord::Block { end: None, .. } => m.maps[i] = MapRecord::Other,
                MapRecord::Block { entries, .. } => entries.end = last,
                _ => {}
            }
        }
    }

    /// An entry of metadata (`Role::Metadata`) or of one of its maps (`Role::Map`).
    pub(super) fn entry(&mut self, text: &str, role: Role, e: &RecordedEntry) {
        let Some(meta) = &mut self.metadata else {
            return;
        };
        let indent = line_start_before_spaces(text, e.key_start).map(|line| e.key_start - line);
        match role {
            Role::Metadata => {
                if indent.is_none() || (meta.indent.is_some() && meta.indent != indent) {
                    meta.aligned = false;
                }
                meta.indent = meta.indent.or(indent);
                meta.end = e.value_end;
            }
            Role::Map(i) => {
                let MapRecord::Block {
                    indent: map_indent,
                    end,
                    ..
                } = &mut meta.maps[i]
                else {
                    return;
                };
                let next = e.value_end.and_then(|v| next_line(text, v));
                let (Some(value), Some(value_end), Some(next), true, Some(_)) =
                    (e.value_start, e.value_end, next, e.simple_key, indent)
                else {
                    meta.maps[i] = MapRecord::Other;
                    return;
                };
                if map_indent.is_some() && *map_indent != indent {
                    meta.maps[i] = MapRecord::Other;
                    return;
                }
                *map_indent = indent;
                *end = Some(next);
                let mut flags = 0;
                if e.single_line {
                    flags |= EntryAt::SINGLE_LINE;
                }
                if e.empty {
                    flags |= EntryAt::EMPTY;
                }
                self.entries.push(RawEntry {
                    key: e.key_start,
                    key_len: e.key_len,
                    value,
                    value_end,
                    flags,
                });
            }
            _ => {}
        }
    }
}

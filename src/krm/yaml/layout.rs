//! Where an item's `metadata.labels` and `metadata.annotations` entries sit in its text,
//! recorded by the loader from the parser's event marks while the item is built, for the text
//! patch ([`crate::krm::splice`]). Offsets are relative to the start of the item's text (its
//! `- ` line), so they stay valid wherever the text is copied.
//!
//! Only what the marks prove is recorded: a map is [`MapLayout::Block`] only when it is a block
//! mapping whose keys are plain, untagged, single-line scalars, each the first thing on its
//! line at the same indentation; anything else is [`MapLayout::Other`] and the text patch leaves
//! it to the tree.

/// The metadata maps the text patch edits, in this order.
pub const MAPS: [&str; 2] = ["labels", "annotations"];

/// One entry of a recorded map, in 12 bytes (a released item keeps one per label and
/// annotation, so 100k Services keep about a million).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryAt {
    /// Start of the key (the first non-space byte of its line).
    key: u32,
    /// Length of the value's text (0 for an empty value).
    value_len: u32,
    /// Length of the key's text (plain, so also of its value).
    key_len: u16,
    /// Bytes from the key's end to the value's start (for an empty value, to just after the
    /// `:`), in the low 14 bits; [`EntryAt::SINGLE_LINE`] and [`EntryAt::EMPTY`] above.
    gap_and_flags: u16,
}

impl EntryAt {
    /// The value is a scalar on one line, not a block scalar, with no anchor: its text can be
    /// replaced by another one-line scalar.
    pub const SINGLE_LINE: u16 = 1 << 14;
    /// The value is empty (`key:`): a new value goes after the `:`.
    pub const EMPTY: u16 = 1 << 15;

    /// An entry from its offsets, if they fit.
    pub fn new(
        key: usize,
        key_len: usize,
        value: usize,
        value_end: usize,
        flags: u16,
    ) -> Option<EntryAt> {
        let gap = value.checked_sub(key + key_len)?;
        (gap < 1 << 14).then_some(())?;
        Some(EntryAt {
            key: u32::try_from(key).ok()?,
            value_len: u32::try_from(value_end.checked_sub(value)?).ok()?,
            key_len: u16::try_from(key_len).ok()?,
            gap_and_flags: u16::try_from(gap).ok()? | flags,
        })
    }
    /// Where the key's text is.
    pub fn key(&self) -> std::ops::Range<usize> {
        let at = self.key as usize;
        at..at + self.key_len as usize
    }
    /// Where the value's text is.
    pub fn value(&self) -> std::ops::Range<usize> {
        let at = self.key().end + usize::from(self.gap_and_flags & (Self::SINGLE_LINE - 1));
        at..at + self.value_len as usize
    }
    /// Whether a flag is set.
    pub fn is(&self, flag: u16) -> bool {
        self.gap_and_flags & flag != 0
    }
}

/// One of [`MAPS`] under metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MapLayout {
    /// Not there: a patch adds it as metadata's last key.
    #[default]
    Absent,
    /// There in a form the marks do not cover (flow, null, odd keys): tree patch only.
    Other,
    /// A block mapping of recorded entries (at least one); it ends at the start of the line
    /// after its last entry's value ([`next_line`]).
    Block {
        /// Start of the line of the map's key (`  labels:`).
        key_line: u32,
        /// Its entries: `count` from `first` in the arena they were stored in.
        first: u32,
        /// How many entries.
        count: u16,
    },
}

/// The recorded metadata of an item: block mapping, its key indentation and end, and its maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaLayout {
    /// Start of the line after metadata's last entry (where a new map goes).
    pub end: u32,
    /// Bytes of indentation of metadata's keys.
    pub indent: u16,
    /// `labels`, `annotations`.
    pub maps: [MapLayout; 2],
}

/// Start of the line holding `at`, if only spaces precede `at` on it.
pub fn line_start_before_spaces(text: &str, at: usize) -> Option<usize> {
    let head = &text.as_bytes()[..at];
    let start = head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    head[start..].iter().all(|&b| b == b' ').then_some(start)
}

/// True for the rest of a line (without its `\n`) that holds nothing but blanks and an optional
/// comment, and no line break other than a final `\r` (libyaml also breaks lines at a lone
/// `\r`, NEL, LS and PS; such text is never taken for a comment here).
pub fn blank_or_comment(rest: &str) -> bool {
    let rest = rest.strip_suffix('\r').unwrap_or(rest);
    let body = rest.trim_start_matches([' ', '\t']);
    (body.is_empty() || body.starts_with('#'))
        && !rest.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}'])
}

/// The start of the line after `at` when the rest of `at`'s line is blank or a comment (`at`
/// itself when it starts a line).
pub fn next_line(text: &str, at: usize) -> Option<usize> {
    if at == 0 || text.as_bytes()[at - 1] == b'\n' {
        return Some(at);
    }
    let rest = &text[at..];
    let (line, next) = match rest.find('\n') {
        Some(nl) => (&rest[..nl], at + nl + 1),
        None => (rest, text.len()),
    };
    blank_or_comment(line).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_12_bytes_and_keep_their_offsets() {
        assert_eq!(std::mem::size_of::<EntryAt>(), 12);
        let e = EntryAt::new(10, 3, 15, 20, EntryAt::SINGLE_LINE).unwrap();
        assert_eq!((e.key(), e.value()), (10..13, 15..20));
        assert!(e.is(EntryAt::SINGLE_LINE) && !e.is(EntryAt::EMPTY));
        // Offsets that do not fit are refused, not wrapped.
        assert!(EntryAt::new(0, 70_000, 70_002, 70_003, 0).is_none());
        assert!(EntryAt::new(0, 1, 1 << 15, 1 << 15, 0).is_none());
        assert!(EntryAt::new(5, 1, 2, 3, 0).is_none());
    }

    #[test]
    fn comments_and_blanks_only() {
        for ok in ["", "  ", " # c", "\t# c: d", "   \r", "# x"] {
            assert!(blank_or_comment(ok), "{ok:?}");
        }
        for no in ["x", " a # c", "#a\rb: 1", "# \u{2028}b", "a\r"] {
            assert!(!blank_or_comment(no), "{no:?}");
        }
    }

    #[test]
    fn next_line_and_line_start() {
        let t = "a: 1 # c\nb: 2\n  c: x\n";
        assert_eq!(next_line(t, 4), Some(9));
        assert_eq!(next_line(t, 9), Some(9));
        assert_eq!(next_line(t, 3), None);
        assert_eq!(line_start_before_spaces(t, 16), Some(14));
        assert_eq!(line_start_before_spaces(t, 12), None);
        assert_eq!(next_line("a: 1", 4), Some(4));
    }
}

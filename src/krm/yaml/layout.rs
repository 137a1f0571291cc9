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

/// One entry of a recorded map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryAt {
    /// Start of the key (the first non-space byte of its line).
    pub key: u32,
    /// Length of the key's text (plain, so also of its value).
    pub key_len: u32,
    /// Start of the value; for an empty (null) value, just after the `:`.
    pub value: u32,
    /// End of the value's text (for an empty value, equal to `value`).
    pub value_end: u32,
    /// Start of the line after the entry (the rest of the value's last line is blank or a
    /// comment), or `u32::MAX` when that is not proven.
    pub next_line: u32,
    /// [`EntryAt::SINGLE_LINE`], [`EntryAt::EMPTY`].
    pub flags: u8,
}

impl EntryAt {
    /// The value is a scalar on one line, not a block scalar, with no anchor: its text can be
    /// replaced by another one-line scalar.
    pub const SINGLE_LINE: u8 = 1;
    /// The value is empty (`key:`): a new value goes after the `:`.
    pub const EMPTY: u8 = 2;
}

/// One of [`MAPS`] under metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MapLayout {
    /// Not there: a patch adds it as metadata's last key.
    #[default]
    Absent,
    /// There in a form the marks do not cover (flow, null, odd keys): tree patch only.
    Other,
    /// A block mapping of recorded entries.
    Block {
        /// Start of the line of the map's key (`  labels:`).
        key_line: u32,
        /// Entries, as a range of the arena they were stored in.
        entries: std::ops::Range<u32>,
        /// Start of the line after the last entry (where a new entry goes).
        end: u32,
    },
}

/// The recorded metadata of an item: block mapping, its key indentation and end, and its maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaLayout {
    /// Bytes of indentation of metadata's keys.
    pub indent: u32,
    /// Start of the line after metadata's last entry (where a new map goes).
    pub end: u32,
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

//! How the input spelled its scalars, kept for items the engine writes from their tree.
//!
//! A `serde_yaml::Value` keeps a scalar's value, not its text: `0644` (a string to serde_yaml,
//! the integer 420 to go-yaml), `0o644`, `1e3`, `!!binary aGk=` or `'x'` would come out in the
//! emitter's own form, which may mean another type to another reader. So, while an item is read,
//! the loader notes every scalar whose text is not what the emitter would write for its value:
//! where it sits (a hash of its path from the item list: keys by their value, sequence entries by
//! their index, keys and values apart) and how it was written (its one-line text and its tag).
//! When the item is written from its tree, a scalar found at the same path whose value is still
//! the one its noted text reads as (checked by reading that text again) is written as the input
//! had it ([`Spellings::spelled`]). That is what "unchanged" means for a scalar: the output has,
//! at its path, the value the input had there. A mode that replaces a subtree with an equal one
//! leaves its scalars unchanged; one that writes another value gets the emitter's form, which
//! every Kubernetes reader reads as that value.
//!
//! Scalars written over several lines (block scalars, folded quoted or plain text) are strings
//! whatever their style: they keep their tag (`!!binary |`), not their layout. An alias is noted
//! as the path of its anchor, a merged key as the path of the key it was merged from, so their
//! scalars are found where the anchor wrote them.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use serde_yaml::Value;

use super::events::{Mark, ScalarStyle};
use super::resolve::CORE;

/// The path of the items list (item `i` is at `index(ITEMS, i)`).
pub const ITEMS: u64 = 0x243f_6a88_85a3_08d3;

/// Where nodes go that have no path of their own (inside complex or anchored keys).
const NOWHERE: u64 = 0x1319_8a2e_0370_7344;

/// Follows at most this many aliases and merges from one path (nested anchors).
const MAX_HOPS: usize = 64;

fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// FxHash (rustc's hasher): fast, and the paths need no protection from chosen collisions (a
/// collision can only make a scalar keep a spelling that still reads as its value).
struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.0 = mix(self.0, u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        for &b in chunks.remainder() {
            self.0 = mix(self.0, u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.0 = mix(self.0, u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = mix(self.0, i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = mix(self.0, i);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash of a value (of a mapping key, for the paths under it).
pub fn hash(v: &Value) -> u64 {
    let mut h = Fx(0);
    v.hash(&mut h);
    h.0
}

/// The path of the key hashed `key` in the mapping at `map`.
pub fn key(map: u64, key: u64) -> u64 {
    mix(mix(map, 1), key)
}

/// The path of the value of the key hashed `key` in the mapping at `map`.
pub fn value(map: u64, key: u64) -> u64 {
    mix(mix(map, 2), key)
}

/// The path of entry `i` of the sequence at `seq`.
pub fn index(seq: u64, i: usize) -> u64 {
    mix(mix(seq, 3), i as u64)
}

/// One noted scalar (or alias).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spelling {
    /// Its path.
    pub path: u64,
    /// How it was written.
    pub how: How,
}

/// How a noted scalar was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// On one line: the text (byte offsets into the input) after its tag, if any.
    Text {
        /// Start of the text.
        start: u32,
        /// Its length.
        len: u32,
        /// The tag as the output spells it (`!!binary`, `!local`, `!<tag:x.org,2000:y>`).
        tag: Option<Box<str>>,
    },
    /// Over several lines (a string): its tag, kept while the value hashes to `hash`.
    Tag {
        /// The tag as the output spells it.
        tag: Box<str>,
        /// [`hash`] of the value read.
        hash: u64,
    },
    /// An alias or a merged key: its scalars are spelled as those under `to`.
    Same {
        /// The path of the anchor or of the key merged.
        to: u64,
    },
}

/// A tag as the output spells it, every byte outside YAML's tag characters percent-encoded: the
/// core schema's as `!!name`, a local one as `!name`, the non-specific one as `!`, any other as
/// the verbatim `!<…>`.
pub fn spell_tag(tag: &[u8]) -> Box<str> {
    const SHORT: &[u8] = b"-_;/?:@&=+$.~*'()";
    const VERBATIM: &[u8] = b"-_;/?:@&=+$,.!~*'()[]";
    let mut out = String::new();
    let (body, allowed, close) = if let Some(rest) = tag.strip_prefix(CORE) {
        out.push_str("!!");
        (rest, SHORT, false)
    } else if let Some(rest) = tag.strip_prefix(b"!") {
        out.push('!');
        (rest, SHORT, false)
    } else {
        out.push_str("!<");
        (tag, VERBATIM, true)
    };
    for &b in body {
        if b.is_ascii_alphanumeric() || allowed.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if close {
        out.push('>');
    }
    out.into_boxed_str()
}

/// What the loader notes while it reads items (off outside them).
#[derive(Debug, Default)]
pub struct Log {
    /// Noting.
    pub on: bool,
    /// The path of the node being read.
    pub path: u64,
    /// What was noted, in reading order.
    pub entries: Vec<Spelling>,
    /// `Same` entries by path, to follow them while reading (merge sources).
    same: HashMap<u64, u64>,
    /// Added to the parser's offsets to make input offsets (the text read may be a part of the
    /// input, or the input with a prefix).
    shift: isize,
    /// The emitter's form of a scalar, to compare with its text.
    scratch: String,
    /// When set, a root `items` list the items reader does not take (anchored) is noted too,
    /// with this shift.
    pub items_shift: Option<isize>,
}

impl Log {
    /// Starts noting at `path`; the parser's offsets plus `shift` are input offsets.
    pub fn start(&mut self, path: u64, shift: isize) {
        self.on = true;
        self.path = path;
        self.shift = shift;
    }

    /// Stops noting.
    pub fn stop(&mut self) {
        self.on = false;
    }

    /// Drops what was noted from entry `mark` on.
    pub fn truncate(&mut self, mark: usize) {
        for e in &self.entries[mark.min(self.entries.len())..] {
            if let How::Same { .. } = e.how {
                self.same.remove(&e.path);
            }
        }
        self.entries.truncate(mark);
    }

    /// Everything noted, sorted by path, paths noted twice left out (a hash collision).
    pub fn finish(&mut self) -> Vec<Spelling> {
        self.same.clear();
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_by_key(|e| e.path);
        let mut out: Vec<Spelling> = Vec::with_capacity(entries.len());
        let mut dup = false;
        for e in entries {
            match out.last() {
                Some(last) if last.path == e.path => dup = true,
                _ => {
                    if dup {
                        out.pop();
                        dup = false;
                    }
                    out.push(e);
                }
            }
        }
        if dup {
            out.pop();
        }
        out
    }

    /// A path for nodes that have none (inside a complex or anchored key).
    pub fn nowhere(&mut self) -> u64 {
        std::mem::replace(&mut self.path, NOWHERE)
    }

    /// `path` with aliases and merges followed, as far as noted so far.
    pub fn resolve(&self, mut path: u64) -> u64 {
        for _ in 0..MAX_HOPS {
            match self.same.get(&path) {
                Some(&to) => path = to,
                None => break,
            }
        }
        path
    }

    /// Notes that the node at the current path is spelled as the one at `to`.
    pub fn same(&mut self, to: u64) {
        let path = self.path;
        self.same.insert(path, to);
        self.entries.push(Spelling {
            path,
            how: How::Same { to },
        });
    }

    /// Notes `how` at the current path.
    pub fn push(&mut self, how: How) {
        if let How::Same { to } = how {
            self.same(to);
            return;
        }
        self.entries.push(Spelling {
            path: self.path,
            how,
        });
    }

    /// How the scalar `value` read from `text[start..end]` (its properties included) was
    /// written, when the emitter would write it otherwise.
    pub fn scalar(
        &mut self,
        text: &str,
        start: Mark,
        end: Mark,
        value: &Value,
        style: ScalarStyle,
        tag: Option<&str>,
    ) -> Option<How> {
        // The common case first: a plain string the emitter writes plain, as it was read (a
        // one-line plain scalar's text is its value).
        if tag.is_none()
            && style == ScalarStyle::Plain
            && let Value::String(s) = value
            && (plain_long_word(s) || s.contains('\n') || crate::krm::emit::plain_as_read(s))
        {
            return None;
        }
        if let Some(t) = tag
            && matches!(t, "!!null" | "!!bool" | "!!int" | "!!float")
            && (style != ScalarStyle::Plain || t == "!!null")
        {
            // Read as the type the tag names, which the emitter's form has for every reader;
            // serde_yaml refuses some of these spellings (`!!null ''`).
            return None;
        }
        // Untagged and without anchor, the text starts at the node.
        let at = if tag.is_none() && text.as_bytes().get(start.index) != Some(&b'&') {
            Some(start.index)
        } else {
            value_start(text, start.index, end.index, tag.is_some())
        };
        let body = at.and_then(|at| text.get(at..end.index));
        let one_line = body.is_some_and(|b| !b.contains(['\n', '\r']));
        if tag.is_none() && matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
            return None;
        }
        if !one_line {
            // A string over several lines: only a tag to keep.
            return tag.filter(|_| value.is_string()).map(|t| How::Tag {
                tag: t.into(),
                hash: hash(value),
            });
        }
        let body = body?;
        if body.is_empty() {
            // Empty (a null, or an empty string with a tag): the emitter's `null` or `""`
            // means the same; a tag other than the core ones that resolve is kept.
            return tag.filter(|_| value.is_string()).map(|t| How::Tag {
                tag: t.into(),
                hash: hash(value),
            });
        }
        if tag.is_none() && style != ScalarStyle::SingleQuoted && !canonical_number(body, value) {
            // (The emitter never writes single quotes.)
            self.scratch.clear();
            crate::krm::emit::scalar(&mut self.scratch, value);
            if self.scratch == body {
                return None;
            }
        } else if tag.is_none() && style == ScalarStyle::Plain {
            return None;
        }
        let start = u32::try_from(at?.checked_add_signed(self.shift)?).ok()?;
        let len = u32::try_from(body.len()).ok()?;
        Some(How::Text {
            start,
            len,
            tag: tag.map(Box::from),
        })
    }
}

/// A quick yes for most plain strings: starts with an ASCII letter, longer than every word a
/// YAML reader resolves (`false`, `infinity`), printable ASCII throughout and not ending in `:`.
/// The emitter writes such a string plain (`emit::plain_ok` agrees; a test checks).
fn plain_long_word(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() > 8
        && b[0].is_ascii_alphabetic()
        && b[b.len() - 1] != b':'
        && b.iter().all(|&c| (0x20..0x7f).contains(&c))
        && !s.contains(": ")
        && !s.contains(" #")
}

/// True for a plain decimal integer as the emitter writes it (`80`, `-3`), without formatting it.
fn canonical_number(body: &str, value: &Value) -> bool {
    let Value::Number(n) = value else {
        return false;
    };
    if !(n.is_u64() || n.is_i64()) {
        return false;
    }
    let digits = body.strip_prefix('-').unwrap_or(body);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits.len() == 1 || !digits.starts_with('0'))
        && !(body.starts_with('-') && digits == "0")
}

/// Where a scalar's text starts after its properties (`&anchor`, `!tag`), when that is on the
/// line they are on; `None` when a comment or a line break comes between.
fn value_start(text: &str, start: usize, end: usize, tagged: bool) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = start;
    loop {
        match b.get(i) {
            Some(b'&') | Some(b'!') if i < end && (tagged || b[i] == b'&') => {
                if b[i] == b'!' && b.get(i + 1) == Some(&b'<') {
                    while i < end && b[i] != b'>' {
                        i += 1;
                    }
                    i += 1;
                } else {
                    while i < end && !matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
                        i += 1;
                    }
                }
                let spaces = b[i.min(b.len())..]
                    .iter()
                    .take_while(|c| matches!(c, b' ' | b'\t'))
                    .count();
                i += spaces;
                if matches!(b.get(i), Some(b'\n' | b'\r' | b'#')) && i < end {
                    return None;
                }
            }
            _ => return (i <= end).then_some(i),
        }
    }
}

/// The noted spellings of one input, for writing its items.
#[derive(Debug, Clone, Copy)]
pub struct Spellings<'a> {
    /// The input text the offsets index.
    pub text: &'a str,
    /// Sorted by path, one entry a path.
    pub entries: &'a [Spelling],
    /// Some entry is an alias or a merged key ([`How::Same`]): paths must be followed.
    pub redirects: bool,
}

impl<'a> Spellings<'a> {
    /// The spellings `entries` (sorted, as [`Log::finish`] gives them) of `text`.
    pub fn new(text: &'a str, entries: &'a [Spelling]) -> Spellings<'a> {
        Spellings {
            text,
            entries,
            redirects: has_redirects(entries),
        }
    }
}

/// Whether some entry is an alias or a merged key.
pub fn has_redirects(entries: &[Spelling]) -> bool {
    entries.iter().any(|e| matches!(e.how, How::Same { .. }))
}

/// What [`Spellings::spelled`] found for a scalar.
#[derive(Debug, PartialEq, Eq)]
pub enum Spelled<'a> {
    /// Written as the input had it: this text (tag included).
    Text(String),
    /// The input's tag, then the emitter's form of the value.
    Tag(&'a str),
    /// The emitter's form.
    No,
}

impl<'a> Spellings<'a> {
    fn get(&self, path: u64) -> Option<&'a How> {
        let entries = self.entries;
        let n = entries.len();
        if n == 0 {
            return None;
        }
        // The paths are hashes, spread evenly: start where `path` would be and widen the window
        // until it holds `path`, so most lookups touch a few neighbouring entries instead of
        // sixteen scattered ones.
        let guess = ((u128::from(path) * n as u128) >> 64) as usize;
        let (mut lo, mut hi) = (guess, guess + 1);
        let mut step = 1;
        while lo > 0 && entries[lo].path > path {
            lo = lo.saturating_sub(step);
            step *= 2;
        }
        step = 1;
        while hi < n && entries[hi - 1].path < path {
            hi = (hi + step).min(n);
            step *= 2;
        }
        entries[lo..hi]
            .binary_search_by_key(&path, |e| e.path)
            .ok()
            .map(|i| &entries[lo + i].how)
    }

    /// `path` with aliases and merges followed.
    pub fn resolve(&self, mut path: u64) -> u64 {
        if !self.redirects {
            return path;
        }
        for _ in 0..MAX_HOPS {
            match self.get(path) {
                Some(How::Same { to }) => path = *to,
                _ => break,
            }
        }
        path
    }

    /// How to write the scalar `v` at `path` (resolved): as the input spelled it there when that
    /// spelling still reads as `v`. `key` for a mapping key (then read back as a key).
    pub fn spelled(&self, path: u64, v: &Value, key: bool) -> Spelled<'a> {
        match self.get(path) {
            Some(How::Text { start, len, tag }) => {
                let (start, len) = (*start as usize, *len as usize);
                let Some(text) = self.text.get(start..start + len) else {
                    return Spelled::No;
                };
                let mut spelled =
                    String::with_capacity(len + tag.as_ref().map_or(0, |t| t.len() + 1));
                if let Some(tag) = tag {
                    spelled.push_str(tag);
                    spelled.push(' ');
                }
                spelled.push_str(text);
                if reads_as(&spelled, v, key) {
                    Spelled::Text(spelled)
                } else {
                    Spelled::No
                }
            }
            Some(How::Tag { tag, hash: h }) if v.is_string() && hash(v) == *h => Spelled::Tag(tag),
            _ => Spelled::No,
        }
    }
}

/// What an untagged one-line text reads as, without a parser when that is simple: a plain
/// scalar by the reader's own rules, a single-quoted one with `''` for `'`, a double-quoted one
/// without escapes. `None` when a parser must say.
fn read_simply(text: &str) -> Option<Value> {
    let b = text.as_bytes();
    match b.first()? {
        b'\'' if b.len() >= 2 && b[b.len() - 1] == b'\'' => {
            Some(Value::String(text[1..text.len() - 1].replace("''", "'")))
        }
        b'"' if b.len() >= 2 && b[b.len() - 1] == b'"' && !text.contains('\\') => {
            let inner = &text[1..text.len() - 1];
            (!inner.contains('"')).then(|| Value::String(inner.to_owned()))
        }
        b'\'' | b'"' | b'!' | b'&' | b'*' => None,
        _ => super::resolve::scalar(text, None, super::events::ScalarStyle::Plain).ok(),
    }
}

/// True when `spelled` (a one-line scalar with its tag) reads as `v` after `- ` or as a key.
fn reads_as(spelled: &str, v: &Value, key: bool) -> bool {
    if !key && let Some(read) = read_simply(spelled) {
        return same_value(Some(read), v);
    }
    let read = if key {
        if spelled.len() > 1000 {
            return false;
        }
        match super::from_str(&format!("{spelled}: ~\n")) {
            Ok(Value::Mapping(m)) if m.len() == 1 => m.into_iter().next().map(|(k, _)| k),
            _ => None,
        }
    } else {
        match super::from_str(&format!("- {spelled}\n")) {
            Ok(Value::Sequence(mut s)) if s.len() == 1 => s.pop(),
            _ => None,
        }
    };
    same_value(read, v)
}

/// `read == v`, NaN equal to NaN.
fn same_value(read: Option<Value>, v: &Value) -> bool {
    match (read, v) {
        (Some(Value::Number(a)), Value::Number(b)) if a.is_f64() && b.is_f64() => {
            let (a, b) = (a.as_f64(), b.as_f64());
            a == b || a.zip(b).is_some_and(|(a, b)| a.is_nan() && b.is_nan())
        }
        (Some(read), v) => read == *v,
        (None, _) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krm::emit::emit_item;
    use crate::krm::io::parse_text;

    /// Item 0 of `list` (a ResourceList) written from its tree, after `edit`.
    fn rewritten(list: &str, edit: impl FnOnce(&mut Value)) -> String {
        let parsed = parse_text(list).unwrap();
        let mut item = parsed.items[0].clone();
        edit(&mut item);
        let all = crate::krm::io::all_spellings(list);
        let entries = if parsed.spellings.is_empty() {
            &all
        } else {
            &parsed.spellings
        };
        let spellings = Spellings::new(list, entries);
        let mut out = String::new();
        emit_item(&mut out, &item, &spellings, 0);
        out
    }

    const LIST: &str = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n  - kind: ConfigMap\n    data:\n      mode: 0644\n      size: 1_048_576\n      o: 0o644\n      e: 1e3\n      bin: !!binary aGVsbG8=\n      ts: !!timestamp 2001-12-14\n      eq: =\n      q: 'single'\n      anchored: &x 012\n      alias: *x\n      base: &m {k: 0755, j: \"x\"}\n      merged:\n        <<: *m\n        own: 08\n      lines: !!binary |\n        aGVsbG8=\n        aGVsbG8=\n      0777: key\n      list: [0644, \"0644\", '0644']\n";

    #[test]
    fn unchanged_scalars_are_written_as_read() {
        let out = rewritten(LIST, |_| {});
        let want = "- kind: ConfigMap\n  data:\n    mode: 0644\n    size: 1_048_576\n    o: 0o644\n    e: 1e3\n    bin: !!binary aGVsbG8=\n    ts: !!timestamp 2001-12-14\n    eq: =\n    q: 'single'\n    anchored: 012\n    alias: 012\n    base:\n      k: 0755\n      j: \"x\"\n    merged:\n      own: 08\n      k: 0755\n      j: \"x\"\n    lines: !!binary |\n      aGVsbG8=\n      aGVsbG8=\n    0777: key\n    list:\n    - 0644\n    - \"0644\"\n    - '0644'\n";
        assert_eq!(out, want);
    }

    /// A value the mode changed is written in the emitter's form; an equal value put in its
    /// place is unchanged.
    #[test]
    fn changed_scalars_are_written_in_the_emitters_form() {
        let out = rewritten(LIST, |item| {
            let data = item["data"].as_mapping_mut().unwrap();
            data.insert("mode".into(), "0755".into());
            data.insert("size".into(), "1_048_576".into());
            data.insert("eq".into(), 1.into());
            data.insert("new".into(), "=".into());
            data.insert("bin".into(), "aGk=".into());
        });
        for line in [
            "    mode: \"0755\"\n",
            "    size: 1_048_576\n",
            "    eq: 1\n",
            "    new: \"=\"\n",
            "    bin: aGk=\n",
            "    ts: !!timestamp 2001-12-14\n",
        ] {
            assert!(out.contains(line), "{line:?} in\n{out}");
        }
    }

    #[test]
    fn long_plain_words_are_what_the_emitter_writes_plain() {
        for s in [
            "metallb-system",
            "app.kubernetes.io/name",
            "infinity.x",
            "a: b c d e f",
            "abc # def gh",
            "abcdefgh:",
            "abcdefghi",
        ] {
            if plain_long_word(s) {
                assert!(crate::krm::emit::plain_as_read(s), "{s}");
            }
        }
        assert!(plain_long_word("metallb-system"));
    }

    #[test]
    fn tags_are_spelled_for_the_output() {
        assert_eq!(&*spell_tag(b"tag:yaml.org,2002:binary"), "!!binary");
        assert_eq!(&*spell_tag(b"!"), "!");
        assert_eq!(&*spell_tag(b"!a b"), "!a%20b");
        assert_eq!(
            &*spell_tag(b"tag:example.com,2000:x"),
            "!<tag:example.com,2000:x>"
        );
    }

    /// Items that are copied note nothing they do not need: the noted spellings of a
    /// kpt-written item are few.
    #[test]
    fn canonical_scalars_are_not_noted() {
        let list = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- kind: Service\n  metadata:\n    name: a\n    annotations:\n      x: \"0644\"\n  spec:\n    ports:\n    - port: 80\n      name: http\n";
        assert!(crate::krm::io::all_spellings(list).is_empty());
        // Items whose text may be copied are not noted on the first reading at all.
        let list = list.replace("- port: 80", "- port: 0x50");
        assert!(parse_text(&list).unwrap().spellings.is_empty());
        assert_eq!(crate::krm::io::all_spellings(&list).len(), 1);
    }
}

//! Skipping a value: its events are read and checked, nothing is built. The reader skips the
//! values of an item no mode reads past its `metadata` (a Deployment's `spec`), whose text the
//! writer copies as read.
//!
//! A skipped value must be one building would have accepted and that nothing later needs: the
//! loader refuses to skip ([`LoadError::refuse_skip`], and the caller builds every item) where
//! it cannot tell that cheaply:
//! - anchors (a later item may alias them), aliases, tags and merge keys;
//! - keys that are not plain strings or quoted scalars, or a plain key that may resolve to
//!   another type (`1`, `true`, `~`): their equality is the resolved value's;
//! - two keys of one mapping with the same hash (a duplicate key is an error building reports);
//! - a plain scalar that may not resolve (an integer beyond 64 bits);
//! - nesting beyond [`MAX_DEPTH`].
//!
//! What building counts or records is kept: nodes and the end of the last scalar.

use super::super::events::{Event, ScalarStyle};
use super::super::resolve;
use super::{LoadError, Loader, MAX_DEPTH};

/// A collection being skipped.
struct Open {
    mapping: bool,
    flow: bool,
    /// A mapping's next scalar is a key.
    expect_key: bool,
    /// Hashes of a mapping's keys.
    keys: Vec<u64>,
}

impl Loader<'_> {
    /// Reads the events of one value whose parents are `enclosing` collections, building nothing.
    pub(super) fn skip_value(&mut self, enclosing: usize) -> Result<(), LoadError> {
        let mut open: Vec<Open> = Vec::new();
        loop {
            let (event, start, end) = self.parser.next_event().map_err(LoadError::syntax)?;
            let refuse = || Err(LoadError::refuse_skip(start));
            let as_key = open.last().is_some_and(|o| o.mapping && o.expect_key);
            match event {
                Event::Scalar {
                    anchor,
                    tag,
                    value,
                    style,
                } => {
                    if anchor.is_some() || tag.is_some() {
                        return refuse();
                    }
                    self.nodes += 1;
                    if end.index > start.index {
                        self.last_end = end.index;
                    }
                    let Ok(text) = std::str::from_utf8(value) else {
                        return refuse();
                    };
                    let plain = style == ScalarStyle::Plain;
                    // Such a key's equality is its resolved value's; such a value may not resolve.
                    if plain
                        && resolve::plain_may_not_be_string(text)
                        && (as_key || resolve::scalar(text, None, style).is_err())
                    {
                        return refuse();
                    }
                    if as_key {
                        if plain && text == "<<" {
                            return refuse();
                        }
                        if let Some(o) = open.last_mut() {
                            o.keys.push(hash(value));
                        }
                    }
                }
                Event::SequenceStart { anchor, tag, flow }
                | Event::MappingStart { anchor, tag, flow } => {
                    if anchor.is_some() || tag.is_some() || as_key {
                        return refuse();
                    }
                    if enclosing + open.len() + 1 > MAX_DEPTH {
                        return refuse();
                    }
                    self.nodes += 1;
                    open.push(Open {
                        mapping: matches!(event, Event::MappingStart { .. }),
                        flow,
                        expect_key: true,
                        keys: Vec::new(),
                    });
                    continue;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(mut closed) = open.pop() else {
                        return refuse();
                    };
                    if closed.flow {
                        self.last_end = end.index;
                    }
                    closed.keys.sort_unstable();
                    if closed.keys.windows(2).any(|w| w[0] == w[1]) {
                        return refuse();
                    }
                }
                _ => return refuse(),
            }
            // A node is complete: the value itself, or a key or value of its parent.
            match open.last_mut() {
                None => return Ok(()),
                Some(parent) if parent.mapping => parent.expect_key = !parent.expect_key,
                Some(_) => {}
            }
        }
    }
}

/// 64-bit FNV-1a of a key's text (keys of one mapping compare equal only when their texts do).
fn hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

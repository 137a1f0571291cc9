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
//!
//! A mode may also read a few keys of a skipped item's `spec` (a Sylva unit's `kubeConfig`):
//! [`Loader::partial`] builds those and skips the others, with the same refusals, plus one: a
//! `spec` that is not a plain mapping (an anchor, a tag, a sequence) is built after all.

use std::collections::HashSet;

use serde_yaml::{Mapping, Value};

use super::super::events::{Event, ScalarStyle};
use super::super::resolve;
use super::{Kind, LoadError, Loader, MAX_DEPTH, Node, Role, Segment};

/// A collection being skipped.
struct Open {
    mapping: bool,
    flow: bool,
    /// A mapping's next scalar is a key.
    expect_key: bool,
    /// Where the hashes of a mapping's keys start in [`SkipScratch::keys`].
    keys_from: usize,
}

/// What skipping needs while it reads, kept by the loader from one skipped value to the next:
/// a pass-through item's values are skipped one after another, and these buffers would
/// otherwise be allocated and freed for each (and the keys' for each mapping).
#[derive(Default)]
pub(in crate::krm::yaml) struct SkipScratch {
    open: Vec<Open>,
    /// Hashes of the keys of the open mappings, the innermost's last.
    keys: Vec<u64>,
}

impl Loader<'_> {
    /// Reads the events of one value whose parents are `enclosing` collections, building nothing.
    pub(super) fn skip_value(&mut self, enclosing: usize) -> Result<(), LoadError> {
        let mut scratch = std::mem::take(&mut self.skip_scratch);
        scratch.open.clear();
        scratch.keys.clear();
        let skipped = self.skip_with(enclosing, &mut scratch);
        self.skip_scratch = scratch;
        skipped
    }

    fn skip_with(&mut self, enclosing: usize, scratch: &mut SkipScratch) -> Result<(), LoadError> {
        let SkipScratch { open, keys } = scratch;
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
                    // libyaml reads UTF-8 only (its reader refuses invalid sequences, and
                    // `\u` escapes outside Unicode), so a value's bytes are UTF-8: they are
                    // decoded only where the text is resolved.
                    let plain = style == ScalarStyle::Plain;
                    // Such a key's equality is its resolved value's; such a value may not resolve.
                    if plain && resolve::plain_may_not_be_string(value) {
                        let resolves = std::str::from_utf8(value)
                            .is_ok_and(|text| resolve::scalar(text, None, style).is_ok());
                        if as_key || !resolves {
                            return refuse();
                        }
                    }
                    if as_key {
                        if plain && value == b"<<" {
                            return refuse();
                        }
                        keys.push(hash(value));
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
                        keys_from: keys.len(),
                    });
                    continue;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(closed) = open.pop() else {
                        return refuse();
                    };
                    if closed.flow {
                        self.last_end = end.index;
                    }
                    let own = &mut keys[closed.keys_from..];
                    own.sort_unstable();
                    if own.windows(2).any(|w| w[0] == w[1]) {
                        return refuse();
                    }
                    keys.truncate(closed.keys_from);
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

impl Loader<'_> {
    /// The mapping that starts with `node` (an item's `spec`), whose parents are `enclosing`
    /// collections, with only the values of `keys` built: the others are skipped.
    pub(super) fn partial(
        &mut self,
        node: Node,
        enclosing: usize,
        keys: &[&str],
    ) -> Result<Value, LoadError> {
        let Kind::MappingStart(props) = node.kind else {
            return Err(LoadError::refuse_skip(node.start));
        };
        if props.anchor.is_some() || props.tag.is_some() {
            return Err(LoadError::refuse_skip(node.start));
        }
        self.collection(props, node.start, enclosing, |this, depth, flow| {
            this.partial_entries(depth, flow, keys).map(Value::Mapping)
        })
    }

    fn partial_entries(
        &mut self,
        depth: usize,
        flow: bool,
        keys: &[&str],
    ) -> Result<Mapping, LoadError> {
        let mut map = Mapping::new();
        // A set: a `spec` may have any number of keys, and each is looked up.
        let mut skipped: HashSet<String> = HashSet::new();
        loop {
            let node = self.next_node()?;
            let key = match node.kind {
                Kind::MappingEnd => {
                    if flow {
                        self.last_end = node.end.index;
                    }
                    return Ok(map);
                }
                // Only a key that resolves to a string (`true`, `1` do not): keys are then equal
                // when their texts are, so a duplicate of a skipped key is seen here.
                Kind::Scalar {
                    value: Ok(Value::String(key)),
                    anchor: None,
                    merge: false,
                    tagged: false,
                    ..
                } => key,
                _ => return Err(LoadError::refuse_skip(node.start)),
            };
            self.nodes += 1;
            if map.contains_key(key.as_str()) || skipped.contains(&key) {
                return Err(LoadError::refuse_skip(node.start));
            }
            if keys.contains(&key.as_str()) {
                let value = self.next_node()?;
                let value = self
                    .build(value, depth, Role::None)
                    .map_err(|e| e.within(Segment::Key(key.clone())))?;
                map.insert(Value::String(key), value);
            } else {
                self.skip_value(depth)?;
                skipped.insert(key);
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

//! Building `serde_yaml::Value`s straight from the parser's events, in one pass.
//!
//! What it adds to the events: scalars resolved ([`super::resolve`]), duplicate keys refused,
//! aliases expanded (within the limits below), merge keys `<<` applied, and — for the item the
//! caller is reading — whether it refers to anchors outside itself and where its metadata maps
//! sit (`yaml/record.rs`).
//!
//! Merge keys are applied as kyaml's `DeAnchor` applies them (kustomize's reader; kubectl reads
//! the same values): a plain `<<` key (or one tagged `!!merge`) takes a mapping, an alias to
//! one, or a sequence of those; the mapping's own keys win, then earlier merge sources over
//! later ones; the own keys keep their order without the `<<`, and the merged keys follow,
//! those of the last source first. (serde_yaml's `apply_merge` gives the same values but moves
//! the mapping's last key into the place of `<<`.)
//!
//! Limits: collections nest at most [`MAX_DEPTH`] deep (serde_yaml's limit), aliases included;
//! aliases add at most [`expansion_limit`] nodes in all. An alias inside the node its anchor is
//! on is refused, as go-yaml refuses it.

use std::collections::{HashMap, HashSet};

use serde_yaml::value::TaggedValue;
use serde_yaml::{Mapping, Value};

use super::events::{Mark, Parser, ScalarStyle};
use super::layout::{MAPS, line_start_before_spaces};
use super::merge::{merge_into, merge_sources};
pub use super::node::{Kind, LoadError, Node, Props, Segment};
use super::record::{RecordedEntry, Recorder};
use super::spelling::{self, How};
use entries::Entries;

/// What [`Loader::item_lean`] builds of an item past its head: `None` all of it, else only
/// these keys of its `spec` (none: nothing).
pub type SpecKeys = Option<&'static [&'static str]>;

/// Deepest nesting of collections, the document's root included.
pub const MAX_DEPTH: usize = 128;

/// Nodes aliases may add regardless of the input's size.
const EXPANSION_FLOOR: usize = 1 << 18;

/// How many nodes aliases may add in all: 256 Ki plus one per 4 bytes of input. A tree node costs
/// about 100 bytes, so a document that expands past this is an alias bomb, not a package: the
/// Sylva values (387 kB, 8 aliases) expand by a few hundred nodes.
pub fn expansion_limit(input_bytes: usize) -> usize {
    EXPANSION_FLOOR + input_bytes / 4
}

/// Reads the root mapping's `items` list for the caller (the ResourceList reader), which
/// observes, places and may release each item as it is read.
pub trait ItemsSink {
    /// Builds the value of the root's `items` key, a sequence (flow when `flow`) whose start
    /// event was just read; `root` holds the root's entries before it. Entries are read with
    /// [`Loader::next_node`], [`Loader::begin_item`] and [`Loader::item`] up to the sequence's end.
    fn items(
        &mut self,
        loader: &mut Loader<'_>,
        root: &Mapping,
        flow: bool,
    ) -> Result<Value, LoadError>;
}

/// An anchor's node, for its aliases.
struct Anchored {
    /// `None` while the anchored node is being built (an alias to it then is refused).
    value: Option<Value>,
    /// Where the anchor is defined.
    def: usize,
    /// Nodes in the value (what each alias adds).
    nodes: usize,
    /// Collection nesting inside the value (0 for a scalar).
    depth: usize,
    /// Its path, when its spellings were noted ([`spelling::Log`]).
    path: Option<u64>,
    /// How it was written, for a scalar whose spelling was noted.
    spelled: Option<How>,
}

/// What role a mapping plays for the [`Recorder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    None,
    Item,
    Metadata,
    Map(usize),
}

/// Builds values from the events of one input.
pub struct Loader<'a> {
    text: &'a str,
    parser: Parser<'a>,
    anchors: HashMap<Box<[u8]>, Anchored>,
    /// Nodes built so far, expansions included.
    nodes: usize,
    /// Nodes added by aliases so far, and the most allowed.
    expanded: usize,
    limit: usize,
    /// Deepest collection nesting reached (for the depth of anchored values).
    deepest: usize,
    /// End of the last event with text (scalars, aliases, flow collection ends).
    last_end: usize,
    /// Anchors, aliases and merge keys seen so far.
    refs: usize,
    /// Aliases to anchors defined before this offset set `outside`.
    scope: usize,
    outside: bool,
    /// The current item's metadata layout.
    pub recorder: Recorder,
    /// How the scalars of the items being read were written ([`spelling`]).
    pub spellings: spelling::Log,
    /// The item just read by [`Loader::item_lean`] was skipped past its metadata.
    skipped: bool,
    /// The entries of the mappings being read, built at their size when each ends
    /// (`load/entries.rs`).
    pending: Vec<(Value, Value)>,
    /// The buffers of [`Loader::skip_value`], reused.
    skip_scratch: skip::SkipScratch,
}

impl<'a> Loader<'a> {
    /// A loader over `text` whose aliases may add at most `limit` nodes.
    pub fn new(text: &'a str, limit: usize) -> Loader<'a> {
        Loader {
            text,
            parser: Parser::new(text.as_bytes()),
            anchors: HashMap::new(),
            nodes: 0,
            expanded: 0,
            limit,
            deepest: 0,
            last_end: 0,
            refs: 0,
            scope: 0,
            outside: false,
            recorder: Recorder::default(),
            spellings: spelling::Log::default(),
            skipped: false,
            pending: Vec::new(),
            skip_scratch: skip::SkipScratch::default(),
        }
    }

    /// The next event.
    pub fn next_node(&mut self) -> Result<Node, LoadError> {
        let (event, start, end) = self.parser.next_event().map_err(LoadError::syntax)?;
        let node = Node::from_event(event, start, end);
        if matches!(node.kind, Kind::Scalar { .. } | Kind::Alias(_)) && end.index > start.index {
            self.last_end = end.index;
        }
        Ok(node)
    }

    /// The value that starts with `node`, whose parents are `enclosing` collections.
    pub fn value(&mut self, node: Node, enclosing: usize) -> Result<Value, LoadError> {
        self.build(node, enclosing, Role::None)
    }

    /// The document's root value; when it is a mapping, its `items` list (a plain sequence,
    /// without anchor or tag) is read by `sink`.
    pub fn root(&mut self, node: Node, sink: &mut dyn ItemsSink) -> Result<Value, LoadError> {
        match node.kind {
            Kind::MappingStart(props) => {
                self.collection(props, node.start, 0, |this, depth, flow| {
                    this.mapping(depth, flow, Role::None, Some(sink), None)
                        .map(Value::Mapping)
                })
            }
            kind => self.build(
                Node {
                    kind,
                    start: node.start,
                    end: node.end,
                },
                0,
                Role::None,
            ),
        }
    }

    /// The most nodes aliases may add (see [`expansion_limit`]).
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Starts reading an item that begins at byte `start`: aliases to anchors defined before it
    /// are noted ([`Loader::outside`]), and its metadata layout is recorded when `record`.
    pub fn begin_item(&mut self, start: usize, record: bool) {
        self.scope = start;
        self.outside = false;
        self.recorder.reset(record);
    }

    /// The value of an item (see [`Loader::begin_item`]).
    pub fn item(&mut self, node: Node, enclosing: usize) -> Result<Value, LoadError> {
        let role = match &node.kind {
            Kind::MappingStart(p) if p.plain_block() => Role::Item,
            _ => Role::None,
        };
        self.build(node, enclosing, role)
    }

    /// The value of an item (see [`Loader::begin_item`]) whose values after `apiVersion`, `kind`
    /// and `metadata` are skipped ([`skip`]) where `reads` says no mode reads them: it is given
    /// those three as soon as they are read, before any other key, and answers `None` to have
    /// the item built whole, or the keys of its `spec` to build (none: the head alone), every
    /// other value skipped. Also returns whether it skipped: the value then holds only those
    /// three and those keys of `spec`.
    pub fn item_lean(
        &mut self,
        node: Node,
        enclosing: usize,
        reads: &mut dyn FnMut(&Value) -> SpecKeys,
    ) -> Result<(Value, bool), LoadError> {
        self.skipped = false;
        let start = node.start;
        match node.kind {
            Kind::MappingStart(props) if props.plain_block() => {
                let value = self.collection(props, start, enclosing, |this, depth, flow| {
                    this.mapping(depth, flow, Role::Item, None, Some(reads))
                        .map(Value::Mapping)
                })?;
                Ok((value, std::mem::take(&mut self.skipped)))
            }
            _ => self.item(node, enclosing).map(|v| (v, false)),
        }
    }

    /// Whether the current item has an alias to an anchor defined before it.
    pub fn outside(&self) -> bool {
        self.outside
    }

    /// Anchors, aliases and merge keys seen so far (an item has none when this did not change
    /// while it was read).
    pub fn refs(&self) -> usize {
        self.refs
    }

    /// The text being loaded.
    pub fn text(&self) -> &'a str {
        self.text
    }

    fn build(&mut self, node: Node, enclosing: usize, role: Role) -> Result<Value, LoadError> {
        let start = node.start;
        match node.kind {
            Kind::Scalar {
                value,
                anchor,
                style,
                tag,
                ..
            } => {
                self.nodes += 1;
                let value = value.map_err(|e| LoadError::content(e.to_string(), start))?;
                let spelled = if self.spellings.on {
                    let how = self.spellings.scalar(
                        self.text,
                        start,
                        node.end,
                        &value,
                        style,
                        tag.as_deref(),
                    );
                    if let Some(how) = &how {
                        self.spellings.push(how.clone());
                    }
                    how
                } else {
                    None
                };
                if let Some(name) = anchor {
                    self.refs += 1;
                    self.anchors.insert(
                        name,
                        Anchored {
                            value: Some(value.clone()),
                            def: start.index,
                            nodes: 1,
                            depth: 0,
                            path: self.spellings.on.then_some(self.spellings.path),
                            spelled,
                        },
                    );
                }
                Ok(value)
            }
            Kind::Alias(name) => self.alias(&name, start, enclosing),
            Kind::SequenceStart(props) => {
                self.collection(props, start, enclosing, |this, depth, flow| {
                    this.sequence(depth, flow).map(Value::Sequence)
                })
            }
            Kind::MappingStart(props) => {
                self.collection(props, start, enclosing, |this, depth, flow| {
                    this.mapping(depth, flow, role, None, None)
                        .map(Value::Mapping)
                })
            }
            other => Err(LoadError::content(
                format!("unexpected YAML event {other:?}"),
                start,
            )),
        }
    }

    /// A sequence or mapping: depth check, anchor bookkeeping, local tag.
    fn collection(
        &mut self,
        props: Props,
        start: Mark,
        enclosing: usize,
        body: impl FnOnce(&mut Self, usize, bool) -> Result<Value, LoadError>,
    ) -> Result<Value, LoadError> {
        let depth = enclosing + 1;
        if depth > MAX_DEPTH {
            return Err(too_deep(start));
        }
        self.deepest = self.deepest.max(depth);
        self.nodes += 1;
        let path = self.spellings.on.then_some(self.spellings.path);
        let anchored = props.anchor.map(|name| {
            self.refs += 1;
            // Registered now, so an alias inside the node finds it unfinished.
            self.anchors.insert(
                name.clone(),
                Anchored {
                    value: None,
                    def: start.index,
                    nodes: 0,
                    depth: 0,
                    path: None,
                    spelled: None,
                },
            );
            (
                name,
                self.nodes - 1,
                std::mem::replace(&mut self.deepest, depth),
            )
        });
        let mut value = body(self, depth, props.flow)?;
        if let Some(tag) = props.tag {
            value = Value::Tagged(Box::new(TaggedValue { tag, value }));
        }
        if let Some((name, nodes_before, deepest_before)) = anchored {
            let anchored = Anchored {
                value: Some(value.clone()),
                def: start.index,
                nodes: self.nodes - nodes_before,
                depth: self.deepest - enclosing,
                path: path.filter(|_| self.spellings.on),
                spelled: None,
            };
            self.deepest = self.deepest.max(deepest_before);
            self.anchors.insert(name, anchored);
        }
        Ok(value)
    }

    fn alias(&mut self, name: &[u8], at: Mark, enclosing: usize) -> Result<Value, LoadError> {
        let shown = String::from_utf8_lossy(name);
        let Some(anchored) = self.anchors.get(name) else {
            return Err(LoadError::content(format!("unknown anchor *{shown}"), at));
        };
        let Some(value) = &anchored.value else {
            return Err(LoadError::content(
                format!("alias *{shown} is inside the node its anchor is on"),
                at,
            ));
        };
        if enclosing + anchored.depth > MAX_DEPTH {
            return Err(too_deep(at));
        }
        self.expanded += anchored.nodes;
        if self.expanded > self.limit {
            return Err(LoadError::content(
                format!(
                    "repetition limit exceeded: aliases expand to more than {} nodes (256 Ki plus \
                     one per 4 bytes of input)",
                    self.limit
                ),
                at,
            ));
        }
        self.refs += 1;
        self.outside |= anchored.def < self.scope;
        if self.spellings.on {
            // The alias's scalars are spelled as its anchor's.
            match (&anchored.spelled, anchored.path) {
                (Some(how), _) => self.spellings.push(how.clone()),
                (None, Some(to)) if anchored.depth > 0 => self.spellings.same(to),
                _ => {}
            }
        }
        self.nodes += anchored.nodes;
        self.deepest = self.deepest.max(enclosing + anchored.depth);
        Ok(value.clone())
    }

    fn sequence(&mut self, depth: usize, flow: bool) -> Result<Vec<Value>, LoadError> {
        let mut seq = Vec::new();
        let path = self.spellings.path;
        loop {
            let node = self.next_node()?;
            if let Kind::SequenceEnd = node.kind {
                if flow {
                    self.last_end = node.end.index;
                }
                self.spellings.path = path;
                return Ok(seq);
            }
            let i = seq.len();
            if self.spellings.on {
                self.spellings.path = spelling::index(path, i);
            }
            seq.push(
                self.build(node, depth, Role::None)
                    .map_err(|e| e.within(Segment::Index(i)))?,
            );
        }
    }

    fn mapping(
        &mut self,
        depth: usize,
        flow: bool,
        role: Role,
        mut sink: Option<&mut dyn ItemsSink>,
        mut lean: Option<&mut dyn FnMut(&Value) -> SpecKeys>,
    ) -> Result<Mapping, LoadError> {
        // The root and a lean item are looked into while they are read (`sink`, `lean`).
        let mut entries = match (&sink, &lean) {
            (None, None) => self.pending_entries(),
            _ => Entries::Built(Mapping::new()),
        };
        let mut lean_read = LeanRead::default();
        let mut merges: Vec<Value> = Vec::new();
        let mut merge_seen = false;
        let path = self.spellings.path;
        // The path of the merge key's value, for the keys merged from it.
        let mut merge_path = None;
        if role == Role::Metadata {
            self.recorder.open_metadata();
        }
        loop {
            let node = self.next_node()?;
            self.spellings.path = path;
            if let Kind::MappingEnd = node.kind {
                if flow {
                    self.last_end = node.end.index;
                }
                break;
            }
            let key = self.mapping_key(node, depth, path)?;
            if self.spellings.on {
                self.spellings.path = spelling::value(path, spelling::hash(&key.value));
            }
            if let Some(reads) = lean.as_deref_mut()
                && self.lean_value(reads, &mut lean_read, &mut entries, &key, merge_seen, depth)?
            {
                continue;
            }
            let node = self.next_node()?;
            if let (Some(sink), Kind::SequenceStart(props), Some("items")) =
                (sink.as_deref_mut(), &node.kind, key.value.as_str())
                && props.anchor.is_none()
                && props.tag.is_none()
            {
                self.nodes += 1;
                let map = self.built(&mut entries);
                let items = sink
                    .items(self, map, props.flow)
                    .map_err(|e| e.within(Segment::Key("items".into())))?;
                if map.insert(key.value, items).is_some() {
                    return Err(LoadError::content(
                        "duplicate entry with key \"items\"",
                        key.start,
                    ));
                }
                continue;
            }
            // A root `items` list the sink does not read (anchored): its items' spellings are
            // noted all the same.
            let items_shift = match (&sink, key.value.as_str()) {
                (Some(_), Some("items")) => self.spellings.items_shift,
                _ => None,
            };
            if let Some(shift) = items_shift {
                self.spellings.start(spelling::ITEMS, shift);
            }
            let child = self.child_role(role, &key.value, &node, key.start);
            let shape = ValueShape::of(&node);
            let value = self.build(node, depth, child);
            if items_shift.is_some() {
                self.spellings.stop();
            }
            let value = value.map_err(|e| e.within(Segment::Key(key_name(&key.value))))?;
            if matches!(role, Role::Metadata | Role::Map(_)) {
                self.record_entry(role, &key, shape);
            }
            if key.merge {
                if merge_seen {
                    return Err(LoadError::content("duplicate merge key `<<`", key.start));
                }
                merge_seen = true;
                self.refs += 1;
                let list = value.is_sequence();
                merges = merge_sources(value, key.start)?;
                merge_path = self.spellings.on.then_some((self.spellings.path, list));
                continue;
            }
            self.add_entry(&mut entries, key.value, value, key.start)?;
        }
        let mut map = self.finish_entries(entries);
        if role == Role::Metadata {
            self.recorder.close_metadata(self.text);
        } else if let Role::Map(i) = role {
            self.recorder.close_map(i);
        }
        self.spellings.path = path;
        if !merges.is_empty() {
            if let Some((from, list)) = merge_path {
                self.merged_spellings(&map, &merges, from, list);
            }
            merge_into(&mut map, merges);
        }
        Ok(map)
    }

    /// Reads a mapping's key (`node`, not its end) and notes its spelling.
    fn mapping_key(&mut self, node: Node, depth: usize, path: u64) -> Result<Key, LoadError> {
        let (start, end) = (node.start, node.end);
        match node.kind {
            Kind::Scalar {
                value,
                anchor: None,
                merge,
                style,
                tagged,
                tag,
            } => {
                self.nodes += 1;
                let value = value.map_err(|e| LoadError::content(e.to_string(), start))?;
                if self.spellings.on
                    && let Some(how) =
                        self.spellings
                            .scalar(self.text, start, end, &value, style, tag.as_deref())
                {
                    self.spellings.path = spelling::key(path, spelling::hash(&value));
                    self.spellings.push(how);
                }
                let simple = style == ScalarStyle::Plain
                    && !tagged
                    && !merge
                    && start.line == end.line
                    && end.index > start.index;
                Ok(Key {
                    value,
                    start,
                    end,
                    merge,
                    simple,
                })
            }
            kind => {
                // Anchored and complex keys are written in the emitter's form.
                self.spellings.nowhere();
                let value = self.build(Node { kind, start, end }, depth, Role::None)?;
                Ok(Key {
                    value,
                    start,
                    end,
                    merge: false,
                    simple: false,
                })
            }
        }
    }

    /// An item read lean (`reads`): asked once, at its first key past the head, what of its
    /// other values the mode reads; then each value it does not read is skipped, and `spec` read
    /// in part when the mode reads a few of its keys. True when the value of `key` was consumed
    /// here. A key whose skip could not be proven the same as a read (a merge key, a
    /// duplicate, a key that is not a plain string) is refused: the item is then read whole.
    fn lean_value(
        &mut self,
        reads: &mut dyn FnMut(&Value) -> SpecKeys,
        lean: &mut LeanRead,
        entries: &mut Entries,
        key: &Key,
        merge_seen: bool,
        depth: usize,
    ) -> Result<bool, LoadError> {
        let map = self.built(entries);
        let head = matches!(key.value.as_str(), Some("apiVersion" | "kind" | "metadata"));
        if !lean.asked && !head {
            lean.asked = true;
            if !merge_seen && has_head(map) {
                lean.spec_keys = ask(reads, map);
                self.skipped = lean.spec_keys.is_some();
            }
        }
        let Some(spec_keys) = lean.spec_keys else {
            return Ok(false);
        };
        let name = key.value.as_str().filter(|_| key.simple || !key.merge);
        match name {
            Some(k) if !head && !map.contains_key(&key.value) && !lean.skipped_keys.contains(k) => {
                if k == "spec" && !spec_keys.is_empty() {
                    let node = self.next_node()?;
                    let spec = self
                        .partial(node, depth, spec_keys)
                        .map_err(|e| e.within(Segment::Key("spec".into())))?;
                    self.built(entries).insert(key.value.clone(), spec);
                    return Ok(true);
                }
                lean.skipped_keys.insert(k.to_owned());
            }
            _ => return Err(LoadError::refuse_skip(key.start)),
        }
        self.skip_value(depth)?;
        Ok(true)
    }

    /// Records where an entry of `metadata` or of a recorded map is in the text, so its item
    /// can be patched as text (see [`Recorder`]).
    fn record_entry(&mut self, role: Role, key: &Key, value: ValueShape) {
        let end = if value.empty {
            colon_after(self.text, self.last_end)
        } else {
            Some(self.last_end)
        };
        let entry = RecordedEntry {
            key_start: key.start.index,
            key_len: key.end.index - key.start.index,
            simple_key: key.simple,
            value_start: if value.empty {
                end
            } else {
                Some(value.start.index)
            },
            value_end: end,
            single_line: value.single_line && !value.empty,
            empty: value.empty,
        };
        self.recorder.entry(self.text, role, &entry);
    }

    /// Notes where the keys merged into `map` (at the current path) from `sources` (the value
    /// of its merge key, at `from`) were read: each key from the first source that has it, as
    /// [`merge_into`] takes it.
    fn merged_spellings(&mut self, map: &Mapping, sources: &[Value], from: u64, list: bool) {
        let path = self.spellings.path;
        let mut seen = std::collections::HashSet::new();
        for (i, source) in sources.iter().enumerate() {
            let Value::Mapping(source) = source else {
                continue;
            };
            // One mapping is the merge value itself; a list's entries are its indices.
            let at = self.spellings.resolve(from);
            let at = if list {
                self.spellings.resolve(spelling::index(at, i))
            } else {
                at
            };
            for k in source.keys() {
                if map.contains_key(k) || !seen.insert(spelling::hash(k)) {
                    continue;
                }
                let h = spelling::hash(k);
                self.spellings.path = spelling::key(path, h);
                self.spellings.same(spelling::key(at, h));
                self.spellings.path = spelling::value(path, h);
                self.spellings.same(spelling::value(at, h));
            }
        }
        self.spellings.path = path;
    }

    /// The role of the value under `key` in a mapping of role `role`; opens its record.
    fn child_role(&mut self, role: Role, key: &Value, value: &Node, key_start: Mark) -> Role {
        let block_map = matches!(&value.kind, Kind::MappingStart(p) if p.plain_block());
        match (role, key.as_str()) {
            (Role::Item, Some("metadata")) if block_map && self.recorder.active => Role::Metadata,
            (Role::Metadata, Some(name)) => match MAPS.iter().position(|m| *m == name) {
                Some(i) => {
                    let key_line = line_start_before_spaces(self.text, key_start.index);
                    match key_line {
                        Some(line) if block_map => {
                            self.recorder.open_map(i, line);
                            Role::Map(i)
                        }
                        _ => {
                            self.recorder.other_map(i);
                            Role::None
                        }
                    }
                }
                None => Role::None,
            },
            _ => Role::None,
        }
    }
}

/// A mapping key as read: its value, where it is, whether it is the merge key `<<`, and
/// whether it is simple (plain, untagged, on one line, not `<<`: its text can be patched).
struct Key {
    value: Value,
    start: Mark,
    end: Mark,
    merge: bool,
    simple: bool,
}

/// What an item read lean has been asked and has skipped so far.
#[derive(Default)]
struct LeanRead {
    /// The mode was asked what it reads of the item.
    asked: bool,
    /// Its answer: `Some` when the item is read in part.
    spec_keys: SpecKeys,
    /// The keys skipped. A set: an item may have any number of keys, and each is looked up.
    skipped_keys: HashSet<String>,
}

/// What the recorder needs to know of a value before it is built.
#[derive(Clone, Copy)]
struct ValueShape {
    start: Mark,
    /// An empty scalar (`key:` with nothing after it).
    empty: bool,
    /// A scalar on one line, neither literal nor folded, without anchor.
    single_line: bool,
}

impl ValueShape {
    fn of(node: &Node) -> Self {
        ValueShape {
            start: node.start,
            empty: matches!(&node.kind, Kind::Scalar { .. }) && node.end.index == node.start.index,
            single_line: matches!(
                &node.kind,
                Kind::Scalar { style, anchor: None, .. }
                    if !matches!(style, ScalarStyle::Literal | ScalarStyle::Folded)
                        && node.start.line == node.end.line
            ),
        }
    }
}

/// An item's mapping so far holds `apiVersion`, `kind` and `metadata`.
fn has_head(map: &Mapping) -> bool {
    ["apiVersion", "kind", "metadata"]
        .iter()
        .all(|k| map.contains_key(*k))
}

/// Shows `reads` the item's head (the mapping so far) and gives the mapping back.
fn ask(reads: &mut dyn FnMut(&Value) -> SpecKeys, map: &mut Mapping) -> SpecKeys {
    let head = Value::Mapping(std::mem::take(map));
    let answer = reads(&head);
    if let Value::Mapping(m) = head {
        *map = m;
    }
    answer
}

fn too_deep(at: Mark) -> LoadError {
    LoadError::content(
        format!("recursion limit exceeded: collections nested deeper than {MAX_DEPTH} levels"),
        at,
    )
}

/// `:` after `at`, past spaces and tabs: the position after it.
fn colon_after(text: &str, at: usize) -> Option<usize> {
    let rest = text.get(at..)?;
    let skipped = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    (rest.as_bytes().get(skipped) == Some(&b':')).then_some(at + skipped + 1)
}

fn key_name(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => shown_key(other),
    }
}

fn shown_key(key: &Value) -> String {
    match key {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => "(a collection)".into(),
    }
}

mod entries;
mod skip;
#[cfg(test)]
mod tests;

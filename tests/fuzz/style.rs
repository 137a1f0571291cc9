//! The style writer: one YAML document written in randomly chosen, equivalent styles — block or
//! flow per node; plain, single-, double-quoted, literal and folded scalars; multi-line and
//! folded flow scalars (kpt's multi-line single-quoted shape with its column-0 closing quote
//! included, and continuation lines at column 0); comments on their own line and after values;
//! 1 to 4-space indentation and indentless sequences; anchors and aliases, inside an item and
//! across items; merge keys (`<<: {…}`, `<<: *a`, `<<: [*a, {…}]`, overridden entries); core
//! tags; other spellings of null, booleans and integers; tabs as separators; explicit `? ` keys;
//! CRLF; a BOM; document markers; the whole document as a flow mapping or as JSON.
//!
//! Every choice is a numbered decision point whose option 0 is the plain, kpt-like layout. A
//! case is replayed from its seed; the shrinker forces decision points back to option 0 one at
//! a time (the random stream is consumed the same way, so the other choices stay put).

mod scalar;

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_yaml::{Mapping, Value};

use super::Rng;

/// A family of style choices; suites switch families off as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// Flow mappings and sequences inside a block document.
    Flow,
    /// Indentation of 1, 3 or 4 spaces; indented (not indentless) sequences.
    Indent,
    /// Single- and double-quoted scalars where plain would do.
    Quoting,
    /// Literal (`|`) and folded (`>`) block scalars.
    BlockScalars,
    /// Flow scalars over several lines (line folding; kpt's multi-line single-quoted shape).
    MultiLine,
    /// Continuation lines of quoted scalars at column 0.
    ColumnZero,
    /// Comments on their own line and after values.
    Comments,
    /// Anchors and aliases within one item.
    Anchors,
    /// Aliases to an anchor in another item (or in an item, from `functionConfig`).
    CrossItemAliases,
    /// Merge keys.
    MergeKeys,
    /// `!!str`, `!!int`, `!!bool`, `!!float`, `!!map`, `!!seq`.
    Tags,
    /// `~`, empty, `Null`, `True`, `+1`, `0x1F`, `0o17`.
    ScalarForms,
    /// A tab after `key:`.
    Tabs,
    /// Explicit `? key` entries.
    ExplicitKeys,
    /// CRLF line breaks.
    Crlf,
    /// A UTF-8 byte order mark.
    Bom,
    /// `---`, `...` and comments around the document.
    DocumentMarkers,
    /// The whole ResourceList as one flow mapping.
    FlowDocument,
    /// The whole ResourceList as JSON.
    Json,
    /// Content, not style: keys longer than 1024 characters (YAML's limit for implicit keys)
    /// among the extra strings.
    LongKeys,
}

impl Feature {
    /// Every feature.
    pub const ALL: &'static [Feature] = &[
        Feature::Flow,
        Feature::Indent,
        Feature::Quoting,
        Feature::BlockScalars,
        Feature::MultiLine,
        Feature::ColumnZero,
        Feature::Comments,
        Feature::Anchors,
        Feature::CrossItemAliases,
        Feature::MergeKeys,
        Feature::Tags,
        Feature::ScalarForms,
        Feature::Tabs,
        Feature::ExplicitKeys,
        Feature::Crlf,
        Feature::Bom,
        Feature::DocumentMarkers,
        Feature::FlowDocument,
        Feature::Json,
        Feature::LongKeys,
    ];
}

/// The features a writer may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features(HashSet<Feature>);

impl Features {
    /// Every feature.
    pub fn all() -> Features {
        Features(Feature::ALL.iter().copied().collect())
    }
    /// None: the plain layout.
    pub fn none() -> Features {
        Features(HashSet::new())
    }
    /// All but `off`.
    pub fn without(off: &[Feature]) -> Features {
        Features(
            Feature::ALL
                .iter()
                .copied()
                .filter(|f| !off.contains(f))
                .collect(),
        )
    }
    /// Only `on`.
    pub fn only(on: &[Feature]) -> Features {
        Features(on.iter().copied().collect())
    }
    pub fn has(&self, f: Feature) -> bool {
        self.0.contains(&f)
    }
}

/// A document written by [`write`].
#[derive(Debug, Clone)]
pub struct Styled {
    /// The YAML (or JSON) text.
    pub text: String,
    /// Decision points where a non-default option was taken, with their feature.
    pub choices: Vec<(usize, Feature)>,
    /// Merge keys were written: mappings read back with their entries in another order.
    pub merges: bool,
}

/// `doc` in the plain layout (what `kpt fn eval` hands over: block style, two-space
/// indentation, indentless sequences, plain scalars where possible, double quotes otherwise).
pub fn plain(doc: &Value) -> String {
    write(doc, 0, &Features::none(), &HashSet::new()).text
}

/// `doc` in styles drawn from `seed` among `features`; decision points in `forced` take their
/// default option.
pub fn write(doc: &Value, seed: u64, features: &Features, forced: &HashSet<usize>) -> Styled {
    let mut w = Writer {
        rng: Rng(seed),
        features,
        forced,
        counter: 0,
        choices: Vec::new(),
        out: String::new(),
        anchors: HashMap::new(),
        next_anchor: 0,
        merges: false,
        memo: HashMap::new(),
        item: None,
        depth: 0,
        in_merge_source: false,
        last_draw: 0,
        items_ptr: doc
            .get("items")
            .map_or(std::ptr::null(), |v| v as *const Value),
        pending: Vec::new(),
        merge_count: 0,
        sparse_anchors: false,
        dash_anchors: false,
    };
    w.document(doc);
    Styled {
        text: w.out,
        choices: w.choices,
        merges: w.merges,
    }
}

/// Where a node is written.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// The document itself.
    Top,
    /// After `key:` of a block mapping whose keys are at column `col`.
    MapValue { col: usize },
    /// After the `-` of a block sequence entry at column `col`.
    SeqItem { col: usize },
}

/// Where an anchor was defined: the item index, or none (outside the items).
type AnchorHome = Option<usize>;

struct Writer<'f> {
    rng: Rng,
    features: &'f Features,
    forced: &'f HashSet<usize>,
    counter: usize,
    choices: Vec<(usize, Feature)>,
    out: String,
    /// Ordered hash of an anchored node → its anchors (name, home, whether merge keys were
    /// written inside it).
    anchors: HashMap<u64, Vec<(String, AnchorHome, bool)>>,
    next_anchor: usize,
    merges: bool,
    memo: HashMap<String, bool>,
    /// The item being written.
    item: Option<usize>,
    depth: usize,
    in_merge_source: bool,
    /// The random draw of the last decision point: what its sub-choices (fold points, merge
    /// subsets) are drawn from, so the main stream stays aligned when a point is forced.
    last_draw: u64,
    /// `items` of the document: its entries are the items (for cross-item aliases).
    items_ptr: *const Value,
    /// Anchors of the nodes being written, with the merge count when they started.
    pending: Vec<(u64, String, AnchorHome, usize)>,
    /// Merge keys written so far.
    merge_count: usize,
    /// This document has few anchors (a lone alias is what a text scan misses).
    sparse_anchors: bool,
    /// Every anchor name of this document starts with `-`.
    dash_anchors: bool,
}

fn pad(n: usize) -> String {
    " ".repeat(n)
}

/// Hash of a node that, unlike `Value`'s equality, depends on mapping key order.
fn ordered_hash(v: &Value) -> u64 {
    fn feed(v: &Value, h: &mut DefaultHasher) {
        match v {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => (2u8, n.to_string()).hash(h),
            Value::String(s) => (3u8, s).hash(h),
            Value::Sequence(s) => {
                (4u8, s.len()).hash(h);
                s.iter().for_each(|x| feed(x, h));
            }
            Value::Mapping(m) => {
                (5u8, m.len()).hash(h);
                for (k, x) in m {
                    feed(k, h);
                    feed(x, h);
                }
            }
            Value::Tagged(t) => {
                (6u8, t.tag.to_string()).hash(h);
                feed(&t.value, h);
            }
        }
    }
    let mut h = DefaultHasher::new();
    feed(v, &mut h);
    h.finish()
}

/// True when some mapping in `v` has a key too long for an implicit key (YAML's limit is 1024
/// characters): such mappings are written in block style with `? ` keys.
fn has_long_key(v: &Value) -> bool {
    match v {
        Value::Mapping(m) => m
            .iter()
            .any(|(k, x)| k.as_str().is_some_and(|s| s.len() > 1000) || has_long_key(x)),
        Value::Sequence(s) => s.iter().any(has_long_key),
        Value::Tagged(t) => has_long_key(&t.value),
        _ => false,
    }
}

/// An entry's value while a mapping is written: from the document, or made up (merge sources).
enum Entry<'v> {
    Doc(&'v Value),
    Made(Value),
}

impl Entry<'_> {
    fn value(&self) -> &Value {
        match self {
            Entry::Doc(v) => v,
            Entry::Made(v) => v,
        }
    }
}

impl Writer<'_> {
    /// Randomness for the sub-choices of the last decision point.
    fn sub(&self) -> Rng {
        Rng::fork(self.last_draw, 1)
    }

    /// ` props` on the current line, when there are any.
    fn push_props(&mut self, props: &str) {
        if !props.is_empty() {
            self.out.push(' ');
            self.out.push_str(props);
        }
    }

    /// A decision point: option 0 unless `feature` is on and the point is not forced; the
    /// random stream advances the same way either way.
    fn choose(&mut self, feature: Feature, weights: &[u32]) -> usize {
        let r = self.rng.next();
        self.last_draw = r;
        let id = self.counter;
        self.counter += 1;
        if !self.features.has(feature) || self.forced.contains(&id) {
            return 0;
        }
        let total: u32 = weights.iter().sum();
        let mut x = (r % u64::from(total)) as u32;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                if i != 0 {
                    self.choices.push((id, feature));
                }
                return i;
            }
            x -= w;
        }
        0
    }

    fn document(&mut self, doc: &Value) {
        let json = self.choose(Feature::Json, &[95, 5]) == 1;
        let flow_doc = self.choose(Feature::FlowDocument, &[95, 5]) == 1;
        let bom = self.choose(Feature::Bom, &[90, 10]) == 1;
        let markers = self.choose(Feature::DocumentMarkers, &[85, 5, 5, 5]);
        let crlf = self.choose(Feature::Crlf, &[90, 10]) == 1;
        self.sparse_anchors = self.choose(Feature::Anchors, &[50, 50]) == 1;
        self.dash_anchors = self.choose(Feature::Anchors, &[50, 50]) == 1;
        if json && let Ok(text) = serde_json::to_string(doc) {
            self.out = text;
            self.out.push('\n');
        } else {
            match markers {
                1 => self.out.push_str("---\n"),
                2 => self.out.push_str("# a package\n\n--- # document start\n"),
                3 => self.out.push_str("\n# items: []\n"),
                _ => {}
            }
            if flow_doc && !has_long_key(doc) {
                let text = self.flow(doc, 2);
                self.out.push_str(&text);
                self.out.push('\n');
            } else {
                self.node(doc, Slot::Top);
            }
            if markers == 1 {
                self.out.push_str("...\n");
            }
        }
        if crlf {
            self.out = self.out.replace('\n', "\r\n");
        }
        if bom {
            self.out.insert(0, '\u{feff}');
        }
    }

    /// Anchor, alias and tag decisions for a node: `Err(alias)` to write the alias instead of
    /// the node, else the properties to put before it (possibly empty).
    fn properties(&mut self, v: &Value, may_tag: bool) -> Result<String, String> {
        let mut props = String::new();
        let (within, across) = if self.sparse_anchors {
            (&[97, 3], &[94, 6])
        } else {
            (&[80, 20], &[70, 30])
        };
        let considered = self.choose(Feature::Anchors, within) == 1
            || self.choose(Feature::CrossItemAliases, across) == 1;
        if considered && !matches!(v, Value::Null) {
            let h = ordered_hash(v);
            let here = self.item;
            // Inside a merge source, no alias to a node with merge keys: they would be merged
            // into the outer mapping unresolved.
            let usable = |(_, _, has_merge): &&(String, AnchorHome, bool)| {
                !(self.in_merge_source && *has_merge)
            };
            let found = self.anchors.get(&h).and_then(|list| {
                list.iter()
                    .filter(usable)
                    .find(|(_, home, _)| *home == here && here.is_some())
                    .or_else(|| {
                        self.features
                            .has(Feature::CrossItemAliases)
                            .then(|| list.iter().find(usable))
                            .flatten()
                    })
                    .cloned()
            });
            match found {
                Some((name, _, _)) => return Err(format!("*{name}")),
                None => {
                    // Names starting with `-` are legal, and easy to mistake for a sequence entry.
                    const PREFIX: &[&str] = &["-", "a", "-", "x_", "-", "id-", "-", "A"];
                    let prefix = if self.dash_anchors {
                        "-"
                    } else {
                        PREFIX[self.next_anchor % PREFIX.len()]
                    };
                    let name = format!("{prefix}{}", self.next_anchor);
                    self.next_anchor += 1;
                    // Usable once the node is written (a node cannot alias itself).
                    self.pending.push((h, name.clone(), here, self.merge_count));
                    props.push('&');
                    props.push_str(&name);
                }
            }
        }
        if may_tag && self.choose(Feature::Tags, &[90, 10]) == 1 {
            let tag = match v {
                Value::String(_) => Some("!!str"),
                Value::Number(n) if n.is_f64() => Some("!!float"),
                Value::Number(_) => Some("!!int"),
                Value::Bool(_) => Some("!!bool"),
                Value::Mapping(_) => Some("!!map"),
                Value::Sequence(_) => Some("!!seq"),
                _ => None,
            };
            if let Some(tag) = tag {
                if !props.is_empty() {
                    props.push(' ');
                }
                props.push_str(tag);
            }
        }
        Ok(props)
    }

    /// Writes `v` in a block slot; leaves the output at the start of a new line.
    fn node(&mut self, v: &Value, slot: Slot) {
        let mark = self.pending.len();
        self.node_inner(v, slot);
        self.anchor_written(mark);
    }

    fn node_inner(&mut self, v: &Value, slot: Slot) {
        self.depth += 1;
        let props = match slot {
            Slot::Top => Ok(String::new()),
            _ => self.properties(v, true),
        };
        let props = match props {
            Ok(p) => p,
            Err(alias) => {
                self.inline(slot, &alias);
                self.depth -= 1;
                return;
            }
        };
        match v {
            Value::Mapping(m) if !m.is_empty() => {
                let flow = !matches!(slot, Slot::Top)
                    && self.choose(Feature::Flow, &[85, 15]) == 1
                    && !has_long_key(v);
                if flow {
                    let text = self.flow_with(v, &props, self.flow_indent(slot));
                    self.inline(slot, &text);
                } else {
                    self.block_mapping(m, slot, &props);
                }
            }
            Value::Sequence(s) if !s.is_empty() => {
                let flow = self.choose(Feature::Flow, &[85, 15]) == 1 && !has_long_key(v);
                if flow {
                    let text = self.flow_with(v, &props, self.flow_indent(slot));
                    self.inline(slot, &text);
                } else {
                    self.block_sequence(s, slot, &props);
                }
            }
            Value::Tagged(t) => {
                let inner = self.flow(&t.value, self.flow_indent(slot));
                self.inline(slot, &join(&[&props, &t.tag.to_string(), &inner]));
            }
            Value::String(s) => self.block_string(s, slot, &props),
            _ => {
                let text = self.scalar_text(v, false, true);
                if text.is_empty() && props.is_empty() {
                    // An empty node: nothing after `key:` or `-`.
                    self.out.push('\n');
                } else {
                    let text = if text.is_empty() {
                        "null".to_owned()
                    } else {
                        text
                    };
                    self.inline(slot, &join(&[&props, &text]));
                }
            }
        }
        self.depth -= 1;
    }

    /// The items of the document (an empty slice when it has none).
    fn items_slice(&self) -> &[Value] {
        // SAFETY: `items_ptr` points into the document, which outlives the writer.
        unsafe { self.items_ptr.as_ref() }
            .and_then(Value::as_sequence)
            .map_or(&[], Vec::as_slice)
    }

    fn flow_indent(&self, slot: Slot) -> usize {
        match slot {
            Slot::Top => 2,
            Slot::MapValue { col } | Slot::SeqItem { col } => col + 2,
        }
    }

    /// One-line text after `key:` or `-`, then an optional comment and the line break.
    fn inline(&mut self, slot: Slot, text: &str) {
        let tab = matches!(slot, Slot::MapValue { .. })
            && !self.on_explicit_value_line()
            && !text.starts_with(['|', '>'])
            && self.choose(Feature::Tabs, &[85, 15]) == 1;
        self.out.push(if tab { '\t' } else { ' ' });
        self.out.push_str(text);
        self.trailing_comment();
        self.out.push('\n');
    }

    /// The current line is an explicit entry's `: value` line (libyaml takes no tab there).
    fn on_explicit_value_line(&self) -> bool {
        let line = &self.out[self.out.rfind('\n').map_or(0, |i| i + 1)..];
        line.trim_start().starts_with(':')
    }

    fn trailing_comment(&mut self) {
        let tab_ok = !self.on_explicit_value_line();
        match self.choose(Feature::Comments, &[90, 6, 4]) {
            1 => self.out.push_str(" # trailing comment: items:"),
            2 if tab_ok => self.out.push_str("\t# - kind: Fake"),
            2 => self.out.push_str(" # - kind: Fake"),
            _ => {}
        }
    }

    fn own_line_comment(&mut self, col: usize) {
        match self.choose(Feature::Comments, &[92, 4, 4]) {
            1 => {
                self.out.push_str(&pad(col));
                self.out.push_str("# - kind: Fake\n");
            }
            2 => self.out.push_str("# functionConfig: {}\n"),
            _ => {}
        }
    }

    /// Indentation step for the children of a block collection.
    fn step(&mut self) -> usize {
        [2, 4, 1, 3][self.choose(Feature::Indent, &[80, 10, 5, 5])]
    }

    /// The entries to write for `m`: its own, possibly with some moved behind a merge key.
    fn entries<'v>(&mut self, m: &'v Mapping) -> Vec<(&'v Value, Entry<'v>)> {
        let all: Vec<(&Value, &Value)> = m.iter().collect();
        let mut entries: Vec<(&Value, Entry)> =
            all.iter().map(|&(k, v)| (k, Entry::Doc(v))).collect();
        let eligible = self.depth >= 3
            && !self.in_merge_source
            && m.len() >= 2
            && m.keys().all(|k| k.as_str().is_some_and(|s| s != "<<"));
        let how = self.choose(Feature::MergeKeys, &[85, 9, 6]);
        if !eligible || how == 0 {
            return entries;
        }
        // Move a random subset behind `<<`; sometimes the merge also carries a different
        // value for a key that stays explicit (the explicit entry wins).
        let mut sub = self.sub();
        let picks: Vec<usize> = (0..m.len()).filter(|_| sub.chance(50)).collect();
        if picks.is_empty() {
            return entries;
        }
        let mut moved = Mapping::new();
        for &i in &picks {
            let (k, v) = all[i];
            moved.insert(k.clone(), v.clone());
        }
        let kept: Vec<usize> = (0..m.len()).filter(|i| !picks.contains(i)).collect();
        if let Some(&i) = kept.first()
            && sub.chance(30)
        {
            let (k, _) = all[i];
            moved.insert(
                k.clone(),
                Value::String("overridden by the explicit entry".into()),
            );
        }
        let merge = if how == 2 && moved.len() >= 2 {
            let cut = 1 + sub.below(moved.len() - 1);
            let mut first = Mapping::new();
            let mut second = Mapping::new();
            for (n, (k, v)) in moved.into_iter().enumerate() {
                if n < cut {
                    first.insert(k, v);
                } else {
                    second.insert(k, v);
                }
            }
            Value::Sequence(vec![Value::Mapping(first), Value::Mapping(second)])
        } else {
            Value::Mapping(moved)
        };
        let at = match sub.below(3) {
            0 => 0,
            1 => picks[0],
            _ => kept.len(),
        };
        entries.retain(|(k, _)| !picks.iter().any(|&i| all[i].0 == *k));
        static MERGE_KEY: std::sync::LazyLock<Value> =
            std::sync::LazyLock::new(|| Value::String("<<".into()));
        entries.insert(at.min(entries.len()), (&MERGE_KEY, Entry::Made(merge)));
        self.merges = true;
        self.merge_count += 1;
        entries
    }

    fn block_mapping(&mut self, m: &Mapping, slot: Slot, props: &str) {
        // Column of the keys, and whether the first key goes on the current line.
        let (col, first_inline) = match slot {
            Slot::Top => (0, false),
            Slot::MapValue { col } => {
                let step = self.step();
                self.push_props(props);
                self.trailing_comment();
                self.out.push('\n');
                (col + step, false)
            }
            Slot::SeqItem { col } => {
                let newline = !props.is_empty() || self.choose(Feature::Indent, &[90, 10]) == 1;
                if newline {
                    self.push_props(props);
                    self.out.push('\n');
                    (col + self.step().max(2), false)
                } else {
                    self.out.push(' ');
                    (col + 2, true)
                }
            }
        };
        let entries = self.entries(m);
        for (n, (key, value)) in entries.iter().enumerate() {
            let inline_here = first_inline && n == 0;
            if !inline_here {
                self.own_line_comment(col);
                self.out.push_str(&pad(col));
            }
            let merge_source = key.as_str() == Some("<<");
            let explicit_ok = !merge_source && !matches!(value.value(), Value::Sequence(_));
            let explicit = self.key_needs_explicit(key)
                || (self.choose(Feature::ExplicitKeys, &[95, 5]) == 1 && explicit_ok);
            // A merge key is the plain `<<` (quoted, it is an ordinary key to go-yaml).
            let key_text = if merge_source {
                "<<".to_owned()
            } else {
                self.key_text(key, false, explicit)
            };
            if explicit {
                self.out.push_str("? ");
                self.out.push_str(&key_text);
                self.out.push('\n');
                self.out.push_str(&pad(col));
                self.out.push(':');
            } else {
                self.out.push_str(&key_text);
                self.out.push(':');
            }
            let was = self.in_merge_source;
            self.in_merge_source |= merge_source;
            self.node(value.value(), Slot::MapValue { col });
            self.in_merge_source = was;
        }
    }

    fn block_sequence(&mut self, s: &[Value], slot: Slot, props: &str) {
        let (col, first_inline) = match slot {
            Slot::Top => (0, false),
            Slot::MapValue { col } => {
                let indented = self.choose(Feature::Indent, &[80, 20]) == 1;
                let step = if indented { self.step() } else { 0 };
                self.push_props(props);
                self.trailing_comment();
                self.out.push('\n');
                (col + step, false)
            }
            Slot::SeqItem { col } => {
                if props.is_empty() && self.choose(Feature::Indent, &[80, 20]) == 0 {
                    self.out.push(' ');
                    (col + 2, true)
                } else {
                    self.push_props(props);
                    self.out.push('\n');
                    (col + self.step().max(2), false)
                }
            }
        };
        let top_items = std::ptr::eq(s, self.items_slice());
        for (n, v) in s.iter().enumerate() {
            if !(first_inline && n == 0) {
                self.own_line_comment(col);
                self.out.push_str(&pad(col));
            }
            self.out.push('-');
            let was = self.item;
            if top_items {
                self.item = Some(n);
            }
            self.node(v, Slot::SeqItem { col });
            self.item = was;
        }
    }

    /// Whether `key` can only be written as an explicit `? ` key.
    fn key_needs_explicit(&self, key: &Value) -> bool {
        key.as_str().is_some_and(|s| s.len() > 1000)
    }

    fn key_text(&mut self, key: &Value, flow: bool, explicit: bool) -> String {
        match key {
            Value::String(s) => {
                let plain =
                    scalar::plain_ok(s, flow, &mut self.memo) && (explicit || s.len() < 1000);
                match self.choose(Feature::Quoting, &[80, 10, 10]) {
                    0 if plain => s.clone(),
                    1 if scalar::single_ok(s) => scalar::single(s),
                    _ => scalar::double(s),
                }
            }
            other => self.scalar_text(other, flow, false),
        }
    }

    /// Plain text of a non-string scalar (empty = an empty node, only where `may_be_empty`).
    fn scalar_text(&mut self, v: &Value, flow: bool, may_be_empty: bool) -> String {
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
                match (n.as_u64(), form) {
                    (Some(u), 1) => format!("+{u}"),
                    (Some(u), 2) => format!("0x{u:X}"),
                    (Some(u), 3) => format!("0o{u:o}"),
                    _ => n.to_string(),
                }
            }
            Value::String(s) => scalar::double(s),
            other => self.flow(other, 2),
        }
    }

    /// A string in a block slot: every scalar style that can carry it is a candidate.
    fn block_string(&mut self, s: &str, slot: Slot, props: &str) {
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
        let plain = !s.contains('\n') && scalar::plain_ok(s, false, &mut self.memo);
        let text = match style {
            0 if plain => s.to_owned(),
            1 if scalar::single_ok(s) && !s.contains('\n') => scalar::single(s),
            _ => scalar::double(s),
        };
        self.inline(slot, &join(&[props, &text]));
    }

    /// `|` or `>` block scalar, if it can carry `s` here.
    fn write_block_scalar(
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
        let needs_indicator = first.is_some_and(|l| l.starts_with(' '));
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
    fn flow_multiline(
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

    /// `v` in flow style on one line (breaks after commas at `indent`).
    fn flow(&mut self, v: &Value, indent: usize) -> String {
        self.flow_with(v, "", indent)
    }

    fn flow_with(&mut self, v: &Value, props: &str, indent: usize) -> String {
        let body = match v {
            Value::Mapping(m) => {
                let entries = self.entries(m);
                let mut parts = Vec::new();
                for (k, e) in &entries {
                    let merge_source = k.as_str() == Some("<<");
                    let key = if merge_source {
                        "<<".to_owned()
                    } else {
                        self.key_text(k, true, false)
                    };
                    let was = self.in_merge_source;
                    self.in_merge_source |= merge_source;
                    let value = self.flow_child(e.value(), indent);
                    self.in_merge_source = was;
                    parts.push(format!("{key}: {value}"));
                }
                format!("{{{}}}", self.join_flow(&parts, indent))
            }
            Value::Sequence(s) => {
                let top_items = std::ptr::eq(s.as_slice(), self.items_slice());
                let mut parts = Vec::new();
                for (n, x) in s.iter().enumerate() {
                    let was = self.item;
                    if top_items {
                        self.item = Some(n);
                    }
                    parts.push(self.flow_child(x, indent));
                    self.item = was;
                }
                format!("[{}]", self.join_flow(&parts, indent))
            }
            Value::String(s) => {
                let plain = scalar::plain_ok(s, true, &mut self.memo);
                match self.choose(Feature::Quoting, &[80, 10, 10]) {
                    0 if plain => s.clone(),
                    1 if scalar::single_ok(s) && !s.contains('\n') => scalar::single(s),
                    _ => scalar::double(s),
                }
            }
            Value::Tagged(t) => {
                let inner = self.flow(&t.value, indent);
                join(&[&t.tag.to_string(), &inner])
            }
            other => self.scalar_text(other, true, false),
        };
        join(&[props, &body])
    }

    /// A node inside a flow collection, with its own anchor/alias/tag decisions.
    fn flow_child(&mut self, v: &Value, indent: usize) -> String {
        self.depth += 1;
        let mark = self.pending.len();
        let text = match self.properties(v, true) {
            Err(alias) => alias,
            Ok(props) => self.flow_with(v, &props, indent),
        };
        self.anchor_written(mark);
        self.depth -= 1;
        text
    }

    /// The node whose properties were decided at `mark` is written: its anchor may be used.
    fn anchor_written(&mut self, mark: usize) {
        for (h, name, home, merges_before) in self.pending.drain(mark..) {
            let has_merge = self.merge_count != merges_before;
            self.anchors
                .entry(h)
                .or_default()
                .push((name, home, has_merge));
        }
    }

    fn join_flow(&mut self, parts: &[String], indent: usize) -> String {
        let mut out = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                out.push(',');
                if self.choose(Feature::Flow, &[85, 15]) == 1 {
                    out.push('\n');
                    out.push_str(&pad(indent));
                } else {
                    out.push(' ');
                }
            }
            out.push_str(p);
        }
        out
    }
}

/// Non-empty parts joined by single spaces.
fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
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

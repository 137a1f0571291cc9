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

mod block;
mod flow;
pub mod scalar;
mod strings;

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_yaml::Value;

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
/// characters, flow mappings and JSON included): such mappings are written in block style with
/// `? ` keys.
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
        if json
            && !has_long_key(doc)
            && let Ok(text) = serde_json::to_string(doc)
        {
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

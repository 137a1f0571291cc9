//! Reading and writing `ResourceList`s (KRM Functions Specification v1).
//!
//! Items stay `serde_yaml::Value`s: key order, list order and fields no schema knows survive a
//! round trip untouched. Only the parts a mode reads are decoded into typed structs, by the mode.
//!
//! YAML is read in one pass of libyaml's parser ([`super::yaml`]; the reader is `krm/read.rs`), as go-yaml
//! (kpt, kustomize, kubectl) reads it: merge keys applied, core-schema tags honoured, a byte
//! order mark skipped, a flow-style document accepted. JSON is read with serde_json (faster);
//! a document that starts with `{` but is not JSON is read as YAML.

use serde_yaml::{Mapping, Value};

use super::object::{KrmObject, SharedFile, missing_krm_field};
use super::read::{self, Config, ReadError};
use super::result::{FileRef, KrmResult};
use super::splice;
pub use super::write::{Source, Spelled, WriteError, write, write_to};
use super::yaml::layout::{EntryAt, MetaLayout};
use super::yaml::load::Kind;
use super::yaml::spelling::{self, Spelling, Spellings};
use super::yaml::{Loader, expansion_limit};

/// `apiVersion` written on every output ResourceList.
pub const OUTPUT_API_VERSION: &str = "config.kubernetes.io/v1";
/// Input `apiVersion`s accepted (the spec's v1 and the older v1beta1).
pub const INPUT_API_VERSIONS: &[&str] =
    &["config.kubernetes.io/v1", "config.kubernetes.io/v1beta1"];

/// A parsed input ResourceList.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceList {
    /// The items, in input order.
    pub items: Vec<Value>,
    /// The function configuration, if any.
    pub function_config: Option<Value>,
    /// Results already present in the input; kept verbatim and written out first.
    pub results: Vec<Value>,
    /// Byte range of each item's text in the input, where the parser's events prove that the
    /// text reads back as the same item in the output (see `krm/read.rs`; [`Self::span`]);
    /// empty when no item has one (JSON, flow style). Unchanged items are copied from there
    /// verbatim, so their flow style, quoting and comments survive exactly. 32-bit offsets
    /// (12 bytes an item): inputs past 4 GiB get no spans.
    pub item_spans: Vec<Option<std::ops::Range<u32>>>,
    /// Items whose tree was let go right after the [`Observer`] read them, or built only in
    /// part ([`Observer::reads`]), and whose text is copied (only items with a proven span):
    /// `items` holds an empty mapping in their place, or the part the observer kept, and this
    /// their file and metadata layout. The engine copies them from the input text, patches
    /// that text ([`super::splice`]) or parses them again ([`parse_item`]) when an edit needs it.
    pub released: ReleasedItems,
    /// Items that are not KRM resources (no `apiVersion`, `kind` or `metadata.name`).
    pub not_krm: Vec<NotKrm>,
    /// How the input spelled the scalars of its items where the emitter would write them
    /// otherwise (offsets into the input text; see [`super::yaml::spelling`]): an item written
    /// from its tree writes the scalars that keep their value as the input had them.
    pub spellings: Vec<Spelling>,
    /// The items whose spellings are in [`Self::spellings`] (ascending): those whose text may
    /// not be copied (see [`ItemSpellings`]).
    pub noted: Vec<u32>,
    /// How many of the released items were read lean: the [`Observer`] said from their head
    /// what it reads of the rest, so only their `apiVersion`, `kind`, `metadata` and what it
    /// reads were built.
    pub skipped: usize,
}

impl ResourceList {
    /// The proven text span of item `index`, if it has one.
    pub fn span(&self, index: usize) -> Option<std::ops::Range<usize>> {
        let span = self.item_spans.get(index)?.as_ref()?;
        Some(span.start as usize..span.end as usize)
    }
}

/// What the engine keeps of a released item besides its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Released {
    /// Its file path (shared between the items of one file) and index, for the output checks.
    pub(super) file: Option<SharedFile>,
    /// Where its metadata maps sit in its text, when the parser's events prove it (for the
    /// text patch; entries in [`ReleasedItems`]).
    pub(super) layout: Option<MetaLayout>,
}

impl Released {
    /// Its file, as the path and index annotations gave it.
    pub fn file(&self) -> Option<FileRef> {
        self.file.as_ref().map(SharedFile::file_ref)
    }
}

/// The released items of a list by input index: one slot per item, filled as the items are
/// parsed (no allocation per item: long-lived small allocations between the parse's short-lived
/// trees fragmented the heap at 100k items), and the entries of their metadata layouts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReleasedItems {
    slots: Vec<Option<Released>>,
    count: usize,
    /// The entries of every layout, in one vector.
    pub(super) entries: Vec<EntryAt>,
}

impl ReleasedItems {
    pub(super) fn insert(&mut self, index: usize, released: Released) {
        if self.slots.len() <= index {
            self.slots.resize(index + 1, None);
        }
        if self.slots[index].replace(released).is_none() {
            self.count += 1;
        }
    }
    /// The released item `index`, if it is one.
    pub fn get(&self, index: usize) -> Option<&Released> {
        self.slots.get(index).and_then(Option::as_ref)
    }
    /// Where item `index`'s metadata maps sit in its text, if it is released and that is proven.
    pub fn layout(&self, index: usize) -> Option<splice::Layout<'_>> {
        let meta = self.get(index)?.layout.as_ref()?;
        Some(splice::Layout {
            meta,
            entries: &self.entries,
        })
    }
    /// Marks item `index` as kept again (its tree was restored).
    pub fn remove(&mut self, index: usize) -> Option<Released> {
        let taken = self.slots.get_mut(index).and_then(Option::take);
        self.count -= usize::from(taken.is_some());
        taken
    }
    /// How many items are released.
    pub fn len(&self) -> usize {
        self.count
    }
    /// True when every item is kept.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Indices of the released items, ascending.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|_| i))
    }
}

/// The `check` tag of the result about an input item that is not a KRM resource.
pub const KRM_ITEM_CHECK: &str = "krm-item";

/// An item that is not a KRM resource: kpt refuses such input ("input resource list must
/// contain only KRM resources"), so cutover reports it instead of running a mode on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotKrm {
    /// Its index in the input items.
    pub index: usize,
    /// The missing field: `apiVersion`, `kind` or `metadata.name`.
    pub field: &'static str,
    /// Its file, from its annotations.
    pub file: Option<FileRef>,
}

impl NotKrm {
    /// The problem with item `index`, if it is not a KRM resource (see
    /// [`super::object::missing_krm_field`]).
    pub fn of(index: usize, item: &Value) -> Option<NotKrm> {
        missing_krm_field(item).map(|field| NotKrm {
            index,
            field,
            file: item.file_ref(),
        })
    }

    /// The error result reporting it (no `resourceRef`: the item has no complete identity, and
    /// the spec allows `field` only with one; the message names the path instead).
    pub fn result(&self) -> KrmResult {
        let mut r = KrmResult::error(format!(
            "items[{}] is not a KRM resource: `{}` is missing or empty (every item needs \
             `apiVersion`, `kind` and `metadata.name`; kpt refuses such input)",
            self.index, self.field
        ));
        r.file = self.file.clone();
        r.tags.insert("check".into(), KRM_ITEM_CHECK.into());
        r
    }
}

/// Sees every item right after it is parsed, in input order, and says whether the engine must
/// keep its tree. A mode that only needs a few facts from most items (the announcer from
/// 10k Services) takes them here while the tree is fresh in the cache and lets the tree go, so
/// the run never holds every item's tree at once (see `docs/benchmarks.md`, Peak RSS).
pub trait Observer {
    /// Reads item `index`; returns false to let the engine drop its tree.
    fn observe(&mut self, index: usize, item: &Value) -> bool;

    /// What the mode reads of an item beyond its `head` (its `apiVersion`, `kind` and
    /// `metadata`, given before the rest is read). Anything but [`Reads::Everything`] lets the
    /// engine skip building the rest: the item's text is then copied as read, and the item is
    /// observed with what was built. [`Observer::observe`] may keep that partial tree for the
    /// mode (an edit that needs the whole tree reads the item again from its text) or let it
    /// go. The default reads everything.
    fn reads(&mut self, _head: &Value) -> Reads {
        Reads::Everything
    }
}

/// What a mode reads of an item beyond its `apiVersion`, `kind` and `metadata` (see
/// [`Observer::reads`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// The whole item: it is built.
    Everything,
    /// Nothing more: the rest of it is skipped.
    Head,
    /// These keys of its `spec` and nothing else: the other keys of `spec` and every other
    /// value are skipped.
    SpecKeys(&'static [&'static str]),
}

impl Reads {
    /// The keys of `spec` that are built, when the item is read partly (none for
    /// [`Reads::Head`]); `None` when it is read whole.
    pub fn spec_keys(self) -> Option<&'static [&'static str]> {
        match self {
            Reads::Everything => None,
            Reads::Head => Some(&[]),
            Reads::SpecKeys(keys) => Some(keys),
        }
    }
}

/// The observer that keeps every item (the function config gives no mode, the identity program).
#[derive(Debug, Default, Clone, Copy)]
pub struct KeepAll;

impl Observer for KeepAll {
    fn observe(&mut self, _index: usize, _item: &Value) -> bool {
        true
    }
}

/// Why the input could not be read as a ResourceList. Nothing is written to stdout for these:
/// there are no items that could be echoed back safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// stdin was empty or only whitespace.
    Empty,
    /// stdin is not UTF-8 (the spec requires UTF-8).
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// Not parseable as YAML or JSON.
    Syntax {
        /// The parser's message.
        message: String,
        /// 1-based line, when the parser gives one.
        line: Option<usize>,
        /// 1-based column, when the parser gives one.
        column: Option<usize>,
    },
    /// Parsed, but a value cannot be read safely: a duplicate key, an integer beyond 64 bits, a
    /// bad merge key or tag, an unknown alias, nesting or alias expansion past the limits.
    Invalid {
        /// Where, from the document root (`items[3].spec.ports[0].port`).
        path: String,
        /// What is wrong.
        message: String,
        /// 1-based line.
        line: Option<usize>,
        /// 1-based column.
        column: Option<usize>,
    },
    /// Parsed, but not a ResourceList.
    NotResourceList {
        /// What is wrong, naming the field.
        message: String,
    },
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Empty => write!(f, "input is empty: expected a ResourceList on stdin"),
            InputError::NotUtf8 { offset } => {
                write!(f, "input is not UTF-8 (invalid byte at offset {offset})")
            }
            InputError::Syntax {
                message,
                line: Some(line),
                column: Some(column),
            } => {
                // The parsers end their messages with the same place: say it once.
                let message = message.replacen(&format!(" at line {line} column {column}"), "", 1);
                write!(
                    f,
                    "input is not valid YAML/JSON at line {line}, column {column}: {message}"
                )
            }
            InputError::Syntax { message, .. } => {
                write!(f, "input is not valid YAML/JSON: {message}")
            }
            InputError::Invalid {
                path,
                message,
                line,
                column,
            } => {
                write!(f, "input rejected")?;
                if !path.is_empty() {
                    write!(f, " at {path}")?;
                }
                if let (Some(line), Some(column)) = (line, column) {
                    write!(f, " (line {line}, column {column})")?;
                }
                write!(f, ": {message}")
            }
            InputError::NotResourceList { message } => {
                write!(f, "input is not a ResourceList: {message}")
            }
        }
    }
}

impl std::error::Error for InputError {}

/// Parses a ResourceList from YAML or JSON bytes ([`text`] then [`parse_text`]).
pub fn parse(input: &[u8]) -> Result<ResourceList, InputError> {
    parse_text(text(input)?)
}

/// The input as text: the spec requires UTF-8. Callers that copy unchanged items verbatim keep
/// this `&str` (the item spans index into it) instead of validating the bytes a second time.
pub fn text(input: &[u8]) -> Result<&str, InputError> {
    std::str::from_utf8(input).map_err(|e| InputError::NotUtf8 {
        offset: e.valid_up_to(),
    })
}

/// Parses a ResourceList from YAML or JSON text, keeping every item.
pub fn parse_text(text: &str) -> Result<ResourceList, InputError> {
    parse_text_observed(text, |_| KeepAll).map(|(list, _)| list)
}

/// Parses a ResourceList and shows each item to an observer made by `observer` from the
/// function config. kpt writes the function config after the items: it is then read ahead from
/// the text and checked once the whole document is read; if the guess was wrong the document is
/// read again, so `observer` may be called twice. The observer returned has seen every item
/// exactly once. Items it declines are released (see [`ResourceList::released`]) when their
/// text is proven; otherwise their trees are kept and its answers are ignored.
pub fn parse_text_observed<O: Observer>(
    text: &str,
    mut observer: impl FnMut(Option<&Value>) -> O,
) -> Result<(ResourceList, O), InputError> {
    let (body, base) = match text.strip_prefix('\u{feff}') {
        Some(body) => (body, text.len() - body.len()),
        None => (text, 0),
    };
    let trimmed = body.trim_start_matches([' ', '\t', '\r', '\n']);
    if trimmed.is_empty() {
        return Err(InputError::Empty);
    }
    let limit = expansion_limit(text.len());
    if trimmed.starts_with('{') {
        return json_or_flow(body, base, limit, &mut observer);
    }
    yaml(body, base, limit, &mut observer, false)
}

/// [`parse_text`], noting the spellings of every item (for a caller that writes every item from
/// its tree).
pub fn parse_text_noted(text: &str) -> Result<ResourceList, InputError> {
    let (body, base) = match text.strip_prefix('\u{feff}') {
        Some(body) => (body, text.len() - body.len()),
        None => (text, 0),
    };
    if body
        .trim_start_matches([' ', '\t', '\r', '\n'])
        .starts_with('{')
    {
        return parse_text(text);
    }
    if body.trim_start_matches([' ', '\t', '\r', '\n']).is_empty() {
        return Err(InputError::Empty);
    }
    yaml(
        body,
        base,
        expansion_limit(text.len()),
        &mut |_| KeepAll,
        true,
    )
    .map(|(list, _)| list)
}

/// The spellings of every item of `text` (a ResourceList that was read already), for items
/// written from their tree that were not noted on the first reading (see [`ItemSpellings`]).
pub fn all_spellings(text: &str) -> Vec<Spelling> {
    let (body, base) = match text.strip_prefix('\u{feff}') {
        Some(body) => (body, text.len() - body.len()),
        None => (text, 0),
    };
    let limit = expansion_limit(text.len());
    yaml(body, base, limit, &mut |_| KeepAll, true)
        .map(|(list, _)| list.spellings)
        .unwrap_or_default()
}

/// Where the spellings of the input items written from their tree are (see
/// [`super::yaml::spelling`]). The first reading notes only the items whose text may not be
/// copied (an item that may is copied unless a mode changes it): a changed item with a proven
/// span is read again from its text, alone; an item noted on the first reading uses those
/// notes; any other (its aliases name anchors in other items) gets them from one more reading
/// of the whole input, made only then.
#[derive(Debug, Default)]
pub struct ItemSpellings {
    /// Each with whether it has redirects.
    own: std::collections::HashMap<usize, (Vec<Spelling>, bool)>,
    all: Option<(Vec<Spelling>, bool)>,
    /// The list's own spellings have redirects.
    noted_redirects: bool,
}

impl ItemSpellings {
    /// The spellings for `emitted`, the input items about to be written from their tree;
    /// `restored` are those already read again (released items an edit needed as trees).
    pub fn new(
        text: &str,
        list: &ResourceList,
        emitted: impl IntoIterator<Item = usize>,
        restored: std::collections::HashMap<usize, Vec<Spelling>>,
    ) -> ItemSpellings {
        /// Past this many items to read again, the whole input is read once instead.
        const ALONE: usize = 64;
        let mut own: std::collections::HashMap<usize, (Vec<Spelling>, bool)> = restored
            .into_iter()
            .map(|(i, s)| {
                let r = spelling::has_redirects(&s);
                (i, (s, r))
            })
            .collect();
        let mut spans = Vec::new();
        let mut all_needed = false;
        for i in emitted {
            if own.contains_key(&i) || list.noted_item(i) {
                continue;
            }
            match list.span(i) {
                Some(span) => spans.push((i, span)),
                None => all_needed = true,
            }
        }
        all_needed |= spans.len() > ALONE;
        if !all_needed {
            for (i, span) in spans {
                if let Some((_, spellings)) = parse_item_spelled(text, span, Some(i)) {
                    let r = spelling::has_redirects(&spellings);
                    own.insert(i, (spellings, r));
                }
            }
        }
        let all = all_needed.then(|| {
            let all = all_spellings(text);
            let r = spelling::has_redirects(&all);
            (all, r)
        });
        ItemSpellings {
            own,
            all,
            noted_redirects: spelling::has_redirects(&list.spellings),
        }
    }

    /// The spellings to write input item `index` with.
    pub fn get<'a>(&'a self, text: &'a str, list: &'a ResourceList, index: usize) -> Spellings<'a> {
        let (entries, redirects): (&[Spelling], bool) = match (self.own.get(&index), &self.all) {
            (Some((own, r)), _) => (own, *r),
            (None, _) if list.noted_item(index) => (&list.spellings, self.noted_redirects),
            (None, Some((all, r))) => (all, *r),
            (None, None) => (&[], false),
        };
        Spellings {
            text,
            entries,
            redirects,
        }
    }
}

impl ResourceList {
    /// Whether item `index` was noted on reading (its spellings are in [`Self::spellings`]).
    pub fn noted_item(&self, index: usize) -> bool {
        u32::try_from(index).is_ok_and(|i| self.noted.binary_search(&i).is_ok())
    }
}

fn yaml<O: Observer>(
    body: &str,
    base: usize,
    limit: usize,
    observer: &mut impl FnMut(Option<&Value>) -> O,
    note_all: bool,
) -> Result<(ResourceList, O), InputError> {
    // At most three times: a second pass knows the function config, so it never asks again;
    // a pass that could not skip an item is followed by one that skips nothing.
    let mut config = Config::Find;
    let mut lean = true;
    loop {
        let known = match &config {
            Config::Find => None,
            Config::Known(fc) => Some(fc.clone()),
        };
        match read::read(body, base, limit, config, observer, note_all, lean) {
            Ok(read) => return Ok(read),
            Err(ReadError::Input(e)) => return Err(e),
            Err(ReadError::Again(fc)) => config = Config::Known(fc),
            // Read again building every item (once: without skipping nothing is refused).
            Err(ReadError::Unskippable) => {
                lean = false;
                config = known.map_or(Config::Find, Config::Known);
            }
        }
    }
}

/// A document starting with `{`: JSON (serde_json), else a YAML flow mapping.
fn json_or_flow<O: Observer>(
    body: &str,
    base: usize,
    limit: usize,
    observer: &mut impl FnMut(Option<&Value>) -> O,
) -> Result<(ResourceList, O), InputError> {
    let doc = match serde_json::from_str::<Value>(body) {
        Ok(doc) => doc,
        Err(json) => {
            return yaml(body, base, limit, observer, false).map_err(|yaml| {
                // JSON-looking text gets the JSON parser's message.
                let rest = body.trim_start_matches([' ', '\t', '\r', '\n'])[1..]
                    .trim_start_matches([' ', '\t', '\r', '\n']);
                if rest.starts_with(['"', '}']) {
                    InputError::Syntax {
                        message: json.to_string(),
                        line: Some(json.line()),
                        column: Some(json.column()),
                    }
                } else {
                    yaml
                }
            });
        }
    };
    if let Some(at) = long_json_integer(body) {
        // serde_json read it as a float. The YAML reader names its path (JSON is YAML).
        return Err(match yaml(body, base, limit, observer, false) {
            Err(e @ InputError::Invalid { .. }) => e,
            _ => InputError::Invalid {
                path: String::new(),
                message: format!(
                    "integer {} does not fit in 64 bits (Kubernetes tools would read it as an \
                     inexact float); quote it to keep it as a string",
                    at.2
                ),
                line: Some(at.0),
                column: Some(at.1),
            },
        });
    }
    let mut list = from_value(doc)?;
    let mut seen = observer(list.function_config.as_ref());
    read::observe_all(&mut list, &mut seen);
    Ok((list, seen))
}

/// The first integer literal in JSON text that does not fit 64 bits: line, column, text.
fn long_json_integer(text: &str) -> Option<(usize, usize, String)> {
    let b = text.as_bytes();
    let (mut i, mut line, mut line_start) = (0, 1, 0);
    let mut in_string = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else if c == b'"' {
            in_string = true;
        } else if c == b'\n' {
            line += 1;
            line_start = i + 1;
        } else if c == b'-' || c.is_ascii_digit() {
            let start = i;
            let digits = b[i..].iter().skip(usize::from(c == b'-'));
            let len = digits.take_while(|d| d.is_ascii_digit()).count() + usize::from(c == b'-');
            let end = start + len;
            let fraction = matches!(b.get(end), Some(b'.' | b'e' | b'E'));
            let literal = &text[start..end];
            if !fraction
                && literal.len() >= 19
                && literal.parse::<i64>().is_err()
                && literal.parse::<u64>().is_err()
            {
                return Some((line, start - line_start + 1, literal.to_owned()));
            }
            i = end;
            continue;
        }
        i += 1;
    }
    None
}

/// Parses one item from its text (a [`ResourceList::span`]) for restoring a
/// released item an edit needs as a tree: the text as the only entry of a root `items:` list,
/// the same context (column, depth) as in the whole document. A span is only proven when its
/// aliases name its own anchors, so it reads alone exactly as it read in place.
pub fn parse_item(text: &str, span: std::ops::Range<usize>) -> Option<Value> {
    parse_item_spelled(text, span, None).map(|(item, _)| item)
}

/// [`parse_item`], with the spellings of the item's scalars noted as those of input item `index`
/// (offsets into `text`), when `index` is given.
pub fn parse_item_spelled(
    text: &str,
    span: std::ops::Range<usize>,
    index: Option<usize>,
) -> Option<(Value, Vec<Spelling>)> {
    const PREFIX: &str = "items:\n";
    let shift = span.start as isize - PREFIX.len() as isize;
    let chunk = format!("{PREFIX}{}", text.get(span)?);
    let mut loader = Loader::new(&chunk, expansion_limit(text.len()));
    loader.next_node().ok()?;
    loader.next_node().ok()?;
    let root = loader.next_node().ok()?;
    let Kind::MappingStart(_) = root.kind else {
        return None;
    };
    // `items:` and the sequence's start, then the item.
    let key = loader.next_node().ok()?;
    if !matches!(&key.kind, Kind::Scalar { value: Ok(Value::String(k)), .. } if k == "items") {
        return None;
    }
    let Kind::SequenceStart(_) = loader.next_node().ok()?.kind else {
        return None;
    };
    let node = loader.next_node().ok()?;
    if let Some(index) = index {
        loader
            .spellings
            .start(spelling::index(spelling::ITEMS, index), shift);
    }
    let item = loader.value(node, 2).ok()?;
    loader.spellings.stop();
    let ends = [Kind::SequenceEnd, Kind::MappingEnd];
    for end in ends {
        if std::mem::discriminant(&loader.next_node().ok()?.kind) != std::mem::discriminant(&end) {
            return None;
        }
    }
    let spellings = loader.spellings.finish();
    item.is_mapping().then_some((item, spellings))
}

fn not_rl(message: impl Into<String>) -> InputError {
    InputError::NotResourceList {
        message: message.into(),
    }
}

/// The ResourceList a parsed document holds (checks the envelope, not the items' contents).
pub(super) fn from_value(doc: Value) -> Result<ResourceList, InputError> {
    let Value::Mapping(mut root) = doc else {
        return Err(not_rl("the document is not a mapping"));
    };
    match root.get("kind").and_then(Value::as_str) {
        Some("ResourceList") => {}
        Some(other) => {
            return Err(not_rl(format!(
                "kind is {other:?}, expected \"ResourceList\""
            )));
        }
        None => return Err(not_rl("kind is missing, expected \"ResourceList\"")),
    }
    match root.get("apiVersion").and_then(Value::as_str) {
        Some(v) if INPUT_API_VERSIONS.contains(&v) => {}
        Some(v) => {
            return Err(not_rl(format!(
                "apiVersion is {v:?}, expected one of {INPUT_API_VERSIONS:?}"
            )));
        }
        None => return Err(not_rl("apiVersion is missing")),
    }
    let items = match root.remove("items") {
        Some(Value::Sequence(items)) => items,
        Some(_) => return Err(not_rl("items is not a list")),
        None => {
            return Err(not_rl(
                "items is missing (the spec requires it; use `items: []`)",
            ));
        }
    };
    if let Some(i) = items.iter().position(|item| !item.is_mapping()) {
        return Err(not_rl(format!("items[{i}] is not a mapping")));
    }
    let function_config = match root.remove("functionConfig") {
        None | Some(Value::Null) => None,
        Some(fc @ Value::Mapping(_)) => Some(fc),
        Some(_) => return Err(not_rl("functionConfig is not a mapping")),
    };
    let results = match root.remove("results") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(results)) => results,
        // kpt's legacy wrapper `results: {items: [...]}`.
        Some(Value::Mapping(mut m)) => match m.remove("items") {
            Some(Value::Sequence(results)) => results,
            _ => return Err(not_rl("results is neither a list nor {items: [...]}")),
        },
        Some(_) => return Err(not_rl("results is not a list")),
    };
    Ok(ResourceList {
        items,
        function_config,
        results,
        item_spans: Vec::new(),
        released: ReleasedItems::default(),
        not_krm: Vec::new(),
        spellings: Vec::new(),
        noted: Vec::new(),
        skipped: 0,
    })
}

/// An empty mapping, handy for building objects.
pub fn mapping() -> Mapping {
    Mapping::new()
}

#[cfg(test)]
mod tests;

//! Reading and writing `ResourceList`s (KRM Functions Specification v1).
//!
//! Items stay `serde_yaml::Value`s: key order, list order and fields no schema knows survive a
//! round trip untouched. Only the parts a mode reads are decoded into typed structs, by the mode.

use serde_yaml::{Mapping, Value};

use super::object::{SharedFile, SharedPaths};
use super::result::FileRef;
pub use super::write::{Source, WriteError, write, write_to};

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
    /// Byte range of each item's text in the input (`- ` entry through its last line), when the
    /// input is block YAML laid out as kpt and kustomize write it. Unchanged items are copied
    /// from there verbatim, so their flow style, quoting and comments survive exactly.
    pub item_spans: Option<Vec<std::ops::Range<usize>>>,
    /// Items whose tree was let go right after the [`Observer`] read them (only possible when
    /// `item_spans` is known): `items` holds an empty mapping in their place, and this map their
    /// file, for the output checks. The engine copies them from the input text, patches that
    /// text ([`super::splice`]) or parses them again ([`parse_item`]) when an edit needs it.
    pub released: ReleasedItems,
}

/// What the engine keeps of a released item besides its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Released {
    /// Its file path (shared between the items of one file) and index, for the output checks.
    file: Option<SharedFile>,
    /// Which metadata maps edits may patch in its text ([`super::splice::patchable_maps`]).
    pub text_maps: [bool; 2],
}

impl Released {
    /// Its file, as the path and index annotations gave it.
    pub fn file(&self) -> Option<FileRef> {
        self.file.as_ref().map(SharedFile::file_ref)
    }
}

/// The released items of a list by input index: one slot per item, filled as the items are
/// parsed (no allocation per item: long-lived small allocations between the parse's short-lived
/// trees fragmented the heap at 100k items).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReleasedItems {
    slots: Vec<Option<Released>>,
    count: usize,
}

impl ReleasedItems {
    fn insert(&mut self, index: usize, released: Released) {
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

/// Sees every item right after it is parsed, in input order, and says whether the engine must
/// keep its tree. A mode that only needs a few facts from most items (the announcer from
/// 10k Services) takes them here while the tree is fresh in the cache and lets the tree go, so
/// the run never holds every item's tree at once (see `docs/benchmarks.md`, Peak RSS).
pub trait Observer {
    /// Reads item `index`; returns false to let the engine drop its tree.
    fn observe(&mut self, index: usize, item: &Value) -> bool;
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
/// function config (which kpt writes after the items, so the head of the document is read
/// first). Items the observer declines are released (see [`ResourceList::released`]) when the
/// input has the kpt layout; otherwise every item is kept and the observer's answers are
/// ignored. `observer` may be called twice (the item-by-item parse can fall back to the whole
/// document); the observer returned has seen every item exactly once.
pub fn parse_text_observed<O: Observer>(
    text: &str,
    mut observer: impl FnMut(Option<&Value>) -> O,
) -> Result<(ResourceList, O), InputError> {
    let trimmed = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if trimmed.is_empty() {
        return Err(InputError::Empty);
    }
    check_flow_depth(text)?;
    if !trimmed.starts_with('{')
        && let Some(parsed) = parse_by_item(text, &mut observer)
    {
        return Ok(parsed);
    }
    let list = parse_whole(text, trimmed)?;
    let mut seen = observer(list.function_config.as_ref());
    for (index, item) in list.items.iter().enumerate() {
        seen.observe(index, item);
    }
    Ok((list, seen))
}

/// Parses one item from its text (a span of [`ResourceList::item_spans`]), as the item-by-item
/// parse did: for restoring a released item an edit needs as a tree.
pub fn parse_item(text: &str, span: std::ops::Range<usize>) -> Option<Value> {
    parse_one(&mut String::with_capacity(span.len() + 8), text.get(span)?)
}

/// One item's text parsed as the only entry of a root `items:` list (same context, nesting
/// depth and indentation as in the whole document), in `chunk` (reused between items). `None`
/// unless it is exactly one mapping.
fn parse_one(chunk: &mut String, item_text: &str) -> Option<Value> {
    chunk.clear();
    chunk.push_str("items:\n");
    chunk.push_str(item_text);
    let Ok(Value::Mapping(mut one)) = serde_yaml::from_str::<Value>(chunk) else {
        return None;
    };
    let Some(Value::Sequence(mut entry)) = one.remove("items") else {
        return None;
    };
    if entry.len() != 1 || !one.is_empty() {
        return None;
    }
    entry.pop().filter(Value::is_mapping)
}

/// Parses the whole document at once (JSON, flow or unusual layouts, aliases, and every input
/// [`parse_by_item`] declines, including every invalid one).
fn parse_whole(text: &str, trimmed: &str) -> Result<ResourceList, InputError> {
    let doc: Value = if trimmed.starts_with('{') {
        serde_json::from_str(text).map_err(|e| InputError::Syntax {
            message: e.to_string(),
            line: Some(e.line()),
            column: Some(e.column()),
        })?
    } else {
        serde_yaml::from_str(text).map_err(|e| {
            let loc = e.location();
            InputError::Syntax {
                message: e.to_string(),
                line: loc.as_ref().map(|l| l.line()),
                column: loc.as_ref().map(|l| l.column()),
            }
        })?
    };
    let mut list = from_value(doc)?;
    list.item_spans = item_spans(text, list.items.len());
    Ok(list)
}

/// The memory-lean path of [`parse`] for block YAML laid out as kpt and kustomize write it.
///
/// serde_yaml loads a whole document's events before it builds any value, so parsing a
/// ResourceList in one go holds every event of every item at once next to the finished tree
/// (about half the peak memory). Here each item is parsed from its own text, as the only entry
/// of an `items:` list at the document root (the same context, nesting depth and indentation as in
/// the whole document), and the rest of the document with a sentinel in place of the list.
///
/// The result must be exactly what the whole-document parse gives, so any doubt means `None` and
/// the caller parses the whole document (which also produces the canonical error messages):
/// aliases anywhere (an item could refer to an anchor outside its text), any part that does not
/// parse on its own (a quoted or flow scalar crossing an item boundary is cut open by the split
/// and fails), an item text that is not exactly one entry, the sentinel not ending up as the
/// value of the root `items` key (the `items:` line was inside a multi-line scalar), or a
/// document the ResourceList checks reject.
fn parse_by_item<O: Observer>(
    text: &str,
    observer: &mut impl FnMut(Option<&Value>) -> O,
) -> Option<(ResourceList, O)> {
    if uses_aliases(text) {
        return None;
    }
    let (items_line, spans) = scan_items(text)?;
    let last = spans.last()?.end;
    let mut sentinel = String::from("cutover-items-placeholder");
    while text.contains(&sentinel) {
        sentinel.push('x');
    }
    let mut head = String::with_capacity(items_line.start + (text.len() - last) + 64);
    head.push_str(&text[..items_line.start]);
    head.push_str("items: ");
    head.push_str(&sentinel);
    head.push('\n');
    head.push_str(&text[last..]);
    let Ok(Value::Mapping(mut root)) = serde_yaml::from_str::<Value>(&head) else {
        return None;
    };
    if root.get("items").and_then(Value::as_str) != Some(sentinel.as_str()) {
        return None;
    }
    let fc = root.get("functionConfig").filter(|fc| fc.is_mapping());
    let mut seen = observer(fc);
    let mut released = ReleasedItems {
        slots: Vec::with_capacity(spans.len()),
        count: 0,
    };
    let mut paths = SharedPaths::default();
    let mut items = Vec::with_capacity(spans.len());
    let mut chunk = String::new();
    for (index, span) in spans.iter().enumerate() {
        // Not exactly one mapping (a non-mapping item is an error the whole-document parse
        // reports): decline.
        let item = parse_one(&mut chunk, &text[span.clone()])?;
        if seen.observe(index, &item) {
            items.push(item);
        } else {
            let text_maps = super::splice::patchable_maps(&text[span.clone()], &item);
            let file = paths.file_of(&item);
            released.insert(index, Released { file, text_maps });
            // An empty mapping allocates nothing; the tree goes now.
            items.push(Value::Mapping(Mapping::new()));
        }
    }
    // Same key, same place: the Mapping keeps the position of a replaced key.
    root.insert(Value::from("items"), Value::Sequence(items));
    let mut list = from_value(Value::Mapping(root)).ok()?;
    list.item_spans = Some(spans);
    list.released = released;
    Some((list, seen))
}

/// Finds each top-level item's text: after a column-0 `items:` line, every column-0 `- ` line
/// starts an item; indented, blank and comment lines continue it; any other column-0 line ends
/// the list. Returns `None` (emit everything) unless exactly `expected` items are found, and when
/// the text uses aliases (an item's text might refer to an anchor outside it).
fn item_spans(text: &str, expected: usize) -> Option<Vec<std::ops::Range<usize>>> {
    if expected == 0 || uses_aliases(text) {
        return None;
    }
    let (_, spans) = scan_items(text)?;
    (spans.len() == expected).then_some(spans)
}

/// The line-based scan behind [`item_spans`]: the range of the first column-0 `items:` line and
/// the spans of the items after it (see there), or `None` when the list does not have that layout.
fn scan_items(text: &str) -> Option<(std::ops::Range<usize>, Vec<std::ops::Range<usize>>)> {
    let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
    let mut items_line = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        if items_line.is_none() {
            if content.trim_end() == "items:" {
                items_line = Some(start..offset);
            }
            continue;
        }
        if content.starts_with("- ") || content == "-" {
            spans.push(start..offset);
        } else if content.is_empty() || content.starts_with([' ', '#']) {
            match spans.last_mut() {
                Some(last) => last.end = offset,
                None if content.trim().is_empty() || content.starts_with('#') => {}
                None => return None,
            }
        } else {
            break;
        }
    }
    Some((items_line?, spans))
}

/// True when the text may contain an alias (`*name` where a node can start).
fn uses_aliases(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'*'
            && i > 0
            && matches!(b[i - 1], b' ' | b'[' | b',' | b'\n')
            && b.get(i + 1)
                .is_some_and(|n| n.is_ascii_alphanumeric() || *n == b'_')
    })
}

/// Deepest flow nesting (`[`/`{`) accepted. The YAML parser's cost grows with the square of the
/// flow depth (100k levels take ~20 s), and the decoder rejects depth > 128 anyway, so refuse such
/// input up front instead of spinning.
const MAX_FLOW_DEPTH: usize = 1000;

/// Cheap pre-scan for pathological flow nesting. Only brackets in a position where a flow
/// collection can start count (after `[ { , : - ?`, whitespace or a line start), so brackets
/// inside ordinary strings such as regexes (`^[a-z]+`) do not.
fn check_flow_depth(text: &str) -> Result<(), InputError> {
    let mut depth = 0usize;
    let mut prev = b'\n';
    let (mut line, mut col) = (1usize, 0usize);
    for &b in text.as_bytes() {
        col += 1;
        match b {
            b'[' | b'{' if matches!(prev, b'[' | b'{' | b',' | b':' | b'-' | b'?' | b'\n') => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Err(InputError::Syntax {
                        message: format!(
                            "flow collections nested deeper than {MAX_FLOW_DEPTH} levels"
                        ),
                        line: Some(line),
                        column: Some(col),
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' => {
                line += 1;
                col = 0;
            }
            _ => {}
        }
        if !matches!(b, b' ' | b'\t' | b'\r') {
            prev = b;
        }
    }
    Ok(())
}

fn not_rl(message: impl Into<String>) -> InputError {
    InputError::NotResourceList {
        message: message.into(),
    }
}

fn from_value(doc: Value) -> Result<ResourceList, InputError> {
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
        item_spans: None,
        released: ReleasedItems::default(),
    })
}

/// An empty mapping, handy for building objects.
pub fn mapping() -> Mapping {
    Mapping::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krm::result::KrmResult;

    /// The item-by-item parse gives exactly what the whole-document parse gives (the same list,
    /// or the same error), and is taken where it should be.
    #[test]
    fn item_by_item_parse_equals_whole_document_parse() {
        let whole = |src: &str| {
            let trimmed = src.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
            parse_whole(src, trimmed)
        };
        let head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n";
        let fc = "functionConfig:\n  kind: X\n  data: {a: '1'}\n";
        let cases: Vec<(String, bool)> = vec![
            // kpt layout, comments and blank lines between items, keys after the list
            (
                format!(
                    "{head}items:\n- kind: A\n  metadata: {{name: a}}\n# note\n\n- kind: B\n  spec:\n    ports:\n    - port: 80\n{fc}"
                ),
                true,
            ),
            // CRLF line ends
            (
                format!("{head}items:\n- kind: A\n  b: 1\n- kind: B\n").replace('\n', "\r\n"),
                true,
            ),
            // flow items, block scalars with dash lines, quoted keys and values
            (
                format!(
                    "{head}items:\n- {{kind: A, b: [1, 2]}}\n- kind: B\n  script: |\n    - not an item\n    items:\n  'q': \"x: y\"\n"
                ),
                true,
            ),
            // an anchor used inside its own item only is fine; an alias anywhere is not
            (
                format!("{head}items:\n- kind: A\n  a: &x {{k: v}}\n  b: 2\n- kind: B\n"),
                true,
            ),
            (
                format!("{head}items:\n- kind: A\n  a: &x {{k: v}}\n- kind: B\n  b: *x\n"),
                false,
            ),
            // a double-quoted scalar continuing on a column-0 `- ` line: one item, not two
            (
                format!("{head}items:\n- kind: A\n  msg: \"first\n- second\"\n- kind: B\n"),
                false,
            ),
            // a flow mapping continuing on a column-0 `- ` line
            (
                format!("{head}items:\n- kind: A\n  m: {{a: 1,\n- b: 2}}\n"),
                false,
            ),
            // `items:` inside a quoted scalar of another key, the real list later
            (
                format!("{head}note: \"x\nitems:\n- kind: Fake\n\"\nitems:\n- kind: Real\n"),
                false,
            ),
            (
                format!("{head}note: \"x\nitems:\n- kind: Fake\n\"\nitems: []\n"),
                false,
            ),
            // two `items` keys, an empty list, items indented under the key
            (
                format!("{head}items:\n- kind: A\nitems:\n- kind: B\n"),
                false,
            ),
            (format!("{head}items: []\n"), false),
            (format!("{head}items:\n  - kind: A\n  - kind: B\n"), false),
            // a document end marker, then a second document
            (format!("{head}items:\n- kind: A\n...\n"), true),
            (
                format!("{head}items:\n- kind: A\n---\nkind: Other\n"),
                false,
            ),
            // items that are not mappings, wrong kind, syntax errors inside an item
            (format!("{head}items:\n- kind: A\n- 3\n"), false),
            (
                "apiVersion: v1\nkind: List\nitems:\n- kind: A\n".to_owned(),
                false,
            ),
            (
                format!("{head}items:\n- kind: A\n  b: [1, 2\n- kind: B\n"),
                false,
            ),
            (format!("{head}items:\n- kind: A\n  b: 1\n   c: 2\n"), false),
            // duplicate keys inside an item
            (format!("{head}items:\n- kind: A\n  kind: B\n"), false),
            // the sentinel text itself appears in the input
            (
                format!("{head}items:\n- kind: A\n  v: cutover-items-placeholder\n"),
                true,
            ),
            // deep nesting near serde_yaml's recursion limit: same verdict either way
            (
                format!(
                    "{head}items:\n- a: {}1{}\n",
                    "[".repeat(125),
                    "]".repeat(125)
                ),
                true,
            ),
            (
                format!(
                    "{head}items:\n- a: {}1{}\n",
                    "[".repeat(127),
                    "]".repeat(127)
                ),
                false,
            ),
        ];
        for (src, lean) in &cases {
            assert_eq!(parse(src.as_bytes()), whole(src), "{src}");
            assert_eq!(
                parse_by_item(src, &mut |_| KeepAll).is_some(),
                *lean,
                "{src:?}"
            );
        }
    }

    #[test]
    fn reads_yaml_and_json_the_same() {
        let y = parse(
            b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {kind: A, b: 1}\n",
        )
        .unwrap();
        let j = parse(br#"{"apiVersion":"config.kubernetes.io/v1beta1","kind":"ResourceList","items":[{"kind":"A","b":1}]}"#)
            .unwrap();
        assert_eq!(y.items, j.items);
    }

    #[test]
    fn keeps_key_order_and_unknown_fields() {
        let src = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- zeta: 1\n  alpha: {w: 2, x: [3, 1]}\n  kind: Weird\n";
        let rl = parse(src.as_bytes()).unwrap();
        let out = String::from_utf8(write(&rl.items, &[], None, &[], &[]).unwrap()).unwrap();
        assert_eq!(
            out,
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- zeta: 1\n  alpha:\n    w: 2\n    x:\n    - 3\n    - 1\n  kind: Weird\n"
        );
    }

    #[test]
    fn finds_item_text_as_kpt_lays_it_out() {
        let src = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- kind: A # c\n  labels: {a: b}\n\n# between\n- kind: B\n  s: |\n    - not an item\nfunctionConfig:\n  kind: X\n";
        let rl = parse(src.as_bytes()).unwrap();
        let spans = rl.item_spans.clone().unwrap();
        assert_eq!(
            &src[spans[0].clone()],
            "- kind: A # c\n  labels: {a: b}\n\n# between\n"
        );
        assert_eq!(
            &src[spans[1].clone()],
            "- kind: B\n  s: |\n    - not an item\n"
        );
        let texts: Vec<Option<&str>> = spans.iter().map(|r| Some(&src[r.clone()])).collect();
        let out = String::from_utf8(write(&rl.items, &texts, None, &[], &[]).unwrap()).unwrap();
        assert!(out.contains("  labels: {a: b}\n"), "{out}");
        let back = parse(out.as_bytes()).unwrap();
        assert_eq!(back.items, rl.items);
    }

    #[test]
    fn no_item_text_when_layout_is_unusual() {
        let wide = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n  - kind: A\n";
        assert_eq!(parse(wide.as_bytes()).unwrap().item_spans, None);
        let alias = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nx: &a {k: v}\nitems:\n- kind: A\n  v: *a\n";
        assert_eq!(parse(alias.as_bytes()).unwrap().item_spans, None);
        let json = r#"{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"kind":"A"}]}"#;
        assert_eq!(parse(json.as_bytes()).unwrap().item_spans, None);
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let e = parse(b"apiVersion: x\nkind: [\n").unwrap_err();
        match e {
            InputError::Syntax { line, column, .. } => {
                assert!(line.is_some() && column.is_some(), "{e:?}")
            }
            other => panic!("unexpected {other:?}"),
        }
        let e = parse(b"{\"a\": }").unwrap_err();
        assert!(
            matches!(
                e,
                InputError::Syntax {
                    line: Some(1),
                    column: Some(7),
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn rejects_what_is_not_a_resource_list() {
        for (src, needle) in [
            ("", "empty"),
            ("  \n", "empty"),
            ("- a\n", "not a mapping"),
            ("kind: ConfigMap\n", "kind is \"ConfigMap\""),
            ("kind: ResourceList\n", "apiVersion is missing"),
            (
                "kind: ResourceList\napiVersion: v1\nitems: []\n",
                "apiVersion is \"v1\"",
            ),
            (
                "kind: ResourceList\napiVersion: config.kubernetes.io/v1\n",
                "items is missing",
            ),
            (
                "kind: ResourceList\napiVersion: config.kubernetes.io/v1\nitems: 3\n",
                "items is not a list",
            ),
            (
                "kind: ResourceList\napiVersion: config.kubernetes.io/v1\nitems: [3]\n",
                "items[0] is not a mapping",
            ),
        ] {
            let e = parse(src.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(needle), "{src:?}: {e}");
        }
        assert_eq!(
            parse(b"a: \xff").unwrap_err(),
            InputError::NotUtf8 { offset: 3 }
        );
    }

    #[test]
    fn hostile_documents_end_in_errors_not_crashes() {
        let deep = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- a: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(matches!(
            parse(deep.as_bytes()),
            Err(InputError::Syntax { .. })
        ));
        let deep_json = format!(
            "{{\"items\": {}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(matches!(
            parse(deep_json.as_bytes()),
            Err(InputError::Syntax { .. })
        ));
        let mut laughs = String::from(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
        );
        for i in 1..12 {
            let p = i - 1;
            laughs.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        laughs.push_str("items: [*a11]\n");
        assert!(matches!(
            parse(laughs.as_bytes()),
            Err(InputError::Syntax { .. })
        ));
    }

    #[test]
    fn brackets_inside_strings_do_not_count_as_nesting() {
        let many = "x: '^[a-z]+ {{'\n".repeat(2000);
        let src = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nz:\n  {}",
            many.replace('\n', "\n  ")
        );
        assert!(check_flow_depth(&src).is_ok());
        assert!(check_flow_depth(&format!("a: {}", "[".repeat(1001))).is_err());
        assert!(check_flow_depth(&format!("a: {}{}", "[".repeat(1000), "]".repeat(1000))).is_ok());
    }

    #[test]
    fn keeps_existing_results_before_new_ones() {
        let rl = parse(b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n- message: earlier\n  severity: info\n").unwrap();
        let out = write(
            &rl.items,
            &[],
            None,
            &rl.results,
            &[KrmResult::warning("now")],
        )
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.ends_with("results:\n- message: earlier\n  severity: info\n- message: now\n  severity: warning\n"), "{out}");
    }
}

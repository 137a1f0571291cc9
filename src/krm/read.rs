//! Reading a YAML ResourceList in one pass of the parser ([`super::yaml`]): every item is built
//! from the events, shown to the [`Observer`] right away, and — where the events prove its text —
//! given a span the writer may copy and released when the observer lets it go.
//!
//! An item whose text may be copied is read lean: once its `apiVersion`, `kind` and `metadata`
//! are built, the observer is asked what it reads of the rest ([`Observer::reads`]); what it
//! does not read is skipped — its events are read and checked, nothing is built
//! (`yaml/load/skip.rs`) — and the item is released: its text is copied. The observer may keep
//! the partial tree for its mode (the head and the keys of `spec` it asked for); an edit that
//! needs more reads the item again from its text, as for any released item. Where skipping
//! cannot check what building would (an anchor a later item may alias, a possible duplicate
//! key…), or the item's text cannot be proven, the whole input is read again building every
//! item: the lean read never changes an output or an error, only what it costs.
//!
//! An item's span runs from the start of its `- ` line to the start of the next item's `- `
//! line (or the line of the first token after the list). It is proven when:
//! - the list is a block sequence whose entries are at column 0 (kpt's and kustomize's layout,
//!   the same column as in the output, so the text reads the same there): the `-` is found by
//!   walking back from the item's first event over blank and comment lines only;
//! - the item has no alias to an anchor defined before it (its anchors are its own; a later item
//!   that aliases them is not copyable itself and is emitted from its tree, expanded);
//! - the document declares no `%TAG` handles (the output does not repeat them).
//!
//! Everything between two proven starts belongs to the item: it cannot end inside a scalar
//! (a quoted scalar whose closing quote is at column 0, as PyYAML-written files hand it over,
//! lies wholly before the next `- ` or key line).

use serde_yaml::{Mapping, Value};

use super::io::{InputError, NotKrm, Observer, Released, ReleasedItems, ResourceList, from_value};
use super::object::SharedPaths;
use super::yaml::layout::{MetaLayout, blank_or_comment};
use super::yaml::load::{ItemsSink, Kind, Node, Segment};
use super::yaml::spelling;
use super::yaml::{LoadError, Loader};

/// What [`read`] needs to know about the function config before it reads the items.
pub(super) enum Config {
    /// Find it: it comes before the items, or kpt wrote it after them (guessed from the text,
    /// checked at the end).
    Find,
    /// Known from an earlier pass.
    Known(Option<Value>),
}

/// Why [`read`] stopped.
pub(super) enum ReadError {
    /// The input is not a ResourceList.
    Input(InputError),
    /// The function config the observer was made from was guessed wrong: read again with this.
    Again(Option<Value>),
    /// An item could not be skipped after all (see `yaml/load/skip.rs`): read again building
    /// every item.
    Unskippable,
}

impl From<InputError> for ReadError {
    fn from(e: InputError) -> Self {
        ReadError::Input(e)
    }
}

/// Reads `text` (without byte order mark; `base` bytes were cut before it) as a ResourceList.
pub(super) fn read<O: Observer>(
    text: &str,
    base: usize,
    limit: usize,
    config: Config,
    make: &mut impl FnMut(Option<&Value>) -> O,
    note_all: bool,
    lean: bool,
) -> Result<(ResourceList, O), ReadError> {
    let mut loader = Loader::new(text, limit);
    loader.spellings.items_shift = Some(base as isize);
    let load = |e: LoadError| ReadError::Input(load_error(e));
    loader.next_node().map_err(load)?; // stream start
    let start = loader.next_node().map_err(load)?;
    let tag_directives = match start.kind {
        Kind::DocumentStart { tag_directives } => tag_directives,
        // Only comments: an empty document.
        _ => return Err(from_value(Value::Null).unwrap_err().into()),
    };
    let mut sink = Sink {
        make,
        config,
        observer: None,
        used: None,
        invoked: false,
        copyable: !tag_directives,
        note_all,
        lean,
        refused: false,
        skipped: 0,
        noted: Vec::new(),
        base,
        items: Vec::new(),
        spans: Vec::new(),
        released: ReleasedItems::default(),
        not_krm: Vec::new(),
        paths: SharedPaths::default(),
    };
    let root = loader.next_node().map_err(load)?;
    let root = loader
        .root(root, &mut sink)
        .map_err(|e| match e.skip_refused {
            true => ReadError::Unskippable,
            false => load(e),
        })?;
    match loader.next_node().map_err(load)?.kind {
        Kind::DocumentEnd => {}
        other => unreachable!("libyaml ends a document's root node with its end, not {other:?}"),
    }
    if let Kind::DocumentStart { .. } = loader.next_node().map_err(load)?.kind {
        return Err(ReadError::Input(InputError::Syntax {
            message: "deserializing from YAML containing more than one document is not \
                      supported"
                .into(),
            line: None,
            column: None,
        }));
    }
    let real = match &root {
        Value::Mapping(m) => m
            .get("functionConfig")
            .filter(|fc| fc.is_mapping())
            .cloned(),
        _ => None,
    };
    if sink.invoked && sink.used.as_ref() != Some(&real) {
        return Err(ReadError::Again(real));
    }
    let mut list = from_value(root)?;
    let mut observer = match sink.observer.take() {
        Some(o) => o,
        None => (sink.make)(real.as_ref()),
    };
    if sink.invoked {
        list.item_spans = sink.spans;
        list.released = sink.released;
        list.not_krm = sink.not_krm;
        list.spellings = loader.spellings.finish();
        list.noted = sink.noted;
        list.skipped = sink.skipped;
    } else {
        // The items were not a plain list (anchored, tagged): every tree kept, no spans.
        list.spellings = loader.spellings.finish();
        list.noted = (0..list.items.len() as u32).collect();
        observe_all(&mut list, &mut observer);
    }
    Ok((list, observer))
}

/// Shows every item of a list read without spans to the observer (its answers are ignored:
/// every tree is kept) and checks that each is a KRM resource.
pub(super) fn observe_all<O: Observer>(list: &mut ResourceList, observer: &mut O) {
    for (index, item) in list.items.iter().enumerate() {
        if let Some(problem) = NotKrm::of(index, item) {
            list.not_krm.push(problem);
        }
        observer.observe(index, item);
    }
}

/// The [`InputError`] for a loader error.
fn load_error(e: LoadError) -> InputError {
    let line = Some(e.mark.line + 1);
    let column = Some(e.mark.column + 1);
    if e.syntax {
        return InputError::Syntax {
            message: e.message,
            line,
            column,
        };
    }
    InputError::Invalid {
        path: e.path(),
        message: e.message,
        line,
        column,
    }
}

/// The item reader behind [`read`].
struct Sink<'m, O, F> {
    make: &'m mut F,
    config: Config,
    observer: Option<O>,
    /// The function config the observer was made from.
    used: Option<Option<Value>>,
    /// The root's `items` were read here.
    invoked: bool,
    /// Spans may be proven (no `%TAG` directives).
    copyable: bool,
    /// Note the spellings of every item, not only of those whose text cannot be copied.
    note_all: bool,
    /// Skip building what the observer does not read of an item whose text is copied.
    lean: bool,
    /// An item was skipped whose text could not be proven after all.
    refused: bool,
    /// Items skipped and released.
    skipped: usize,
    /// The items whose spellings were noted.
    noted: Vec<u32>,
    base: usize,
    items: Vec<Value>,
    spans: Vec<Option<std::ops::Range<u32>>>,
    released: ReleasedItems,
    not_krm: Vec<NotKrm>,
    paths: SharedPaths,
}

/// An item read but not yet placed: its span's end is known once the next item starts.
struct Pending {
    index: usize,
    value: Value,
    /// The observer keeps its tree.
    keep: bool,
    /// Start of its `- ` line, when its text may be copied.
    start: Option<usize>,
    layout: Option<MetaLayout>,
    /// Length of the layout arena before this item's entries.
    arena_mark: usize,
    /// Spellings noted before this item's.
    spelling_mark: usize,
    /// It has anchors, aliases or merge keys (its spellings are kept if it is released: a later
    /// item's alias may name its anchors).
    refs: bool,
    /// Only its head and the keys of `spec` the observer reads were built (`Loader::item_lean`):
    /// it must be released (its partial tree stays for the mode when the observer keeps it).
    skipped: bool,
}

impl<O: Observer, F: FnMut(Option<&Value>) -> O> ItemsSink for Sink<'_, O, F> {
    fn items(
        &mut self,
        loader: &mut Loader<'_>,
        root: &Mapping,
        flow: bool,
    ) -> Result<Value, LoadError> {
        self.invoked = true;
        let fc = match std::mem::replace(&mut self.config, Config::Find) {
            Config::Known(fc) => fc,
            Config::Find => match root.get("functionConfig") {
                Some(fc) => Some(fc.clone()).filter(Value::is_mapping),
                None => guess_function_config(loader.text(), loader.limit()),
            },
        };
        self.observer = Some((self.make)(fc.as_ref()));
        self.used = Some(fc);
        let text = loader.text();
        let copyable = self.copyable && !flow;
        let mut pending: Option<Pending> = None;
        let mut index = 0;
        loop {
            let node: Node = loader.next_node()?;
            if let Kind::SequenceEnd = node.kind {
                let end = list_end(text, node.start.index);
                self.place(pending.take(), end, &mut loader.spellings);
                if self.refused {
                    return Err(LoadError::refuse_skip(node.start));
                }
                return Ok(Value::Sequence(std::mem::take(&mut self.items)));
            }
            let dash = if copyable {
                dash_line(text, node.start.index)
            } else {
                None
            };
            self.place(pending.take(), dash, &mut loader.spellings);
            if self.refused {
                return Err(LoadError::refuse_skip(node.start));
            }
            let block_mapping = matches!(&node.kind, Kind::MappingStart(p) if !p.flow);
            loader.begin_item(node.start.index, dash.is_some() && block_mapping);
            let refs = loader.refs();
            let spelling_mark = loader.spellings.entries.len();
            // An item that may be copied is noted only when asked: one written from its tree
            // after all (changed) is read again from its text then (`io::ItemSpellings`).
            if self.note_all || dash.is_none() {
                loader
                    .spellings
                    .start(spelling::index(spelling::ITEMS, index), self.base as isize);
                if let Ok(i) = u32::try_from(index) {
                    self.noted.push(i);
                }
            }
            let item_start = node.start;
            let value = match (
                &mut self.observer,
                self.lean && !self.note_all && dash.is_some(),
            ) {
                (Some(observer), true) => {
                    loader.item_lean(node, 2, &mut |head| observer.reads(head).spec_keys())
                }
                _ => loader.item(node, 2).map(|v| (v, false)),
            };
            loader.spellings.stop();
            let (value, skipped) = value.map_err(|e| e.within(Segment::Index(index)))?;
            let own_text = dash.filter(|_| !loader.outside());
            let mut keep = true;
            if value.is_mapping() {
                if let Some(problem) = NotKrm::of(index, &value) {
                    self.not_krm.push(problem);
                }
                if let Some(observer) = &mut self.observer {
                    keep = observer.observe(index, &value);
                }
            }
            // A skipped item is only partly built: it must be released, its text copied (the
            // observer may keep the partial tree for its mode).
            if skipped && own_text.is_none() {
                return Err(LoadError::refuse_skip(item_start));
            }
            let arena_mark = self.released.entries.len();
            let layout = match own_text {
                Some(start) if (!keep || skipped) && loader.refs() == refs => {
                    loader.recorder.finish(start, &mut self.released.entries)
                }
                _ => None,
            };
            pending = Some(Pending {
                index,
                value,
                keep,
                start: own_text,
                layout,
                arena_mark,
                spelling_mark,
                refs: loader.refs() != refs,
                skipped,
            });
            index += 1;
        }
    }
}

impl<O, F> Sink<'_, O, F> {
    /// Places a read item now that the start of what follows it is known (`end`, `None` when
    /// not proven): released when the observer let it go and its text is proven, else kept.
    /// The item's noted spellings go with its tree, unless other items may refer to them.
    fn place(
        &mut self,
        pending: Option<Pending>,
        end: Option<usize>,
        spellings: &mut spelling::Log,
    ) {
        let Some(p) = pending else {
            return;
        };
        let at = |offset: usize| u32::try_from(offset + self.base).ok();
        let span = p.start.zip(end).and_then(|(s, e)| Some(at(s)?..at(e)?));
        if (!p.keep || p.skipped) && span.is_some() {
            let file = self.paths.file_of(&p.value);
            self.released.insert(
                p.index,
                Released {
                    file,
                    layout: p.layout,
                },
            );
            self.skipped += usize::from(p.skipped);
            self.items.push(if p.keep {
                p.value
            } else {
                // An empty mapping allocates nothing; the tree goes now.
                Value::Mapping(Mapping::new())
            });
            if !p.refs {
                spellings.truncate(p.spelling_mark);
            }
        } else {
            self.refused |= p.skipped;
            self.released.entries.truncate(p.arena_mark);
            self.items.push(p.value);
        }
        self.spans.push(span);
    }
}

/// Start of the `- ` line of the item whose first event is at `at`: the `-` at column 0, then
/// only blanks before `at`, or blanks and comments on the lines between.
fn dash_line(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let line_start = |end: usize| {
        bytes[..end]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    };
    let dash = |line: &[u8]| {
        line.first() == Some(&b'-') && matches!(line.get(1), None | Some(b' ' | b'\t' | b'\r'))
    };
    let mut start = line_start(at);
    let head = &bytes[start..at];
    if dash(head) && head[1..].iter().all(|b| matches!(b, b' ' | b'\t')) {
        return Some(start);
    }
    if !head.iter().all(|b| matches!(b, b' ' | b'\t')) {
        return None;
    }
    while start > 0 {
        let end = start - 1;
        start = line_start(end);
        let line = &text[start..end];
        if dash(line.as_bytes()) && blank_or_comment(&line[1..]) {
            return Some(start);
        }
        if !blank_or_comment(line) {
            return None;
        }
    }
    None
}

/// Where the last item's text ends: the start of the line of the first token after the list
/// (a root key at column 0, a document marker, or the end of the input).
fn list_end(text: &str, at: usize) -> Option<usize> {
    (at == 0 || at == text.len() || text.as_bytes()[at - 1] == b'\n').then_some(at)
}

/// The function config as kpt writes it, after the items: the document from the last
/// `functionConfig:` line at column 0, read on its own. Only a guess (that line could be inside
/// a multi-line scalar): [`read`] compares it with the one it finds and reads again if they
/// differ.
fn guess_function_config(text: &str, limit: usize) -> Option<Value> {
    const KEY: &str = "functionConfig:";
    let at = if text.starts_with(KEY) {
        text.rfind(&format!("\n{KEY}")).map_or(0, |i| i + 1)
    } else {
        text.rfind(&format!("\n{KEY}"))? + 1
    };
    if !matches!(
        text.as_bytes().get(at + KEY.len()),
        Some(b' ' | b'\n' | b'\r' | b'\t')
    ) {
        return None;
    }
    let tail = &text[at..];
    let mut loader = Loader::new(tail, limit);
    loader.next_node().ok()?;
    loader.next_node().ok()?;
    let root = loader.next_node().ok()?;
    let doc = loader.value(root, 0).ok()?;
    doc.get("functionConfig")
        .filter(|fc| fc.is_mapping())
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_lines_are_found_over_blank_and_comment_lines_only() {
        let t = "items:\n- a: 1\n-\n  # c\n\n  b: 2\n- # note\n  c: 3\n  - x\n";
        let at = |s: &str| t.find(s).unwrap();
        assert_eq!(dash_line(t, at("a: 1")), Some(at("- a")));
        assert_eq!(dash_line(t, at("b: 2")), Some(at("-\n  # c")));
        assert_eq!(dash_line(t, at("c: 3")), Some(at("- # note")));
        // An indented entry is not at column 0.
        assert_eq!(dash_line(t, at("x\n")), None);
        // Text on the way back that is not blank or a comment.
        assert_eq!(dash_line("k: v\n  a: 1\n", 9), None);
    }
}

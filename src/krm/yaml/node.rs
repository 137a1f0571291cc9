//! The loader's view of a parser event ([`Node`]: owned, scalars resolved) and its error
//! ([`LoadError`], with the path to the node).

use serde_yaml::Value;
use serde_yaml::value::Tag;

use super::events::{Event, Mark, ScalarStyle, SyntaxError};
use super::resolve::{self, CORE, ScalarError};

/// One step of the path to a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

/// Why the input could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// What is wrong.
    pub message: String,
    /// Where.
    pub mark: Mark,
    /// The path from the root to the node, innermost step first.
    path: Vec<Segment>,
    /// A syntax error from the parser (the path is then only approximate and not shown).
    pub syntax: bool,
    /// Not an error of the input: an item the reader meant to skip holds something skipping
    /// cannot check or keep (see `load/skip.rs`); the caller reads the input again, building
    /// every item.
    pub skip_refused: bool,
}

/// `what is wrong at a.b[2] (line L, column C)`: the form results about embedded documents use.
impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.path();
        if at.is_empty() {
            write!(f, "{}", self.message)?;
        } else {
            write!(f, "{} at {at}", self.message)?;
        }
        write!(
            f,
            " (line {}, column {})",
            self.mark.line + 1,
            self.mark.column + 1
        )
    }
}

impl std::error::Error for LoadError {}

impl LoadError {
    /// A parser error.
    pub(super) fn syntax(e: SyntaxError) -> LoadError {
        LoadError {
            message: e.message,
            mark: e.mark,
            path: Vec::new(),
            syntax: true,
            skip_refused: false,
        }
    }

    /// A second document where one is expected.
    pub(super) fn more_than_one_document(at: Mark) -> LoadError {
        LoadError::content("more than one YAML document (expected one)", at)
    }

    pub(super) fn content(message: impl Into<String>, mark: Mark) -> LoadError {
        LoadError {
            message: message.into(),
            mark,
            path: Vec::new(),
            syntax: false,
            skip_refused: false,
        }
    }

    /// The item being skipped at `mark` must be built after all (see [`LoadError::skip_refused`]).
    pub fn refuse_skip(mark: Mark) -> LoadError {
        LoadError {
            skip_refused: true,
            ..LoadError::content("the item cannot be skipped", mark)
        }
    }

    /// The error with one more step (outside the ones it has) on its path.
    pub fn within(mut self, segment: Segment) -> LoadError {
        self.path.push(segment);
        self
    }

    /// The path as `items[3].metadata.annotations["example.com/x"]` (empty at the root).
    pub fn path(&self) -> String {
        let mut out = String::new();
        for seg in self.path.iter().rev() {
            match seg {
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
                Segment::Key(k)
                    if !k.is_empty()
                        && k.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
                {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Segment::Key(k) => out.push_str(&format!("[{k:?}]")),
            }
        }
        out
    }
}

/// A parser event with everything the loader needs from it owned (the event's own strings live
/// only until the next one), scalars already resolved.
#[derive(Debug)]
pub struct Node {
    /// What it is.
    pub kind: Kind,
    /// Where it starts (its anchor or tag, if any).
    pub start: Mark,
    /// Where it ends.
    pub end: Mark,
}

/// The kinds of [`Node`].
#[derive(Debug)]
pub enum Kind {
    /// A scalar.
    Scalar {
        /// Its value, or why it has none.
        value: Result<Value, ScalarError>,
        /// `&name`.
        anchor: Option<Box<[u8]>>,
        /// A merge key `<<` (plain and untagged, or tagged `!!merge`).
        merge: bool,
        /// How it was written.
        style: ScalarStyle,
        /// It carries a tag.
        tagged: bool,
        /// The tag as the output spells it (see [`super::spelling::spell_tag`]).
        tag: Option<Box<str>>,
    },
    /// `*name`.
    Alias(Box<[u8]>),
    /// Start of a sequence.
    SequenceStart(Props),
    /// End of a sequence.
    SequenceEnd,
    /// Start of a mapping.
    MappingStart(Props),
    /// End of a mapping.
    MappingEnd,
    /// Start of a document.
    DocumentStart {
        /// It declares `%TAG` handles.
        tag_directives: bool,
    },
    /// End of a document.
    DocumentEnd,
    /// Start of the stream.
    StreamStart,
    /// End of the stream.
    StreamEnd,
}

/// Anchor, local tag and style of a collection.
#[derive(Debug)]
pub struct Props {
    /// `&name`.
    pub anchor: Option<Box<[u8]>>,
    /// A local tag (`!custom`), kept on the value as serde_yaml keeps it.
    pub tag: Option<Tag>,
    /// Flow style (`[…]`, `{…}`).
    pub flow: bool,
}

impl Props {
    /// A block collection without anchor or tag.
    pub(super) fn plain_block(&self) -> bool {
        !self.flow && self.anchor.is_none() && self.tag.is_none()
    }
}

impl Node {
    /// The node of a parser event.
    pub(super) fn from_event(event: Event<'_>, start: Mark, end: Mark) -> Node {
        let kind = match event {
            Event::Scalar {
                anchor,
                tag,
                value,
                style,
            } => {
                let value = match std::str::from_utf8(value) {
                    Ok(text) => resolve::scalar(text, tag, style),
                    Err(_) => Ok(Value::from(String::from_utf8_lossy(value).into_owned())),
                };
                let merge = match tag {
                    None => {
                        style == ScalarStyle::Plain
                            && value.as_ref().ok().and_then(Value::as_str) == Some("<<")
                    }
                    Some(t) => t.strip_prefix(CORE) == Some(b"merge"),
                };
                Kind::Scalar {
                    value,
                    anchor: anchor.map(Box::from),
                    merge,
                    style,
                    tagged: tag.is_some(),
                    tag: tag.map(super::spelling::spell_tag),
                }
            }
            Event::Alias { anchor } => Kind::Alias(Box::from(anchor)),
            Event::SequenceStart { anchor, tag, flow } => Kind::SequenceStart(Props {
                anchor: anchor.map(Box::from),
                tag: tag.and_then(resolve::local_tag),
                flow,
            }),
            Event::MappingStart { anchor, tag, flow } => Kind::MappingStart(Props {
                anchor: anchor.map(Box::from),
                tag: tag.and_then(resolve::local_tag),
                flow,
            }),
            Event::SequenceEnd => Kind::SequenceEnd,
            Event::MappingEnd => Kind::MappingEnd,
            Event::DocumentStart { tag_directives } => Kind::DocumentStart { tag_directives },
            Event::DocumentEnd => Kind::DocumentEnd,
            Event::StreamStart => Kind::StreamStart,
            Event::StreamEnd => Kind::StreamEnd,
        };
        Node { kind, start, end }
    }
}

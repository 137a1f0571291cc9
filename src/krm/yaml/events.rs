//! A safe event stream over libyaml's parser (the `unsafe-libyaml` port serde_yaml uses).
//!
//! go-yaml, which kpt, kustomize and kubectl read YAML with, is a port of the same libyaml
//! scanner and parser, so the events and their positions here are the ones those tools see.
//! Positions ([`Mark::index`]) are **byte** offsets into the input: unsafe-libyaml advances its
//! index by each character's UTF-8 width (C libyaml counts characters); a unit test pins it.
//!
//! The crate is built from `vendor/unsafe-libyaml`, patched to copy runs of ASCII at once where
//! libyaml takes one character at a time, and to allocate less per scalar (its `CUTOVER.md`).
//! [`Parser::one_character_at_a_time`]
//! turns the patch off, and [`first_disagreement`] compares two parses, so that tests and both
//! fuzz suites can check that the two agree.

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use unsafe_libyaml as unsafe_yaml;

use super::MAX_DEPTH;

/// A position in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mark {
    /// Byte offset.
    pub index: usize,
    /// 0-based line.
    pub line: usize,
    /// 0-based column, in characters.
    pub column: usize,
}

impl Mark {
    fn from_sys(m: unsafe_yaml::yaml_mark_t) -> Mark {
        Mark {
            index: m.index as usize,
            line: m.line as usize,
            column: m.column as usize,
        }
    }
}

/// How a scalar was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    /// Unquoted.
    Plain,
    /// `'…'`.
    SingleQuoted,
    /// `"…"`.
    DoubleQuoted,
    /// `|`.
    Literal,
    /// `>`.
    Folded,
}

/// One parser event. Borrowed slices live until the next call of [`Parser::next_event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'e> {
    /// Start of the stream.
    StreamStart,
    /// End of the stream.
    StreamEnd,
    /// Start of a document; `tag_directives` when it declares `%TAG` handles.
    DocumentStart {
        /// The document declares `%TAG` directives.
        tag_directives: bool,
    },
    /// End of a document.
    DocumentEnd,
    /// `*name`.
    Alias {
        /// The anchor name.
        anchor: &'e [u8],
    },
    /// A scalar.
    Scalar {
        /// `&name`, if any.
        anchor: Option<&'e [u8]>,
        /// The resolved tag (`tag:yaml.org,2002:str` for `!!str`), if any.
        tag: Option<&'e [u8]>,
        /// The value, escapes and folding applied.
        value: &'e [u8],
        /// How it was written.
        style: ScalarStyle,
    },
    /// Start of a sequence.
    SequenceStart {
        /// `&name`, if any.
        anchor: Option<&'e [u8]>,
        /// The resolved tag, if any.
        tag: Option<&'e [u8]>,
        /// `[…]` rather than block entries.
        flow: bool,
    },
    /// End of a sequence.
    SequenceEnd,
    /// Start of a mapping.
    MappingStart {
        /// `&name`, if any.
        anchor: Option<&'e [u8]>,
        /// The resolved tag, if any.
        tag: Option<&'e [u8]>,
        /// `{…}` rather than block entries.
        flow: bool,
    },
    /// End of a mapping.
    MappingEnd,
}

/// A syntax error, as libyaml reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// What is wrong, with the context libyaml gives (`…, while parsing a block mapping at …`).
    pub message: String,
    /// Where.
    pub mark: Mark,
}

/// The libyaml parser over one input. Not `Send`: libyaml's state holds raw pointers.
pub struct Parser<'a> {
    sys: Box<MaybeUninit<unsafe_yaml::yaml_parser_t>>,
    event: MaybeUninit<unsafe_yaml::yaml_event_t>,
    /// Whether `event` holds an event to delete.
    live: bool,
    failed: bool,
    input: PhantomData<&'a [u8]>,
}

impl<'a> Parser<'a> {
    /// A parser over `input` (UTF-8; a leading byte order mark must be removed by the caller).
    pub fn new(input: &'a [u8]) -> Parser<'a> {
        Parser::with_reading(input, false)
    }

    /// The same parser reading one character at a time and allocating as upstream libyaml
    /// does: the reference the patched libyaml is checked against.
    pub fn one_character_at_a_time(input: &'a [u8]) -> Parser<'a> {
        Parser::with_reading(input, true)
    }

    fn with_reading(input: &'a [u8], one_at_a_time: bool) -> Parser<'a> {
        let mut sys = Box::new(MaybeUninit::<unsafe_yaml::yaml_parser_t>::uninit());
        // SAFETY: `yaml_parser_initialize` fully initializes the struct it is given; the input
        // outlives the parser (`'a`), and the boxed parser never moves.
        unsafe {
            let parser = sys.as_mut_ptr();
            if unsafe_yaml::yaml_parser_initialize(parser).fail {
                panic!("libyaml could not allocate its parser");
            }
            unsafe_yaml::yaml_parser_set_encoding(parser, unsafe_yaml::YAML_UTF8_ENCODING);
            unsafe_yaml::yaml_parser_set_one_at_a_time(parser, one_at_a_time);
            unsafe_yaml::yaml_parser_set_input_string(parser, input.as_ptr(), input.len() as u64);
        }
        Parser {
            sys,
            event: MaybeUninit::uninit(),
            live: false,
            failed: false,
            input: PhantomData,
        }
    }

    fn release(&mut self) {
        if self.live {
            // SAFETY: `live` says `event` holds an event this parser produced and nobody
            // deleted. A scalar's value buffer may become the next scalar's (libyaml as the
            // build patches it, vendor/unsafe-libyaml/CUTOVER.md); no `Event` borrowed from this
            // one outlives this call, as `next_event`'s `&mut self` says.
            unsafe {
                unsafe_yaml::yaml_parser_recycle_event(
                    self.sys.as_mut_ptr(),
                    self.event.as_mut_ptr(),
                );
            }
            self.live = false;
        }
    }

    /// The next event with its start and end marks. After an error, every call returns it again.
    pub fn next_event(&mut self) -> Result<(Event<'_>, Mark, Mark), SyntaxError> {
        self.release();
        let parser = self.sys.as_mut_ptr();
        // SAFETY: the parser is initialized; a successful `yaml_parser_parse` initializes the
        // event, which stays alive (and its pointers valid) until `release`.
        unsafe {
            if self.failed || unsafe_yaml::yaml_parser_parse(parser, self.event.as_mut_ptr()).fail {
                self.failed = true;
                return Err(error_of(parser));
            }
            self.live = true;
            let e = &*self.event.as_ptr();
            Ok((
                convert(e),
                Mark::from_sys(e.start_mark),
                Mark::from_sys(e.end_mark),
            ))
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        self.release();
        // SAFETY: initialized in `new`, deleted once.
        unsafe { unsafe_yaml::yaml_parser_delete(self.sys.as_mut_ptr()) };
    }
}

/// Where two parsers first disagree: the number of the event, and what each gave there (an
/// event with its marks, or an error, shortened to 200 bytes). `None` when they agree as far
/// as the engine reads: to the end of the stream, the first error, or the first collection
/// nested deeper than [`MAX_DEPTH`], which the engine refuses (libyaml's scanner slows down
/// with the depth of flow collections). The two are stepped together: memory stays constant.
pub fn first_disagreement(mut a: Parser<'_>, mut b: Parser<'_>) -> Option<(usize, String, String)> {
    let mut depth = 0usize;
    for at in 0.. {
        let (x, y) = (a.next_event(), b.next_event());
        if x != y {
            let shown = |r: &Result<(Event<'_>, Mark, Mark), SyntaxError>| {
                let mut text = format!("{r:?}");
                text.truncate(text.floor_char_boundary(200));
                text
            };
            return Some((at, shown(&x), shown(&y)));
        }
        match x {
            Ok((Event::SequenceStart { .. } | Event::MappingStart { .. }, _, _)) => depth += 1,
            Ok((Event::SequenceEnd | Event::MappingEnd, _, _)) => depth -= 1,
            Ok((Event::StreamEnd, _, _)) | Err(_) => return None,
            Ok(_) => {}
        }
        if depth > MAX_DEPTH {
            return None;
        }
    }
    unreachable!("an event stream ends with its end or an error")
}

/// A NUL-terminated C string as bytes (empty for null).
unsafe fn c_bytes<'e>(ptr: *const u8) -> Option<&'e [u8]> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: libyaml's strings are NUL-terminated and live as long as their event.
    unsafe { Some(std::ffi::CStr::from_ptr(ptr.cast()).to_bytes()) }
}

unsafe fn convert<'e>(e: &'e unsafe_yaml::yaml_event_t) -> Event<'e> {
    // SAFETY: each arm reads the union member that belongs to the event type.
    unsafe {
        match e.type_ {
            unsafe_yaml::YAML_STREAM_START_EVENT => Event::StreamStart,
            unsafe_yaml::YAML_STREAM_END_EVENT => Event::StreamEnd,
            unsafe_yaml::YAML_DOCUMENT_START_EVENT => {
                let t = e.data.document_start.tag_directives;
                Event::DocumentStart {
                    tag_directives: t.start != t.end,
                }
            }
            unsafe_yaml::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
            unsafe_yaml::YAML_ALIAS_EVENT => Event::Alias {
                anchor: c_bytes(e.data.alias.anchor).unwrap_or_default(),
            },
            unsafe_yaml::YAML_SCALAR_EVENT => {
                let s = e.data.scalar;
                Event::Scalar {
                    anchor: c_bytes(s.anchor),
                    tag: c_bytes(s.tag),
                    value: if s.value.is_null() {
                        &[]
                    } else {
                        std::slice::from_raw_parts(s.value, s.length as usize)
                    },
                    style: match s.style {
                        unsafe_yaml::YAML_SINGLE_QUOTED_SCALAR_STYLE => ScalarStyle::SingleQuoted,
                        unsafe_yaml::YAML_DOUBLE_QUOTED_SCALAR_STYLE => ScalarStyle::DoubleQuoted,
                        unsafe_yaml::YAML_LITERAL_SCALAR_STYLE => ScalarStyle::Literal,
                        unsafe_yaml::YAML_FOLDED_SCALAR_STYLE => ScalarStyle::Folded,
                        _ => ScalarStyle::Plain,
                    },
                }
            }
            unsafe_yaml::YAML_SEQUENCE_START_EVENT => {
                let s = e.data.sequence_start;
                Event::SequenceStart {
                    anchor: c_bytes(s.anchor),
                    tag: c_bytes(s.tag),
                    flow: s.style == unsafe_yaml::YAML_FLOW_SEQUENCE_STYLE,
                }
            }
            unsafe_yaml::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
            unsafe_yaml::YAML_MAPPING_START_EVENT => {
                let m = e.data.mapping_start;
                Event::MappingStart {
                    anchor: c_bytes(m.anchor),
                    tag: c_bytes(m.tag),
                    flow: m.style == unsafe_yaml::YAML_FLOW_MAPPING_STYLE,
                }
            }
            // YAML_MAPPING_END_EVENT; libyaml produces no other type after a successful parse.
            _ => Event::MappingEnd,
        }
    }
}

/// libyaml's error, worded as serde_yaml words it (`problem at line L column C, context at …`).
unsafe fn error_of(parser: *const unsafe_yaml::yaml_parser_t) -> SyntaxError {
    // SAFETY: the parser is initialized; its message pointers are static C strings or null.
    unsafe {
        let p = &*parser;
        let text =
            |ptr: *const i8| c_bytes(ptr.cast()).map(|b| String::from_utf8_lossy(b).into_owned());
        let problem = text(p.problem).unwrap_or_else(|| "libyaml parser failed".into());
        let mark = Mark::from_sys(p.problem_mark);
        let context_mark = Mark::from_sys(p.context_mark);
        let at = |m: Mark| format!("line {} column {}", m.line + 1, m.column + 1);
        let mut message = problem;
        if mark.line != 0 || mark.column != 0 {
            message.push_str(&format!(" at {}", at(mark)));
        } else if p.problem_offset != 0 {
            message.push_str(&format!(" at position {}", p.problem_offset));
        }
        if let Some(context) = text(p.context) {
            message.push_str(&format!(", {context}"));
            if (context_mark.line != 0 || context_mark.column != 0) && context_mark != mark {
                message.push_str(&format!(" at {}", at(context_mark)));
            }
        }
        SyntaxError { message, mark }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(src: &str) -> Vec<(String, usize, usize)> {
        let mut p = Parser::new(src.as_bytes());
        let mut out = Vec::new();
        loop {
            let (e, start, end) = p.next_event().unwrap();
            let name = match e {
                Event::Scalar { value, .. } => String::from_utf8(value.to_vec()).unwrap(),
                Event::StreamEnd => break,
                other => format!("{other:?}"),
            };
            out.push((name, start.index, end.index));
        }
        out
    }

    /// `Mark::index` counts bytes, also after multi-byte characters.
    #[test]
    fn mark_index_counts_bytes() {
        let src = "é: ☕\nk: 'ü'\n";
        let m = marks(src);
        let ue = m.iter().find(|(n, _, _)| n == "ü").unwrap();
        assert_eq!(&src[ue.1..ue.2], "'ü'");
        let k = m.iter().find(|(n, _, _)| n == "k").unwrap();
        assert_eq!(&src[k.1..k.2], "k");
        let cup = m.iter().find(|(n, _, _)| n == "☕").unwrap();
        assert_eq!(&src[cup.1..cup.2], "☕");
    }

    #[test]
    fn errors_carry_position_and_context() {
        let mut p = Parser::new(b"a: [1\nb: 2\n");
        let err = loop {
            match p.next_event() {
                Ok((Event::StreamEnd, _, _)) => panic!("no error"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert!(err.message.contains("line"), "{}", err.message);
        // The error repeats instead of reading on.
        assert_eq!(p.next_event().unwrap_err(), err);
    }

    #[test]
    fn tag_directives_are_reported() {
        let declares = |src: &[u8]| {
            let mut p = Parser::new(src);
            p.next_event().unwrap();
            match p.next_event().unwrap().0 {
                Event::DocumentStart { tag_directives } => tag_directives,
                other => panic!("{other:?}"),
            }
        };
        assert!(declares(
            b"%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n"
        ));
        assert!(!declares(b"a: !!str 1\n"));
    }

    /// The scanner's working strings, kept from one scalar for the next, read as fresh ones: every
    /// pair of scalars that fill them (blank lines, runs of blanks longer and shorter than what
    /// is kept, line folding in quotes, block scalars' trailing lines), one after the other.
    #[test]
    fn reused_working_strings_read_as_fresh_ones() {
        let long = " ".repeat(100);
        let medium = " ".repeat(40);
        let scalars = [
            "x\n\n\n  y".to_string(),
            "p\n  q".to_string(),
            format!("a{long}b"),
            format!("a{medium}b\n  c{medium}d"),
            "\"a\n\n  b  \\\n  c\"".to_string(),
            "'s\n\n\n  t   u'".to_string(),
            "|+\n  a\n\n\n".to_string(),
            ">-\n  a\n  b\n\n  c\n".to_string(),
            format!("|\n  a{long}\n\n  b"),
            "\"q\"".to_string(),
            "v".to_string(),
        ];
        let mut cases = 0;
        for first in &scalars {
            for second in &scalars {
                for text in [
                    format!("k: {first}\nl: {second}\n"),
                    format!("- {first}\n- {second}\n"),
                    format!("[{first}, {second}]\n"),
                ] {
                    let fast = Parser::new(text.as_bytes());
                    let reference = Parser::one_character_at_a_time(text.as_bytes());
                    assert_eq!(first_disagreement(fast, reference), None, "{text:?}");
                    cases += usize::from(!fails(text.as_bytes()));
                }
            }
        }
        // Most pairs read to the end (the block scalars fail in a flow sequence).
        assert!(cases > 250, "{cases}");
    }

    /// A scalar's value buffer, handed back with its event, is the next scalar's and reads as a
    /// fresh one: scalars of every length around the size a value starts with (64 bytes, grown
    /// past 59), in each style, one after the other, the longer and the shorter first, in block
    /// and flow collections, against libyaml's one character at a time, which frees every buffer.
    #[test]
    fn recycled_value_buffers_read_as_fresh_ones() {
        let lengths = [0, 1, 7, 58, 59, 60, 63, 64, 65, 130];
        let styles: [fn(&str) -> String; 5] = [
            |s| format!("x{s}"),
            |s| format!("\"{s}\""),
            |s| format!("'{s}'"),
            |s| format!("|\n    {s}\n"),
            |s| format!(">-\n    a{s}\n    b\n"),
        ];
        let mut scalars = Vec::new();
        for n in lengths {
            for style in &styles {
                scalars.push(style(&"v".repeat(n)));
            }
        }
        let block: String = scalars.iter().map(|s| format!("- {s}\n")).collect();
        let keys: String = (scalars.iter().enumerate())
            .map(|(i, s)| format!("k{i}: {s}\n"))
            .collect();
        let reversed: String = scalars.iter().rev().map(|s| format!("- {s}\n")).collect();
        let flow = format!(
            "[{}]\n",
            scalars
                .iter()
                .filter(|s| !s.contains('\n'))
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
        for text in [block, keys, reversed, flow] {
            let fast = Parser::new(text.as_bytes());
            let reference = Parser::one_character_at_a_time(text.as_bytes());
            assert_eq!(first_disagreement(fast, reference), None, "{text:?}");
            assert!(!fails(text.as_bytes()), "{text:?}");
        }
    }

    /// Inputs built to reach every edge of the patched reader's runs: each of a set of pieces
    /// (multi-byte and forbidden characters, invalid UTF-8, flow indicators, `:`, comments,
    /// document markers, CRLF, tabs, runs of blanks and of indentation, blank lines, a scalar at
    /// the very end) placed so that
    /// it falls on each side of libyaml's 16 KiB read chunk and of its last unread characters,
    /// after a plain scalar and within a line of a literal and of a folded block scalar.
    fn boundary_inputs() -> Vec<Vec<u8>> {
        const CHUNK: usize = 16 * 1024;
        let pieces: [&[u8]; 35] = [
            b"abc",
            "\u{e9}t\u{e9}".as_bytes(),
            "\u{2615}x".as_bytes(),
            "\u{1f600}".as_bytes(),
            b"a\xc2\x85b",
            b"a\x01b",
            b"a\x7fb",
            b"a\x80b",
            b"a\xc3",
            b"a\xed\xa0\x80b",
            b"a:b",
            b"a: b",
            b"a #c",
            b"a#b",
            b"[a, b:c, {d: e}]",
            b"{a:b, c}",
            b"x\r\ny",
            b"x\ty",
            b"\n---\n",
            b"\n...\n",
            b"x\n  y",
            b"\xef\xbb\xbf",
            "  # \u{e9}t\u{e9}\n  z".as_bytes(),
            b"\n    #c\r\nz: 1",
            b"\n\t\tz: 1",
            b"\nz: [\t a,\t b ]",
            b"\nz: {a: 1,    b: 2}",
            b"\n- a\n-    b\n",
            b"  #c\rz: 1",
            b"                                        #c\nz: 1",
            b"\n            x",
            b"  # a comment: with # and : and\ttabs, long enough to cross\nz: 1",
            b"\n  \n        \n  x",
            b"\nz:  \tw",
            b"\n-  \tw",
        ];
        let mut inputs = Vec::new();
        for piece in pieces {
            for before in CHUNK - 8..CHUNK + 4 {
                // `k: ` and a plain scalar of `v`s up to `before` bytes, then the piece.
                let mut text = b"k: ".to_vec();
                text.resize(before.max(4), b'v');
                text.extend_from_slice(piece);
                inputs.push(text.clone());
                text.extend_from_slice(b"\n");
                inputs.push(text);
            }
            for short in 0..6 {
                let mut text = b"k: ".to_vec();
                text.resize(3 + short, b'v');
                text.extend_from_slice(piece);
                inputs.push(text);
            }
            // The same within a line of a literal and of a folded block scalar.
            for head in [&b"k: |\n  "[..], b"k: >-\n  "] {
                for before in (CHUNK - 8..CHUNK + 4).chain(head.len()..head.len() + 6) {
                    let mut text = head.to_vec();
                    text.resize(before.max(head.len()), b'v');
                    text.extend_from_slice(piece);
                    inputs.push(text.clone());
                    text.extend_from_slice(b"\n  w\n");
                    inputs.push(text);
                }
            }
        }
        inputs
    }

    fn fails(input: &[u8]) -> bool {
        let mut p = Parser::new(input);
        loop {
            match p.next_event() {
                Ok((Event::StreamEnd, _, _)) => return false,
                Ok(_) => {}
                Err(_) => return true,
            }
        }
    }

    /// The patched reader gives the same events, marks and errors as libyaml's own loop.
    #[test]
    fn copying_runs_of_ascii_reads_as_one_character_at_a_time() {
        let inputs = boundary_inputs();
        let mut errors = 0;
        for input in &inputs {
            let fast = Parser::new(input);
            let reference = Parser::one_character_at_a_time(input);
            assert_eq!(
                first_disagreement(fast, reference),
                None,
                "{} bytes",
                input.len()
            );
            errors += usize::from(fails(input));
        }
        // Both outcomes are covered: inputs that read to the end and inputs that fail.
        assert!(
            errors > 100 && errors < inputs.len() - 100,
            "{errors} of {}",
            inputs.len()
        );
    }
}

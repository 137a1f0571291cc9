//! Writing the output ResourceList: unchanged items copied from the input text, released items
//! patched as text ([`super::splice`]), the rest emitted ([`super::emit`]); streamed in chunks.

use serde_yaml::{Mapping, Value};

use super::emit;
use super::io::OUTPUT_API_VERSION;
use super::result::KrmResult;
use super::yaml::spelling::Spellings;

/// The input's spellings of an item written from its tree: those of input item `index`.
#[derive(Debug, Clone, Copy)]
pub struct Spelled<'a> {
    /// Where to look them up.
    pub spellings: Spellings<'a>,
    /// The input item the output item is, or replaces.
    pub index: usize,
}

/// Where an output item's text comes from when it is not emitted from its tree.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// The input text, copied as it is (unchanged items).
    Copy(&'a str),
    /// The input text with a text patch ([`super::splice`]) planned on it, for released items.
    /// Patched while writing, so no second copy of every patched item is held.
    Patch(&'a str, &'a super::splice::Planned),
}

/// Serializes an output ResourceList: the given items, the input's function config, the input's
/// results followed by the new ones. Written with [`super::emit`] (see there for why not
/// `serde_yaml::to_writer`). `verbatim`, when not empty, holds for each item the exact input
/// text to write instead (unchanged items with a proven span, see
/// [`super::io::ResourceList::item_spans`]).
pub fn write(
    items: &[Value],
    verbatim: &[Option<&str>],
    function_config: Option<&Value>,
    kept_results: &[Value],
    new_results: &[KrmResult],
) -> Result<Vec<u8>, serde_yaml::Error> {
    let sources: Vec<Option<Source>> = verbatim.iter().map(|v| v.map(Source::Copy)).collect();
    // Size the buffer once (pages never written are never touched, so over-reserving costs no
    // memory; growing a 100 MB buffer by doubling costs copies and page faults).
    let copied: usize = verbatim.iter().flatten().map(|text| text.len() + 1).sum();
    let emitted = items
        .len()
        .saturating_sub(verbatim.iter().flatten().count());
    let results = kept_results.len() + new_results.len();
    let mut out = Vec::with_capacity(copied + emitted * 1536 + results * 640 + 4096);
    match write_to(
        &mut out,
        items,
        &sources,
        &[],
        function_config,
        kept_results,
        new_results,
    ) {
        Ok(()) => Ok(out),
        Err(WriteError::Serialize(e)) => Err(e),
        Err(WriteError::Io(e)) => Err(<serde_yaml::Error as serde::ser::Error>::custom(e)),
    }
}

/// Why [`write_to`] failed.
#[derive(Debug)]
pub enum WriteError {
    /// Something could not be serialized; nothing was written.
    Serialize(serde_yaml::Error),
    /// The sink failed.
    Io(std::io::Error),
}

/// How much output is built before it goes to the sink.
const CHUNK: usize = 1 << 16;

/// Writes the output ResourceList (see [`write()`]) to `sink` in chunks, so a large output is never
/// held whole next to the input (for 10k Services that was a fifth of the peak memory). All
/// serialization that can fail is done before the first byte goes out; after that only the sink
/// itself can fail. An item written from its tree writes its unchanged scalars as the input
/// spelled them (`spelled`, by output item; may be empty).
pub fn write_to(
    sink: &mut dyn std::io::Write,
    items: &[Value],
    sources: &[Option<Source>],
    spelled: &[Option<Spelled>],
    function_config: Option<&Value>,
    kept_results: &[Value],
    new_results: &[KrmResult],
) -> Result<(), WriteError> {
    // Results and the function config first, into the tail (small; the only fallible part).
    let mut tail = String::new();
    if let Some(fc) = function_config {
        let mut m = Mapping::new();
        m.insert("functionConfig".into(), fc.clone());
        emit::emit_document(&mut tail, &Value::Mapping(m));
    }
    // `results:` then one entry per result at column 0: the same text as emitting the mapping
    // `{results: [...]}`, without first building (and cloning into) one Value for all of them.
    if !kept_results.is_empty() || !new_results.is_empty() {
        tail.push_str("results:\n");
        for r in kept_results {
            emit::emit_entry(&mut tail, r, 0);
        }
        for r in new_results {
            let value = serde_yaml::to_value(r).map_err(WriteError::Serialize)?;
            emit::emit_entry(&mut tail, &value, 0);
        }
    }
    let mut out = String::with_capacity(CHUNK + 4096);
    let flush = |out: &mut String, sink: &mut dyn std::io::Write, at_least: usize| {
        if out.len() >= at_least {
            sink.write_all(out.as_bytes()).map_err(WriteError::Io)?;
            out.clear();
        }
        Ok(())
    };
    out.push_str("apiVersion: ");
    out.push_str(OUTPUT_API_VERSION);
    out.push_str("\nkind: ResourceList\n");
    if items.is_empty() {
        out.push_str("items: []\n");
    } else {
        out.push_str("items:\n");
        for (i, item) in items.iter().enumerate() {
            match sources.get(i).copied().flatten() {
                Some(Source::Copy(text)) => {
                    out.push_str(text);
                    if !text.ends_with('\n') {
                        out.push('\n');
                    }
                }
                Some(Source::Patch(text, planned)) => planned.write_into(&mut out, text),
                None => match spelled.get(i).copied().flatten() {
                    Some(s) => emit::emit_item(&mut out, item, &s.spellings, s.index),
                    None => emit::emit_entry(&mut out, item, 0),
                },
            }
            flush(&mut out, sink, CHUNK)?;
        }
    }
    out.push_str(&tail);
    flush(&mut out, sink, 0)
}

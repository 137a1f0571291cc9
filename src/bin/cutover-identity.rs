//! `cutover-identity`: the floor for cutover's design. Reads a ResourceList on stdin and writes it
//! back with the very same parser and writer the function uses (`cutover::krm::io::parse_text`,
//! i.e. one pass of libyaml's parser building a `serde_yaml::Value` for every item, and
//! `cutover::krm::io::write_to`,
//! which copies unchanged items verbatim from the input text when the layout allows, emits the
//! rest, and streams to stdout), doing nothing in between: what `cutover` does for a run that
//! changes no item and keeps every item's tree. Benchmarks compare
//! `cutover` against it (see `docs/benchmarks.md`).
//!
//! `cutover-identity --emit-all` writes every item with the emitter instead of copying its text:
//! the floor for a run that rewrites every item (as the announcer does with every Service).
//!
//! `cutover-identity --events` is the physical floor of any correct reader: libyaml's event
//! parser over the whole input (which every reader that reads YAML as go-yaml does must run),
//! then the input bytes copied to stdout, nothing built. What an item no mode reads costs at
//! least.

use std::io::{Read, Write};
use std::process::ExitCode;

use cutover::krm::io;
use cutover::krm::yaml::events::{Event, Parser};

fn main() -> ExitCode {
    let (emit_all, events_only) = match std::env::args().nth(1).as_deref() {
        None => (false, false),
        Some("--emit-all") => (true, false),
        Some("--events") => (false, true),
        Some(other) => {
            eprintln!(
                "cutover-identity: unexpected argument {other:?} (only --emit-all or --events)"
            );
            return ExitCode::from(2);
        }
    };
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("cutover-identity: cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    if events_only {
        return events_and_copy(&input);
    }
    // Every item written from its tree: its spellings noted while reading.
    let parse = if emit_all {
        io::parse_text_noted
    } else {
        io::parse_text
    };
    let parsed = io::text(&input).and_then(|text| Ok((text, parse(text)?)));
    let (text, list) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("cutover-identity: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Every item is unchanged: copy each from its input text, as the function does.
    let sources: Vec<Option<io::Source>> = list
        .item_spans
        .iter()
        .filter(|_| !emit_all)
        .map(|span| {
            span.clone()
                .and_then(|s| text.get(s.start as usize..s.end as usize))
                .map(io::Source::Copy)
        })
        .collect();
    // Items written from their trees spell their scalars as the input did, as the function does.
    let emitted: Vec<usize> = (0..list.items.len())
        .filter(|&index| !sources.get(index).is_some_and(Option::is_some))
        .collect();
    let item_spellings =
        io::ItemSpellings::new(text, &list, emitted.iter().copied(), Default::default());
    let spelled: Vec<Option<io::Spelled>> = (0..list.items.len())
        .map(|index| {
            let copied = sources.get(index).is_some_and(Option::is_some);
            (!copied).then(|| io::Spelled {
                spellings: item_spellings.get(text, &list, index),
                index,
            })
        })
        .collect();
    // Streamed to stdout as the function streams its output.
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let written = io::write_to(
        &mut stdout,
        &list.items,
        &sources,
        &spelled,
        list.function_config.as_ref(),
        &list.results,
        &[],
    );
    // Free the parsed tree the way the function does (off the critical path).
    drop(sources);
    cutover::function::free_in_background(list);
    match written
        .map_err(|e| format!("{e:?}"))
        .and_then(|()| stdout.flush().map_err(|e| e.to_string()))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cutover-identity: cannot write output: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The floor: every libyaml event of the input, then the input copied to stdout.
fn events_and_copy(input: &[u8]) -> ExitCode {
    let text = match io::text(input) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("cutover-identity: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut parser = Parser::new(text.as_bytes());
    let mut events = 0u64;
    loop {
        match parser.next_event() {
            Ok((Event::StreamEnd, _, _)) => break,
            Ok(_) => events += 1,
            Err(e) => {
                eprintln!("cutover-identity: {}", e.message);
                return ExitCode::FAILURE;
            }
        }
    }
    std::hint::black_box(events);
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cutover-identity: cannot write output: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `cutover-identity`: the floor for cutover's design. Reads a ResourceList on stdin and writes it
//! back with the very same parser and emitter the function uses (`cutover::krm::io::parse`, i.e.
//! serde_yaml into `serde_yaml::Value`, and `cutover::krm::io::write`, which copies unchanged
//! items verbatim from the input text when the layout allows and emits the rest), doing nothing
//! in between: exactly what `cutover` does for a run that changes no item. Benchmarks compare
//! `cutover` against it (see `docs/benchmarks.md`).
//!
//! `cutover-identity --emit-all` writes every item with the emitter instead of copying its text:
//! the floor for a run that rewrites every item (as the announcer does with every Service).

use std::io::{Read, Write};
use std::process::ExitCode;

use cutover::krm::io;

fn main() -> ExitCode {
    let emit_all = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--emit-all") => true,
        Some(other) => {
            eprintln!("cutover-identity: unexpected argument {other:?} (only --emit-all)");
            return ExitCode::from(2);
        }
    };
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("cutover-identity: cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    let parsed = io::text(&input).and_then(|text| Ok((text, io::parse_text(text)?)));
    let (text, list) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("cutover-identity: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Every item is unchanged: copy each from its input text, as the function does.
    let verbatim: Vec<Option<&str>> = list
        .item_spans
        .iter()
        .flatten()
        .filter(|_| !emit_all)
        .map(|span| text.get(span.clone()))
        .collect();
    let output = match io::write(
        &list.items,
        &verbatim,
        list.function_config.as_ref(),
        &list.results,
        &[],
    ) {
        Ok(output) => output,
        Err(e) => {
            eprintln!("cutover-identity: cannot serialize output: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Free the parsed tree the way the function does (off the critical path).
    drop(verbatim);
    cutover::function::free_in_background(list);
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&output).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cutover-identity: cannot write stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `cutover-identity`: the floor for cutover's design. Reads a ResourceList on stdin and writes it
//! back with the very same parser and emitter the function uses (`cutover::krm::io::parse` and
//! `cutover::krm::io::write`, i.e. serde_yaml into `serde_yaml::Value` and back), doing nothing
//! in between. Benchmarks compare `cutover` against it (see `docs/benchmarks.md`).

use std::io::{Read, Write};
use std::process::ExitCode;

use cutover::krm::io;

fn main() -> ExitCode {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("cutover-identity: cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    let list = match io::parse(&input) {
        Ok(list) => list,
        Err(e) => {
            eprintln!("cutover-identity: {e}");
            return ExitCode::FAILURE;
        }
    };
    let output = match io::write(
        &list.items,
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
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&output).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cutover-identity: cannot write stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

//! Command-line parsing (by hand: three options do not justify an argument-parser dependency).

use crate::run::Limits;

/// The help text, also printed after a usage error.
pub const USAGE: &str = "\
cutover-wasm — runs the cutover WASI module in a wasmtime sandbox as a KRM exec function

USAGE:
    cutover-wasm [--module PATH] [--max-memory MiB] [--timeout SECS]
    cutover-wasm --help | --version

OPTIONS:
    --module PATH      the wasm32-wasip1 module to run; default: cutover.wasm next to this
                       executable, then ../wasm32-wasip1/release/cutover.wasm relative to it
    --max-memory MiB   linear-memory limit of the module (default 512)
    --timeout SECS     wall-clock limit of the run, fractions allowed (default 60)

The module reads the ResourceList on stdin; its stdout is written only when it finishes, and its
exit status becomes ours. It sees no files, no environment variables, no network and no
arguments beyond argv[0]. A module that exceeds a limit or traps is stopped: exit 1, a message on
stderr, nothing on stdout.

Compiled code is cached in $CUTOVER_WASM_CACHE_DIR, else $XDG_CACHE_HOME/cutover-wasm, else
~/.cache/cutover-wasm (CUTOVER_WASM_CACHE_DIR=off disables the cache). An unwritable cache only
makes runs slower.
";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Run a module.
    Run(Options),
    /// Print [`USAGE`].
    Help,
    /// Print the version.
    Version,
}

/// Options of a run.
#[derive(Debug, PartialEq)]
pub struct Options {
    /// `--module`, when given.
    pub module: Option<String>,
    /// Memory and time limits.
    pub limits: Limits,
}

/// Parses the arguments after argv[0]; `Err` holds a message for the user.
pub fn parse(args: &[String]) -> Result<Command, String> {
    let mut options = Options {
        module: None,
        limits: Limits::default(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name {
            "--help" | "-h" => return Ok(Command::Help),
            "--version" | "-V" => return Ok(Command::Version),
            "--module" => options.module = Some(value()?),
            "--max-memory" => {
                let v = value()?;
                let mib: u64 = v
                    .parse()
                    .ok()
                    .filter(|&m| m > 0 && m <= 4096)
                    .ok_or_else(|| {
                        format!("--max-memory {v:?}: expected MiB between 1 and 4096")
                    })?;
                options.limits.max_memory_mib = mib;
            }
            "--timeout" => {
                let v = value()?;
                let secs: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
                    .ok_or_else(|| {
                        format!("--timeout {v:?}: expected seconds between 0 and 86400")
                    })?;
                options.limits.timeout_secs = secs;
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    Ok(Command::Run(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_are_512_mib_and_60_s() {
        let Ok(Command::Run(o)) = parse(&[]) else {
            panic!()
        };
        assert_eq!(o.module, None);
        assert_eq!(o.limits.max_memory_mib, 512);
        assert_eq!(o.limits.timeout_secs, 60.0);
    }

    #[test]
    fn options_take_separate_or_inline_values() {
        let Ok(Command::Run(o)) = parse(&args(&[
            "--module",
            "m.wasm",
            "--max-memory=64",
            "--timeout",
            "0.5",
        ])) else {
            panic!()
        };
        assert_eq!(o.module.as_deref(), Some("m.wasm"));
        assert_eq!(o.limits.max_memory_mib, 64);
        assert_eq!(o.limits.timeout_secs, 0.5);
    }

    #[test]
    fn bad_values_and_unknown_arguments_are_errors() {
        assert!(parse(&args(&["--timeout", "soon"])).is_err());
        assert!(parse(&args(&["--max-memory", "0"])).is_err());
        assert!(parse(&args(&["--module"])).is_err());
        assert!(parse(&args(&["extra"])).is_err());
        assert_eq!(parse(&args(&["--help"])), Ok(Command::Help));
    }
}

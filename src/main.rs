//! `cutover`: the KRM function binary (native exec and WASI module).
//!
//! With no arguments it reads a ResourceList on stdin and writes one to stdout.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::Context;

use cutover::config::{API_VERSION, Kind, schema};

/// `cutover --help`. The kinds are listed from [`Kind::ALL`], so a new mode shows up by itself.
fn usage() -> String {
    format!(
        "\
cutover — KRM function for outage-free load-balancer cutovers

USAGE:
    cutover                 run as a KRM function: ResourceList on stdin, ResourceList on stdout
    cutover schema [KIND]   print the JSON schema of the function config (all kinds, or one)
    cutover observe [NAME]  wrap `kubectl get … -o yaml` (stdin) into an ObservedState item
                            for the load-balancer announcer (stdout; NAME defaults to `live`)
    cutover verify GATE --plan FILE
                            check a phase of the MetalLB → Cilium L2 cutover on the live
                            objects (`kubectl get … -o yaml` on stdin; see cutover verify --help)
    cutover install-self FILE
                            copy this executable to FILE (mode 0755): how a gate Job's init
                            container brings cutover into a kubectl image (the cutover image
                            has no shell and no cp)
    cutover help [COMMAND]  print this help, or the help of a command (also: COMMAND --help)
    cutover --version       print the version

Function config: apiVersion {API_VERSION}, kind {kinds}, or kpt's
`-- mode={modes} key=value ...` (a ConfigMap).
Exit code: 0 without error results, 1 with. Diagnostics go to stderr.
",
        kinds = kind_names(" | "),
        modes = Kind::ALL.map(Kind::mode).join("|"),
    )
}

/// `cutover schema --help`.
fn schema_usage() -> String {
    format!(
        "\
cutover schema — print the JSON schema (OpenAPI v3, as in function.yaml) of the function config

USAGE:
    cutover schema          every kind (oneOf)
    cutover schema KIND     one kind, as its function.yaml document carries it: {kinds}
                            (or its mode name: {modes})
",
        kinds = kind_names(", "),
        modes = Kind::ALL.map(Kind::mode).join(", "),
    )
}

fn kind_names(separator: &str) -> String {
    Kind::ALL.map(Kind::name).join(separator)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] => run_function(),
        ["--help" | "-h" | "help"] => print(&usage()),
        ["--version" | "-V"] => print(&format!("cutover {}\n", env!("CARGO_PKG_VERSION"))),
        ["help", "schema"] | ["schema", .., "--help" | "-h"] => print(&schema_usage()),
        ["schema"] => print_json(&schema::function_config_schema()),
        ["schema", kind] => match Kind::from_name(kind) {
            Some(kind) => print_json(&schema::kind_schema(kind)),
            None => usage_error(
                &format!(
                    "unknown kind {kind:?}: expected one of {}",
                    kind_names(", ")
                ),
                &schema_usage(),
            ),
        },
        ["help", "verify"] | ["verify", .., "--help" | "-h"] => print(cutover::verify::USAGE),
        ["verify", rest @ ..] => verify(rest),
        ["install-self", target] if !target.starts_with('-') => install_self(target),
        ["observe"] => observe("live"),
        ["observe", name] if !name.starts_with('-') => observe(name),
        ["schema", ..] => usage_error(&format!("unexpected arguments {args:?}"), &schema_usage()),
        _ => usage_error(&format!("unexpected arguments {args:?}"), &usage()),
    }
}

/// `cutover install-self FILE`: copies the running executable (`/proc/self/exe` on Linux) to
/// FILE, executable by everyone, for the gate Jobs of the orchestrated announcer.
fn install_self(target: &str) -> ExitCode {
    let copied = std::env::current_exe().and_then(|exe| {
        std::fs::copy(&exe, target)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755))?;
        }
        Ok(())
    });
    match copied {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cutover install-self: cannot copy to {target}: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_function() -> ExitCode {
    match run_io() {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("cutover: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The only I/O of a function run: all of stdin in, then the output ResourceList streamed to
/// stdout once everything about it is decided (never partial YAML: see
/// [`cutover::function::process_to`]).
fn run_io() -> anyhow::Result<i32> {
    let input = read_stdin().context("cannot read stdin")?;
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let report = cutover::function::process_to(&input, &mut stdout)
        .and_then(|report| stdout.flush().map(|()| report))
        .context("cannot write stdout")?;
    eprint!("{}", report.stderr);
    Ok(report.exit_code)
}

/// All of stdin. Natively, `read_to_end`'s doubling costs no copies: glibc's `realloc` moves a
/// large buffer's pages with `mremap`.
#[cfg(not(target_os = "wasi"))]
fn read_stdin() -> std::io::Result<Vec<u8>> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    Ok(input)
}

/// All of stdin, in a WASI module. Its allocator (wasi-libc's dlmalloc) has no `mremap`: every
/// doubling of one buffer copied it into fresh pages of a linear memory that never shrinks.
/// Reading 1 MiB chunks and joining them once copies the input once, and the chunks' pages are
/// reused afterwards. On a 36 MiB input this took 18 000 page faults and 40 MiB of peak memory
/// off the run (docs/wasm.md). An input under 1 MiB is one chunk, not copied.
#[cfg(target_os = "wasi")]
fn read_stdin() -> std::io::Result<Vec<u8>> {
    const CHUNK: u64 = 1 << 20;
    let mut stdin = std::io::stdin().lock();
    let mut chunks = Vec::new();
    loop {
        let mut chunk = Vec::with_capacity(CHUNK as usize);
        // Fewer bytes than the limit only at the end of stdin.
        let read = (&mut stdin).take(CHUNK).read_to_end(&mut chunk)?;
        chunks.push(chunk);
        if (read as u64) < CHUNK {
            break;
        }
    }
    Ok(match chunks.as_mut_slice() {
        [only] => std::mem::take(only),
        _ => chunks.concat(),
    })
}

fn print(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// `cutover observe`: reads kubectl's List on stdin, prints the ObservedState item.
fn observe(name: &str) -> ExitCode {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("cutover observe: cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    let list: serde_yaml::Value = match cutover::krm::yaml::from_str(&input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("cutover observe: stdin is not YAML or JSON: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cutover::modes::announcer::observed::wrap(&list, name) {
        Ok(item) => match serde_yaml::to_string(&item) {
            Ok(text) => print(&text),
            Err(e) => {
                eprintln!("cutover observe: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("cutover observe: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `cutover verify`: reads the plan file and kubectl's List on stdin, prints the findings.
fn verify(args: &[&str]) -> ExitCode {
    let args = match cutover::verify::Args::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cutover verify: {e}\n\n{}", cutover::verify::USAGE);
            return ExitCode::from(2);
        }
    };
    let plan = match std::fs::read_to_string(&args.plan) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("cutover verify: cannot read --plan {}: {e}", args.plan);
            return ExitCode::from(2);
        }
    };
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("cutover verify: cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    let now = match args.now {
        Some(t) => t,
        None => match std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())
            .and_then(|d| {
                let secs = i64::try_from(d.as_secs()).map_err(|e| e.to_string())?;
                k8s_openapi::jiff::Timestamp::new(secs, 0).map_err(|e| e.to_string())
            }) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("cutover verify: the clock is out of range: {e}; pass --now");
                return ExitCode::FAILURE;
            }
        },
    };
    let report = cutover::verify::run(&args, &plan, &input, now);
    for line in &report.errors {
        eprintln!("{line}");
    }
    let mut text = report.lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    match print(&text) {
        code if code == ExitCode::SUCCESS => ExitCode::from(report.exit_code),
        code => code,
    }
}

fn print_json(value: &serde_json::Value) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(text) => print(&(text + "\n")),
        Err(e) => {
            eprintln!("cutover: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(message: &str, usage: &str) -> ExitCode {
    eprintln!("cutover: {message}\n\n{usage}");
    ExitCode::from(2)
}

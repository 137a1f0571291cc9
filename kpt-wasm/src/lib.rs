//! cutover for kpt's own WebAssembly runtime: `kpt fn eval --allow-alpha-wasm --exec
//! cutover-kpt.wasm` (and `kpt fn render --allow-alpha-wasm`). Only a shim lives here; the function
//! is [`cutover::process`], the entry point the native binary and the WASI module run.
//!
//! # The ABI kpt expects
//!
//! kpt (v1.0.0-beta.56, `internal/fnruntime/`) runs only modules built for Go's `GOOS=js
//! GOARCH=wasm`: with `KPT_FN_WASM_RUNTIME=nodejs` it writes Go's `wasm_exec.js` plus a short glue
//! script (`jsglue.go`) and runs them with `node` (`nodejs.go`); a cgo build of kpt can run the
//! same modules in wasmtime through `github.com/prep/wasmexec` instead (`wasmtime.go`). The glue:
//!
//! 1. instantiates the module with the imports of module `go` and calls the export
//!    `run(argc, argv)` (argv written at bytes 4096–12288 of memory, which Rust's
//!    stack-first layout leaves to the bottom of the 1 MiB stack, unused at that point);
//! 2. calls the global JS function `processResourceList(input)` with the whole ResourceList as a
//!    string, and prints the returned string if it contains `kind: ResourceList`; otherwise it
//!    prints what `processResourceListErrors(input)` returns.
//!
//! So `run` registers those two globals and returns (it must not call `runtime.wasmExit`: the
//! glue refuses to resume a module that exited). The globals are function wrappers made by the
//! glue's `Go._makeFuncWrapper(id)`; calling one stores `{id, this, args}` in
//! `Go._pendingEvent` and calls the export `resume`, which handles the event and stores
//! `event.result` — the same protocol as Go's `js.FuncOf`. The exports are `run`, `resume`,
//! `getsp` (the argument frame of the imports, see [`js`]) and the memory as `mem` (named by
//! `build.rs`).
//!
//! # What the module does beyond the function
//!
//! - Diagnostics (what the native binary prints on stderr) go to file descriptor 2 through
//!   `runtime.wasmWrite`, which node writes with `fs.writeSync`.
//! - A run with error results returns the ResourceList with its results and sets
//!   `process.exitCode` to 1, so kpt reports `[FAIL]` and exits 1 as with the exec binary (the
//!   glue itself always exits 0). Input that is not a ResourceList gives no ResourceList: the glue
//!   then prints `processResourceListErrors`, the diagnostics of that run.
//! - wasm32-unknown-unknown aborts on panic: a panic hook first writes
//!   `cutover: internal error (panic): …` to stderr and sets the exit code; the abort then traps,
//!   node reports the uncaught `RuntimeError` and exits non-zero, and kpt fails the step.

#[cfg(target_arch = "wasm32")]
mod js;

#[cfg(target_arch = "wasm32")]
mod exports {
    use std::cell::RefCell;

    use crate::js::{self, Ref};

    /// Ids of the two function wrappers (`Go._makeFuncWrapper(id)`); Go starts at 1 as well.
    const PROCESS_RESOURCE_LIST: u64 = 1;
    const PROCESS_RESOURCE_LIST_ERRORS: u64 = 2;

    thread_local! {
        /// The diagnostics of the last `processResourceList` call, for
        /// `processResourceListErrors` (the catalog's Go functions keep their last output the
        /// same way).
        static LAST_STDERR: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    /// Go's entry point: registers the two global functions and returns (see the crate doc).
    #[unsafe(no_mangle)]
    pub extern "C" fn run(_argc: i32, _argv: i32) {
        std::panic::set_hook(Box::new(|info| {
            let message = info.payload_as_str().unwrap_or("(no message)").to_owned();
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            js::write(
                2,
                format!("cutover: internal error (panic): {message}{at}\n").as_bytes(),
            );
            set_exit_code(1);
        }));
        for (name, id) in [
            ("processResourceList", PROCESS_RESOURCE_LIST),
            ("processResourceListErrors", PROCESS_RESOURCE_LIST_ERRORS),
        ] {
            let wrapper = js::call_method(Ref::GO, "_makeFuncWrapper", &[Ref::number(id as f64)])
                .unwrap_or_else(|_| panic!("the host cannot make the function {name}"));
            js::set(Ref::GLOBAL, name, wrapper.get());
        }
    }

    /// Runs the pending call of one of the registered functions (Go's `handleEvent`).
    #[unsafe(no_mangle)]
    pub extern "C" fn resume() {
        let event = js::get(Ref::GO, "_pendingEvent");
        js::set(Ref::GO, "_pendingEvent", Ref::NULL);
        let id = js::get(event.get(), "id").get().as_number();
        let args = js::get(event.get(), "args");
        let input = js::utf8(js::index(args.get(), 0).get());
        drop(args);
        let output = match id {
            Some(n) if n == PROCESS_RESOURCE_LIST as f64 => process_resource_list(&input),
            Some(n) if n == PROCESS_RESOURCE_LIST_ERRORS as f64 => {
                process_resource_list_errors(&input)
            }
            _ => panic!(
                "call of an unknown function id {}",
                id.map_or_else(|| "(not a number)".to_owned(), |n| n.to_string())
            ),
        };
        drop(input);
        let result = js::string(&output);
        drop(output);
        js::set(event.get(), "result", result.get());
    }

    /// The frame the imports read their arguments from (Go's stack pointer).
    #[unsafe(no_mangle)]
    pub extern "C" fn getsp() -> i32 {
        js::sp() as i32
    }

    /// The function on one ResourceList: its output ResourceList (empty when the input was not
    /// one), diagnostics on stderr, the exit code in `process.exitCode`.
    fn process_resource_list(input: &[u8]) -> Vec<u8> {
        let output = cutover::process(input);
        js::write(2, output.stderr.as_bytes());
        if output.exit_code != 0 {
            set_exit_code(output.exit_code);
        }
        LAST_STDERR.with_borrow_mut(|last| *last = Some(output.stderr));
        output.stdout
    }

    /// The diagnostics of the last run (of a run on `input` when there was none yet).
    fn process_resource_list_errors(input: &[u8]) -> Vec<u8> {
        match LAST_STDERR.with_borrow_mut(Option::take) {
            Some(stderr) => stderr.into_bytes(),
            None => {
                let output = cutover::process(input);
                if output.exit_code != 0 {
                    set_exit_code(output.exit_code);
                }
                output.stderr.into_bytes()
            }
        }
    }

    /// `process.exitCode = code` where there is a `process` object (node; prep/wasmexec has one
    /// whose properties nobody reads).
    fn set_exit_code(code: i32) {
        let process = js::get(Ref::GLOBAL, "process");
        if process.get().is_object() {
            js::set(process.get(), "exitCode", Ref::number(f64::from(code)));
        }
    }
}

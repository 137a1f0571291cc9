//! kpt's JavaScript glue (Go's `wasm_exec.js`) reads the module's memory from the export `mem`;
//! Rust's linker names it `memory`. Given here, as a link argument of this cdylib only, rather
//! than in `.cargo/config.toml` rustflags: a `RUSTFLAGS` variable would silently replace those,
//! and the module would then fail in kpt with no error until it runs.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo::rustc-cdylib-link-arg=--export-memory=mem");
    }
}

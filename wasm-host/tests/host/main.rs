//! Integration tests of `cutover-wasm`, in one test binary: each binary links wasmtime, and
//! with the release profile's LTO that link is the slow part of the build.

mod cli_and_cache;
mod common;
mod docs;
mod kpt;
mod parity;
mod sandbox;

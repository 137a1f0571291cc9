//! The KRM engine: reading and writing `ResourceList`s, results, item identity and annotations.
//!
//! Nothing in here knows about a mode. A mode sees each item as it is parsed ([`io::Observer`]:
//! it may keep a few facts and let the engine drop the item's tree), then receives the items
//! read-only and returns an [`Outcome`] (edits plus results); the engine applies the edits only
//! when no error result was produced, so a failing run always writes its items out exactly as
//! they came in. Items whose tree was dropped are copied or patched from their input text
//! ([`splice`]) when written ([`mod@write`]).

pub mod annotations;
pub mod apply;
pub mod emit;
pub mod io;
pub mod names;
pub mod object;
pub mod outcome;
mod read;
pub mod result;
pub mod splice;
pub mod write;
pub mod yaml;

pub use io::{InputError, ResourceList};
pub use object::{KrmObject, ObjectRef};
pub use outcome::{Edit, Outcome, PatchOp};
pub use result::{FieldRef, FileRef, KrmResult, ResourceRef, SHOWN_MESSAGE_BYTES, Severity};

/// What a mode built and no longer needs once it has planned, kept until the run's output is
/// written and then freed with the run's trees ([`free_after_run`]): freeing a large tree (the
/// sylva values document's) node by node in the middle of the run is work the run waits for.
pub type Garbage = Vec<Box<dyn std::any::Any + Send>>;

/// Frees what a finished run built, once its output is written. Natively that is
/// [`free_in_background`]. A WASI module has no threads, and its instance ends with the run: the
/// module's `main` makes one call and returns, and the host then drops the whole linear memory
/// at once. Freeing the trees node by node there took 1–3 % of the module's CPU on the
/// benchmark presets (docs/wasm.md), so it leaves them to the instance's end. Nothing is
/// allocated after this but the few bytes of stderr, so the peak memory is the same.
pub fn free_after_run<T: Send + 'static>(garbage: T) {
    #[cfg(target_os = "wasi")]
    std::mem::forget(garbage);
    #[cfg(not(target_os = "wasi"))]
    free_in_background(garbage);
}

/// Frees `garbage` on a short-lived thread. A run builds millions of small allocations (every
/// YAML node of every item kept); freeing them one by one took about a
/// fifth of a 10k-Service run, all of it after the output was ready. The binary exits as soon as
/// stdout is written, so the thread's work is mostly never waited for. Where threads are not
/// available (WASI) the value is dropped right here, as before.
pub fn free_in_background<T: Send + 'static>(garbage: T) {
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(garbage)));
    let theirs = std::sync::Arc::clone(&slot);
    let spawned = std::thread::Builder::new()
        .name("cutover-free".into())
        .spawn(move || drop(theirs.lock().ok().and_then(|mut g| g.take())));
    if spawned.is_err() {
        drop(slot.lock().ok().and_then(|mut g| g.take()));
    }
}

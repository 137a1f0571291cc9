//! Known failures: what the default runs of the fuzz suites leave out so CI stays green, and the
//! regression inputs the replays expect to fail. Every list is empty: every class the suites
//! have found is fixed and replayed (`tests/fuzz-regressions/`). A new class found by a long run
//! is fixed at its root with its minimised input as a regression; listing it here is only for
//! the time the fix takes (a fixed entry makes its replay fail with "remove it from known.rs").

use super::check::Finding;
use super::mutate::Mutation;
use super::style::Feature;

/// Style families the engine does not read correctly yet (found by `tests/fuzz_styles.rs`).
pub const STYLES: &[Feature] = &[];

/// Mutation families that still break the contract (found by `tests/fuzz_mutation.rs`).
pub const MUTATIONS: &[Mutation] = &[];

/// Regression inputs (paths under `tests/fuzz-regressions/`) that still fail: the replays
/// expect them to.
pub const REGRESSIONS: &[&str] = &[];

/// Judges one replayed regression input (`file`, a path under `tests/fuzz-regressions/`): a
/// problem to report, or `None` when it behaves as [`REGRESSIONS`] says (fails exactly when
/// listed).
pub fn unexpected(file: &str, verdict: Result<(), Finding>) -> Option<String> {
    match (verdict, REGRESSIONS.contains(&file)) {
        (Ok(()), false) | (Err(_), true) => None,
        (Err(f), false) => Some(format!(
            "{file}: {:?}: {}",
            f.failure,
            super::truncate(&f.detail, 500)
        )),
        (Ok(()), true) => Some(format!(
            "{file} passes now: remove it from REGRESSIONS in tests/fuzz/known.rs"
        )),
    }
}

//! The engine's known failures: what the default runs of the fuzz suites leave out so CI stays
//! green, and what the ignored tests (`styles_known_engine_failures`,
//! `mutations_known_engine_failures`) and the regression replays expect to fail. Remove each
//! entry as the engine learns to handle it; every list must end empty.

use super::check::Finding;
use super::mutate::Mutation;
use super::style::Feature;

/// Style families the engine does not read correctly yet (found by `tests/fuzz_styles.rs`).
pub const STYLES: &[Feature] = &[
    // An alias in a verbatim-copied item to an anchor in an item the mode re-emits or removes
    // (anchor names starting with `-`, an alias after a tab): undefined alias in the output.
    Feature::CrossItemAliases,
    // Merge keys are ignored: a Cilium version, a MetalLB annotation behind `<<` is not seen.
    Feature::MergeKeys,
    // A quoted scalar's continuation line or closing quote at column 0 (kpt's own shape):
    // the verbatim copy is cut, invalid output.
    Feature::ColumnZero,
    // A byte order mark is rejected.
    Feature::Bom,
    // A ResourceList written as a flow mapping is read as JSON and rejected.
    Feature::FlowDocument,
    // Keys over 1024 characters are emitted as implicit keys, which no YAML reader accepts.
    Feature::LongKeys,
];

/// Mutation families that still break the contract (found by `tests/fuzz_mutation.rs`).
pub const MUTATIONS: &[Mutation] = &[
    // Alias expansion is bounded by serde_yaml's budget, which grows with the input: an alias
    // bomb holds hundreds of MB to GB (more with a long list padding the input).
    Mutation::AliasBomb,
    Mutation::PaddedAliasBomb,
    // Thousands of keys of 999-deep flow lists: seconds of parsing.
    Mutation::ManyDeepFlow,
];

// Found by long runs of the mutation fuzzer in families it keeps (the default seed does not
// reach them, so nothing is left out for them; a long run reports them until they are fixed):
// - a line break inserted into a quoted scalar leaves a continuation line at column 0: the
//   verbatim copy is cut (the `ColumnZero` class; `mutation/quote-closing-at-column-0.yaml`);
// - `<<: scalar` inserted: copied verbatim, a merge key kubectl cannot apply (the `MergeKeys`
//   class: merge keys must be applied or rejected);
// - a 4 MiB value in a field an error names (e.g. `functionConfig.apiVersion`) is repeated in the
//   message, `resourceRef`, `field.currentValue`, the echoed `functionConfig` and stderr: 33 MB of
//   output, 150 MB held, for 5 MB of input (31 x, past the 16 x bound).

/// Regression inputs (paths under `tests/fuzz-regressions/`) that still fail: the replays
/// expect them to.
pub const REGRESSIONS: &[&str] = &[
    // Alias expansion not bounded by the input's size.
    "mutation/alias-bomb-padded.yaml",
    // A key over 1024 characters in an item the mode re-emits: written as an implicit key.
    "mutation/long-key.yaml",
    // A quoted "<<" key in an item the mode re-emits: written as a plain `<<`, a merge key to
    // kubectl and kpt.
    "mutation/quoted-merge-key.yaml",
    // Found by the mutation fuzzer (seed 7, case 457, minimised): the last item ends in a
    // single-quoted scalar whose closing quote is at column 0; the copy stops before it.
    "mutation/quote-closing-at-column-0.yaml",
    // Found by the long style run (seed 7, case 93189; hand-minimised): a Service annotation
    // whose double-quoted value has a multi-byte character before ` #` makes the text patch
    // slice inside the character: a panic ("internal error").
    "mutation/text-patch-multibyte-panic.yaml",
    // Integers past 64 bits: an error from YAML, a float from JSON.
    "styles/big-integer-json.styled.yaml",
    "styles/bom.styled.yaml",
    // kpt's multi-line single-quoted scalar with its closing quote at column 0, in the last item.
    "styles/column-zero-quote.styled.yaml",
    "styles/cross-item-alias.styled.yaml",
    "styles/cross-item-alias-tab.styled.yaml",
    "styles/flow-document.styled.yaml",
    "styles/merge-key-annotation.styled.yaml",
    "styles/merge-key-version.styled.yaml",
    // A bare `labels:` becomes `labels: {}` when the Service's annotations are patched as text.
    "styles/null-labels-patch.styled.yaml",
    // A double-quoted string whose continuation lines look like items: the copy is cut.
    "styles/under-indented-quote.styled.yaml",
];

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

//! Running the function and judging what it did, with serde_yaml's whole-document parse as
//! the independent reference.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Deserialize;
use serde_yaml::Value;

/// What went wrong with one run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Failure {
    /// The function panicked (`process` reports it as an internal error).
    Panic,
    /// Exit code other than 0 or 1.
    ExitCode,
    /// Exit code differs from the reference document's.
    ExitCodeDiffers,
    /// Stdout is neither empty nor exactly one ResourceList.
    InvalidOutput,
    /// Exit 0 with nothing on stdout, or stdout empty where the reference has a ResourceList.
    MissingOutput,
    /// The output's items differ from the reference output's.
    ItemsDiffer,
    /// The output's results differ from the reference output's.
    ResultsDiffer,
    /// The output's other fields (`apiVersion`, `kind`, `functionConfig`) differ.
    ListDiffers,
    /// Running the function on its own output changed the items.
    NotIdempotent,
    /// The run took too long.
    Slow,
    /// The run held too much memory.
    Memory,
    /// A scalar the function did not change has another value or type to go-yaml or a YAML 1.1
    /// reader in the output than in the input (`fuzz/typed.rs`).
    TypeChanged,
    /// libyaml as the engine builds it (runs of ASCII copied at once) and libyaml reading one
    /// character at a time give different events, marks or errors for the input.
    ReaderDiffers,
}

/// A failure with what shows it.
#[derive(Debug, Clone)]
pub struct Finding {
    pub failure: Failure,
    pub detail: String,
}

impl Finding {
    pub fn new(failure: Failure, detail: impl Into<String>) -> Finding {
        Finding {
            failure,
            detail: detail.into(),
        }
    }
}

/// Panics seen by the hook of [`install_panic_counter`].
pub static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic (the function catches its own panics; this makes them visible) and keeps
/// the default message.
pub fn install_panic_counter() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
    });
}

/// One run of the function, with the panics it caused.
pub struct Run {
    pub out: cutover::Output,
    pub panicked: bool,
}

/// Runs the function in-process.
pub fn run(input: &[u8]) -> Run {
    let before = PANICS.load(Ordering::SeqCst);
    let out = cutover::function::process(input);
    let panicked =
        PANICS.load(Ordering::SeqCst) != before || out.stderr.contains("internal error (panic)");
    Run { out, panicked }
}

/// Whether the engine's libyaml, which copies runs of ASCII at once, reads `input` exactly as
/// libyaml's own one-character loop does: the same events, marks and errors (after a leading
/// byte order mark, which the engine removes before parsing).
pub fn reader_agrees(input: &[u8]) -> Result<(), Finding> {
    use cutover::krm::yaml::events::{Parser, first_disagreement};
    let body = input.strip_prefix("\u{feff}".as_bytes()).unwrap_or(input);
    match first_disagreement(Parser::new(body), Parser::one_character_at_a_time(body)) {
        None => Ok(()),
        Some((at, fast, reference)) => Err(Finding::new(
            Failure::ReaderDiffers,
            format!("event {at}: copying runs gives {fast}, one character at a time {reference}"),
        )),
    }
}

/// The one document of `stdout`, if it is exactly one YAML document that is a ResourceList
/// (`kind: ResourceList`, `items` a sequence) whose merge keys apply. Quoted `"<<"` keys are
/// ordinary keys, as go-yaml reads them: they come back renamed
/// ([`super::events::LITERAL_MERGE_KEY`]). A document past serde_yaml's own alias budget is
/// checked on its events and comes back as `Null` (checked, not comparable).
pub fn resource_list(stdout: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(stdout).map_err(|e| format!("not UTF-8: {e}"))?;
    // Only a text that may spell `<<` can hold a merge key, quoted or not.
    let may_merge = may_spell_merge_key(text);
    let renamed = if may_merge {
        super::events::rename_quoted_merge_keys(text)
    } else {
        None
    };
    let text = renamed.as_deref().unwrap_or(text);
    let mut docs = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        match Value::deserialize(doc) {
            Ok(v) => docs.push(v),
            // serde_yaml's own alias budget, which kubectl's and the engine's readers do not
            // have: the same checks on the events (the document is not compared, only checked).
            Err(e) if e.to_string().contains("repetition limit exceeded") => {
                return super::events::check_resource_list(text).map(|()| Value::Null);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    if docs.len() != 1 {
        return Err(format!("{} YAML documents", docs.len()));
    }
    let doc = docs.pop().unwrap();
    if doc.get("kind").and_then(Value::as_str) != Some("ResourceList") {
        return Err("kind is not ResourceList".into());
    }
    if !doc.get("items").is_some_and(Value::is_sequence) {
        return Err("items is not a sequence".into());
    }
    // kubectl and kpt apply merge keys: a plain `<<` that is not a merge is invalid to them.
    if may_merge && has_merge_key(&doc) {
        doc.clone()
            .apply_merge()
            .map_err(|e| format!("merge keys do not apply: {e}"))?;
    }
    Ok(doc)
}

/// Whether `text` may spell the key `<<` in any YAML style: literally, through a
/// double-quoted escape of `<` (`\x3c`, `\u003c`, `\U0000003c`), or split by an escaped line
/// break inside a double-quoted scalar. A text for which this is false holds no merge key, so
/// the checks that look for one can be skipped (they parse the whole text again).
pub fn may_spell_merge_key(text: &str) -> bool {
    text.contains("<<")
        || ["\\x3", "\\u003", "\\U0000003"]
            .iter()
            .any(|escape| text.contains(escape))
        || (text.contains('<') && (text.contains("\\\n") || text.contains("\\\r")))
}

/// Whether `v` has a mapping key `<<` (a merge key to serde_yaml) anywhere.
pub fn has_merge_key(v: &Value) -> bool {
    match v {
        Value::Mapping(m) => m
            .iter()
            .any(|(k, v)| k.as_str() == Some("<<") || has_merge_key(k) || has_merge_key(v)),
        Value::Sequence(s) => s.iter().any(has_merge_key),
        Value::Tagged(t) => has_merge_key(&t.value),
        _ => false,
    }
}

/// The basic contract of any run: no panic, exit 0 or 1, stdout empty or one ResourceList
/// (never empty with exit 0). Returns the parsed output.
pub fn contract(run: &Run) -> Result<Option<Value>, Finding> {
    if run.panicked {
        return Err(Finding::new(Failure::Panic, run.out.stderr.clone()));
    }
    if !matches!(run.out.exit_code, 0 | 1) {
        return Err(Finding::new(
            Failure::ExitCode,
            format!("exit code {}", run.out.exit_code),
        ));
    }
    if run.out.stdout.is_empty() {
        if run.out.exit_code == 0 {
            return Err(Finding::new(
                Failure::MissingOutput,
                "exit 0 without output",
            ));
        }
        return Ok(None);
    }
    resource_list(&run.out.stdout).map(Some).map_err(|e| {
        Finding::new(
            Failure::InvalidOutput,
            format!(
                "{e}\n--- stdout ---\n{}",
                String::from_utf8_lossy(&run.out.stdout)
            ),
        )
    })
}

/// `v` with merge keys applied (as kubectl and kpt read them); borrowed when `v` has none.
pub fn merged(v: &Value) -> Cow<'_, Value> {
    if !has_merge_key(v) {
        return Cow::Borrowed(v);
    }
    let mut v = v.clone();
    v.apply_merge().expect("merge keys apply");
    Cow::Owned(v)
}

/// Equality that also compares the order of mapping entries (serde_yaml's `==` does not).
pub fn ordered_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Mapping(x), Value::Mapping(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ordered_eq(ka, kb) && ordered_eq(va, vb))
        }
        (Value::Sequence(x), Value::Sequence(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| ordered_eq(p, q))
        }
        (Value::Tagged(x), Value::Tagged(y)) => x.tag == y.tag && ordered_eq(&x.value, &y.value),
        _ => a == b,
    }
}

/// Compares two outputs (parsed, merge keys applied): items, results, and the rest.
/// `ordered`: also the order of mapping entries and of the results.
pub fn compare_outputs(got: &Value, want: &Value, ordered: bool) -> Result<(), Finding> {
    let eq = |a: &Value, b: &Value| if ordered { ordered_eq(a, b) } else { a == b };
    let (gi, wi) = (items(got), items(want));
    if gi.len() != wi.len() {
        return Err(Finding::new(
            Failure::ItemsDiffer,
            format!("{} items, expected {}", gi.len(), wi.len()),
        ));
    }
    for (n, (g, w)) in gi.iter().zip(wi).enumerate() {
        if !eq(g, w) {
            return Err(Finding::new(
                Failure::ItemsDiffer,
                format!(
                    "item {n} differs\n--- got ---\n{}--- expected ---\n{}",
                    yaml(g),
                    yaml(w)
                ),
            ));
        }
    }
    // Without key order (merge keys reorder a mapping: kyaml's DeAnchor puts the merged keys
    // after the mapping's own), results that follow a mapping's order may come in another
    // order: compared as a multiset then.
    let (gr, wr) = (results(got, ordered), results(want, ordered));
    if gr.len() != wr.len() || gr.iter().zip(&wr).any(|(g, w)| !eq(g, w)) {
        return Err(Finding::new(
            Failure::ResultsDiffer,
            format!(
                "--- got ---\n{}--- expected ---\n{}",
                yaml(&got["results"]),
                yaml(&want["results"])
            ),
        ));
    }
    let rest = |v: &Value| {
        let mut m = v.as_mapping().cloned().unwrap_or_default();
        m.remove("items");
        m.remove("results");
        Value::Mapping(m)
    };
    if !rest_eq(got, want, ordered) {
        return Err(Finding::new(
            Failure::ListDiffers,
            format!(
                "--- got ---\n{}--- expected ---\n{}",
                yaml(&rest(got)),
                yaml(&rest(want))
            ),
        ));
    }
    Ok(())
}

/// The items of a ResourceList.
fn items(v: &Value) -> &[Value] {
    v["items"]
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The results of a ResourceList; sorted by their YAML text unless `ordered`.
fn results(v: &Value, ordered: bool) -> Vec<&Value> {
    let mut r: Vec<&Value> = v["results"].as_sequence().into_iter().flatten().collect();
    if !ordered {
        r.sort_by_cached_key(|v| yaml(v));
    }
    r
}

/// Every field of a ResourceList but `items` and `results`.
fn rest_fields(v: &Value) -> Vec<(&Value, &Value)> {
    v.as_mapping()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !matches!(k.as_str(), Some("items" | "results")))
        .collect()
}

/// Whether two ResourceLists agree on every field but `items` and `results` (in key order
/// when `ordered`), without copying them.
fn rest_eq(got: &Value, want: &Value, ordered: bool) -> bool {
    let (g, w) = (rest_fields(got), rest_fields(want));
    if g.len() != w.len() {
        return false;
    }
    if ordered {
        g.iter()
            .zip(&w)
            .all(|((gk, gv), (wk, wv))| ordered_eq(gk, wk) && ordered_eq(gv, wv))
    } else {
        g.iter()
            .all(|(gk, gv)| w.iter().any(|(wk, wv)| gk == wk && gv == wv))
    }
}

pub fn yaml(v: &Value) -> String {
    serde_yaml::to_string(v).unwrap_or_else(|e| format!("<{e}>"))
}

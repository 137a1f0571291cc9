//! The function as a whole: ResourceList in, ResourceList out. Platform-neutral (the caller hands
//! in the input bytes and a sink for the output), so the native binary and the WASI module run
//! exactly the same code.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::krm::{self, KrmResult, apply, splice};
use crate::modes;

/// What a run produced: bytes for stdout, text for stderr and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// A complete ResourceList, or nothing when the input was not a ResourceList.
    pub stdout: Vec<u8>,
    /// Diagnostics for humans.
    pub stderr: String,
    /// 0 without error results, 1 with.
    pub exit_code: i32,
}

/// What a run reports besides its stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Diagnostics for humans.
    pub stderr: String,
    /// 0 without error results, 1 with.
    pub exit_code: i32,
}

/// Runs the function on one serialized ResourceList, buffering the output.
pub fn process(input: &[u8]) -> Output {
    process_buffered(input, false)
}

/// [`process`] building every item whole, whatever the mode reads of it: the reference the
/// lean read (`krm::read`) is tested against. Not for production use: it only costs more.
#[doc(hidden)]
pub fn process_whole(input: &[u8]) -> Output {
    process_buffered(input, true)
}

fn process_buffered(input: &[u8], whole: bool) -> Output {
    // The output is the input's items plus what the mode adds: 1.03-1.16x the input on the
    // benchmark presets. Sized once, a buffer that would otherwise double is not copied at each
    // step, which costs most where realloc cannot move pages (WebAssembly's allocators, no
    // mremap); the part never written is never touched.
    let mut stdout = Vec::with_capacity(input.len() + input.len() / 4 + 4096);
    let report = match catch_unwind(AssertUnwindSafe(|| {
        process_inner(input, &mut stdout, whole)
    })) {
        Ok(Ok(report)) => report,
        // A Vec takes every byte; kept for completeness.
        Ok(Err(e)) => {
            stdout.clear();
            Report {
                stderr: format!("cutover: cannot write output: {e}\n"),
                exit_code: 1,
            }
        }
        Err(_) => {
            stdout.clear();
            Report {
                stderr: "cutover: internal error (panic); no output written\n".into(),
                exit_code: 1,
            }
        }
    };
    Output {
        stdout,
        stderr: report.stderr,
        exit_code: report.exit_code,
    }
}

/// Runs the function on one serialized ResourceList and writes the output ResourceList to
/// `stdout` as it is produced, so the output is never held whole in memory. Every decision,
/// check and fallible serialization happens before the first byte is written: `stdout` gets a
/// complete ResourceList or nothing, unless `stdout` itself fails (the `Err`) or the code panics
/// while writing (a bug; reported, as every panic, as an internal error).
pub fn process_to(input: &[u8], stdout: &mut dyn std::io::Write) -> std::io::Result<Report> {
    match catch_unwind(AssertUnwindSafe(|| process_inner(input, stdout, false))) {
        Ok(report) => report,
        Err(_) => Ok(Report {
            stderr: "cutover: internal error (panic)\n".into(),
            exit_code: 1,
        }),
    }
}

fn process_inner(
    input: &[u8],
    sink: &mut dyn std::io::Write,
    whole: bool,
) -> std::io::Result<Report> {
    let prepare = |fc: Option<&serde_yaml::Value>| modes::Prepared {
        whole,
        ..modes::prepare(fc)
    };
    let parsed = krm::io::text(input)
        .and_then(|text| Ok((text, krm::io::parse_text_observed(text, prepare)?)));
    let (text, (mut list, prepared)) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            // The message may quote the input (a 4 MiB integer that does not fit).
            let mut line = format!("cutover: {e}");
            krm::result::shorten_middle(&mut line, krm::SHOWN_MESSAGE_BYTES);
            return Ok(Report {
                stderr: format!("{line}\n"),
                exit_code: 1,
            });
        }
    };
    let (mode, ran) = run_mode(prepared, &list);
    let fc = list.function_config.as_ref();
    let mut results = ran.outcome.results;
    crate::config::configmap::user_field_paths(&mut results, fc);
    let mut items = std::mem::take(&mut list.items);
    let mut applied = apply_edits(text, &mut list, &mut items, ran.outcome.edits, &mut results);
    let restored = std::mem::take(&mut applied.restored);
    let fc = list.function_config.as_ref();
    let sources = sources(text, &list, &applied);
    // Items written from their tree: the input item each is or replaces.
    let emitted: Vec<Option<usize>> = applied
        .from
        .iter()
        .zip(&sources)
        .map(|(from, source)| (*from).filter(|_| source.is_none()))
        .collect();
    let item_spellings =
        krm::io::ItemSpellings::new(text, &list, emitted.iter().flatten().copied(), restored);
    let spelled: Vec<Option<krm::io::Spelled>> = emitted
        .iter()
        .map(|index| {
            let index = (*index)?;
            Some(krm::io::Spelled {
                spellings: item_spellings.get(text, &list, index),
                index,
            })
        })
        .collect();
    fill_missing_files(&mut results, &items, text, &list);
    let (failed, stderr) = finish_results(&mut results, mode, ran.stderr);
    let written = krm::io::write_to(
        sink,
        &items,
        &sources,
        &spelled,
        fc,
        &list.results,
        &results,
    );
    drop(sources);
    drop(spelled);
    drop(item_spellings);
    krm::free_after_run((list, items, results, applied, ran.garbage));
    match written {
        Ok(()) => Ok(Report {
            stderr,
            exit_code: i32::from(failed),
        }),
        // Serialization is done before anything is written: the sink has nothing.
        Err(krm::io::WriteError::Serialize(e)) => Ok(Report {
            stderr: format!("{stderr}cutover: cannot serialize output: {e}\n"),
            exit_code: 1,
        }),
        Err(krm::io::WriteError::Io(e)) => Err(e),
    }
}

/// Where each output item's text comes from: unchanged items are copied from the input text
/// where the parse proved their span (see krm::read), released items patched as text while they
/// are written; `None` for an item written from its tree.
fn sources<'a>(
    text: &'a str,
    list: &'a krm::io::ResourceList,
    applied: &'a Applied,
) -> Vec<Option<krm::io::Source<'a>>> {
    applied
        .origins
        .iter()
        .map(|o| {
            let i = (*o)?;
            let item_text = &text[list.span(i)?];
            Some(match applied.text_patches.get(&i) {
                Some(planned) => krm::io::Source::Patch(item_text, planned),
                None => krm::io::Source::Copy(item_text),
            })
        })
        .collect()
}

/// Runs the mode the function config names, on the parsed items: its name (for the results'
/// `mode` tag; `None` when the config is not valid) and what it produced. No mode runs when
/// the config is not valid or an item is not a KRM resource.
fn run_mode(
    prepared: modes::Prepared,
    list: &krm::io::ResourceList,
) -> (Option<&'static str>, modes::Ran) {
    let fc = list.function_config.as_ref();
    let modes::Prepared {
        config, observer, ..
    } = prepared;
    match config {
        // kpt refuses items that are not KRM resources before it runs a function; so does
        // cutover (no mode runs), with one error result per item, the items echoed.
        Ok(cfg) if !list.not_krm.is_empty() => (
            Some(cfg.kind().mode()),
            krm::Outcome {
                edits: Vec::new(),
                results: list.not_krm.iter().map(krm::io::NotKrm::result).collect(),
            }
            .into(),
        ),
        Ok(cfg) => (
            Some(cfg.kind().mode()),
            modes::run_observed(&cfg, &list.items, fc, observer),
        ),
        Err(result) => (
            None,
            krm::Outcome {
                edits: Vec::new(),
                results: std::iter::once(result)
                    .chain(list.not_krm.iter().map(krm::io::NotKrm::result))
                    .collect(),
            }
            .into(),
        ),
    }
}

/// The items after the mode's edits, and what the output needs to know of each.
struct Applied {
    /// For each output item, the input item it is unchanged from (its text may be copied).
    origins: Vec<Option<usize>>,
    /// For each output item, the input item it is or replaces, for the spellings of its scalars.
    from: Vec<Option<usize>>,
    /// The spellings of released items parsed again for an edit, by input index.
    restored: HashMap<usize, Vec<krm::yaml::spelling::Spelling>>,
    /// Patches of released items, planned on their text and applied while writing, by input
    /// index.
    text_patches: HashMap<usize, splice::Planned>,
    /// Replaced and removed input items: freed after the output is written.
    dropped: Vec<serde_yaml::Value>,
    /// Edits not applied (the run has an error result): freed after the output is written.
    unapplied: Vec<krm::Edit>,
}

/// Applies the mode's edits to `items`, unless a result is an error (then nothing changes and
/// the items are the input). An edit that cannot be applied adds an error result and leaves
/// the items as they were: `apply` checks everything before it touches them.
fn apply_edits(
    text: &str,
    list: &mut krm::io::ResourceList,
    items: &mut Vec<serde_yaml::Value>,
    edits: Vec<krm::Edit>,
    results: &mut Vec<KrmResult>,
) -> Applied {
    let identity: Vec<Option<usize>> = (0..items.len()).map(Some).collect();
    let mut applied = Applied {
        origins: identity.clone(),
        from: identity,
        restored: HashMap::new(),
        text_patches: HashMap::new(),
        dropped: Vec::new(),
        unapplied: Vec::new(),
    };
    if results.iter().any(KrmResult::is_error) {
        applied.unapplied = edits;
        return applied;
    }
    let outcome = edits_on_released(
        text,
        &list.item_spans,
        &mut list.released,
        items,
        edits,
        &mut applied.text_patches,
        &mut applied.restored,
    )
    .and_then(|edits| {
        apply::apply_into(
            items,
            edits,
            &list.released,
            &mut applied.dropped,
            &mut applied.from,
        )
    });
    match outcome {
        Ok(origins) => applied.origins = origins,
        Err(e) => {
            applied.text_patches.clear();
            applied.from = (0..items.len()).map(Some).collect();
            results.push(e.tag("check", ENGINE_CHECK));
        }
    }
    applied
}

/// Bounds what every result repeats from the input and tags it with the mode; returns whether
/// the run failed and its stderr: the findings, then the mode's notes.
fn finish_results(
    results: &mut [KrmResult],
    mode: Option<&'static str>,
    notes: Vec<String>,
) -> (bool, String) {
    for r in results.iter_mut() {
        // What a result repeats from the input is shown shortened (krm::result::bound).
        r.bound();
        if let Some(mode) = mode {
            r.tags.entry("mode".into()).or_insert_with(|| mode.into());
        }
    }
    let failed = results.iter().any(KrmResult::is_error);
    let mut stderr = findings_for_stderr(results);
    for mut line in notes {
        krm::result::shorten_middle(&mut line, krm::SHOWN_MESSAGE_BYTES);
        stderr.push_str(&line);
        stderr.push('\n');
    }
    (failed, stderr)
}

/// The lines for stderr of a run's results (orchestrators such as `kubectl kustomize` show no
/// results): every error, then every warning, one line each, in the results' order, as
/// `cutover: [error] apps/v1/DaemonSet ns/name spec.x: message` (see [`KrmResult`]'s `Display`).
/// An error that `failOnWarnings` made of a warning says so at the end of its line. Infos stay in
/// the results only.
fn findings_for_stderr(results: &[KrmResult]) -> String {
    let mut out = String::new();
    for r in results.iter().filter(|r| r.is_error()) {
        out.push_str(&format!("cutover: {r}"));
        if r.is_promoted() {
            out.push_str(PROMOTED_NOTE);
        }
        out.push('\n');
    }
    for r in results.iter().filter(|r| r.is_warning()) {
        out.push_str(&format!("cutover: {r}\n"));
    }
    out
}

/// What the stderr line of a promoted warning ends with.
const PROMOTED_NOTE: &str = " (a warning; failOnWarnings makes it an error)";

/// Edits of items whose trees the parse released: a patch the item's text can take
/// ([`splice::plan_patch`]) and that cannot move its file goes to `text_patches`, applied to the text while
/// writing (see [`krm::io::Source::Patch`]); otherwise the item is parsed again from its text and
/// the edit goes to [`apply`] like any other. Other edits pass through (replacing or removing an
/// item needs no tree).
fn edits_on_released(
    text: &str,
    spans: &[Option<std::ops::Range<u32>>],
    released: &mut krm::io::ReleasedItems,
    items: &mut [serde_yaml::Value],
    edits: Vec<krm::Edit>,
    text_patches: &mut HashMap<usize, splice::Planned>,
    restored: &mut HashMap<usize, Vec<krm::yaml::spelling::Spelling>>,
) -> Result<Vec<krm::Edit>, KrmResult> {
    if released.is_empty() {
        return Ok(edits);
    }
    let mut rest = Vec::with_capacity(edits.len());
    for edit in edits {
        if let krm::Edit::Patch { index, ops } = &edit
            && released.get(*index).is_some()
        {
            let Some(span) = spans
                .get(*index)
                .cloned()
                .flatten()
                .map(|s| s.start as usize..s.end as usize)
            else {
                return Err(KrmResult::error(
                    "internal error: item released without its text",
                ));
            };
            let item_text = &text[span.clone()];
            if !ops.iter().any(apply::may_move_file)
                && let Some(planned) = splice::plan_patch(item_text, released.layout(*index), ops)
            {
                text_patches.insert(*index, planned);
                continue;
            }
            let (item, spellings) = krm::io::parse_item_spelled(text, span, Some(*index))
                .ok_or_else(|| {
                    KrmResult::error(format!("internal error: item {index} does not parse again"))
                })?;
            items[*index] = item;
            restored.insert(*index, spellings);
            released.remove(*index);
        }
        rest.push(edit);
    }
    Ok(rest)
}

pub use crate::krm::free_in_background;

/// The `check` tag of results the engine itself adds (an edit that cannot be applied).
pub const ENGINE_CHECK: &str = "engine";

/// Results about an object (the function config, a created object) that name no file get the
/// file of the input item with the same identity, so kpt users can find what to fix. Released
/// items are parsed again for this only when a result still lacks its file.
fn fill_missing_files(
    results: &mut [KrmResult],
    items: &[serde_yaml::Value],
    text: &str,
    list: &krm::ResourceList,
) {
    use std::collections::HashMap;

    use crate::krm::{FileRef, KrmObject, ResourceRef};
    if !results
        .iter()
        .any(|r| r.file.is_none() && r.resource_ref.is_some())
    {
        return;
    }
    let key = |r: &ResourceRef| {
        (
            r.api_version.clone(),
            r.kind.clone(),
            r.name.clone(),
            r.namespace.clone(),
        )
    };
    let mut files: HashMap<_, _> = items
        .iter()
        .filter_map(|item| Some((key(&item.resource_ref()), item.file_ref()?)))
        .collect();
    let missing = |files: &HashMap<_, FileRef>, r: &KrmResult| {
        r.file.is_none()
            && r.resource_ref
                .as_ref()
                .is_some_and(|rr| !files.contains_key(&key(rr)))
    };
    if results.iter().any(|r| missing(&files, r)) {
        for i in list.released.indices() {
            if let Some(item) = list
                .span(i)
                .and_then(|span| krm::io::parse_item(text, span))
                && let Some(file) = item.file_ref()
            {
                files.entry(key(&item.resource_ref())).or_insert(file);
            }
        }
    }
    for r in results.iter_mut().filter(|r| r.file.is_none()) {
        if let Some(rr) = &r.resource_ref {
            r.file = files.get(&key(rr)).cloned();
        }
    }
}

//! The function as a whole: ResourceList in, ResourceList out. Platform-neutral (no I/O), so the
//! native binary and the WASI module run exactly the same code.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::config;
use crate::krm::{self, KrmResult, apply};
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

/// Runs the function on one serialized ResourceList.
pub fn process(input: &[u8]) -> Output {
    match catch_unwind(AssertUnwindSafe(|| process_inner(input))) {
        Ok(output) => output,
        Err(_) => Output {
            stdout: Vec::new(),
            stderr: "cutover: internal error (panic); no output written\n".into(),
            exit_code: 1,
        },
    }
}

fn process_inner(input: &[u8]) -> Output {
    let parsed = krm::io::text(input).and_then(|text| Ok((text, krm::io::parse_text(text)?)));
    let (text, mut list) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            return Output {
                stdout: Vec::new(),
                stderr: format!("cutover: {e}\n"),
                exit_code: 1,
            };
        }
    };
    let fc = list.function_config.as_ref();
    let (mode, outcome) = match config::parse(fc) {
        Ok(cfg) => (Some(cfg.kind().mode()), modes::run(&cfg, &list.items, fc)),
        Err(result) => (
            None,
            krm::Outcome {
                edits: Vec::new(),
                results: vec![result],
            },
        ),
    };
    let mut results = outcome.results;
    let mut items = std::mem::take(&mut list.items);
    let mut origins: Vec<Option<usize>> = (0..items.len()).map(Some).collect();
    // Replaced and removed input items, and edits not applied: freed after the output is written.
    let mut dropped = Vec::new();
    let mut unapplied = Vec::new();
    if !results.iter().any(KrmResult::is_error) {
        match apply::apply_into(&mut items, outcome.edits, &mut dropped) {
            Ok(o) => origins = o,
            // `apply` checks everything before it touches the items: they are still the input.
            Err(e) => results.push(e),
        }
    } else {
        unapplied = outcome.edits;
    }
    // Unchanged items are copied from the input text when its layout allows (see io::parse).
    let verbatim: Vec<Option<&str>> = match &list.item_spans {
        Some(spans) => origins
            .iter()
            .map(|o| o.map(|i| &text[spans[i].clone()]))
            .collect(),
        None => Vec::new(),
    };
    fill_missing_files(&mut results, &items);
    if let Some(mode) = mode {
        for r in &mut results {
            r.tags.entry("mode".into()).or_insert_with(|| mode.into());
        }
    }
    let failed = results.iter().any(KrmResult::is_error);
    let mut stderr = String::new();
    for r in results.iter().filter(|r| r.is_error()) {
        stderr.push_str(&format!("cutover: {r}\n"));
    }
    let written = krm::io::write(&items, &verbatim, fc, &list.results, &results);
    drop(verbatim);
    free_in_background((list, items, results, dropped, unapplied));
    match written {
        Ok(stdout) => Output {
            stdout,
            stderr,
            exit_code: i32::from(failed),
        },
        Err(e) => Output {
            stdout: Vec::new(),
            stderr: format!("{stderr}cutover: cannot serialize output: {e}\n"),
            exit_code: 1,
        },
    }
}

/// Frees `garbage` on a short-lived thread. A run builds millions of small allocations (every
/// YAML node of every item, twice for rewritten items); freeing them one by one took about a
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

/// Results about an object (the function config, a created object) that name no file get the
/// file of the input item with the same identity, so kpt users can find what to fix.
fn fill_missing_files(results: &mut [KrmResult], items: &[serde_yaml::Value]) {
    use std::collections::HashMap;

    use crate::krm::{KrmObject, ResourceRef};
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
    let files: HashMap<_, _> = items
        .iter()
        .filter_map(|item| Some((key(&item.resource_ref()), item.file_ref()?)))
        .collect();
    for r in results.iter_mut().filter(|r| r.file.is_none()) {
        if let Some(rr) = &r.resource_ref {
            r.file = files.get(&key(rr)).cloned();
        }
    }
}

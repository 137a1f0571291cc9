//! Style invariance: the same ResourceList written in other YAML styles must give the same
//! output as its plain writing. Generated platforms (every mode, every announcer phase, plan
//! mode) and the examples as kpt hands them over, with extra long, multi-line and
//! YAML-lookalike strings, are re-written by the style writer (`fuzz/style.rs`); for each case:
//!
//! - the restyled text is the same document to serde_yaml's whole-document parse (merge keys
//!   applied): the reference every engine path must agree with;
//! - no panic; the exit code equals the plain document's; stdout is empty or exactly one
//!   ResourceList;
//! - its items, results and other fields equal (as `serde_yaml::Value`, merge keys applied, in
//!   key order unless the case uses merge keys, then results as a multiset) those of the plain
//!   document's output;
//! - running the function on its output changes no item;
//! - per document, the plain YAML and its JSON form (which the engine reads without item spans)
//!   give the same output.
//!
//! Default: a fixed seed and a case count that runs in well under a minute in debug.
//! Long runs: `FUZZ_CASES=1000000 FUZZ_SEED=7 cargo test --release --test fuzz_styles -- --nocapture`
//! (`FUZZ_KEEP_GOING=1` to collect every failing class instead of stopping at the first,
//! `FUZZ_FEATURES=Anchors,MergeKeys` to use only those style families, `FUZZ_NO_SHRINK=1` to
//! report failing cases as they are). A failure prints the
//! seed, the case and a minimised input (also written to `target/fuzz-failures/`).

mod common;
mod fuzz;

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use fuzz::bases::{self, Base, Extras};
use fuzz::check::{self, Failure, Finding};
use fuzz::style::{self, Feature, Features};
use fuzz::{Rng, cases_from_env, known, seed_from_env};
use serde_yaml::Value;

/// The oracle allocates and frees a whole document tree several times a case: mimalloc makes
/// that about a fifth of the time glibc's malloc takes (the function's own allocations are
/// what they are in any allocator).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DEFAULT_SEED: u64 = 0x5EED_0001;
const DEFAULT_CASES: usize = 96;

/// Restyled variants per base document (the reference run is shared).
const VARIANTS: usize = 6;

#[test]
fn styles_keep_the_items() {
    fuzz_styles(&Features::without(known::STYLES));
}

/// Every minimised case in `tests/fuzz-regressions/styles/` (a restyled writing and its plain
/// writing) gives the plain writing's output; those in `known::REGRESSIONS` must still fail.
#[test]
fn style_regressions_stay_fixed() {
    check::install_panic_counter();
    let dir = regression_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".styled.yaml").map(str::to_owned)
            })
            .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut unexpected = Vec::new();
    for name in &names {
        let styled = std::fs::read(dir.join(format!("{name}.styled.yaml"))).unwrap();
        let plain = std::fs::read(dir.join(format!("{name}.plain.yaml"))).unwrap();
        let reference = check::run(&plain);
        let want = check::contract(&reference).expect("the plain writing keeps the contract");
        let verdict = same_as_plain(&styled, false, &want, reference.out.exit_code);
        unexpected.extend(known::unexpected(
            &format!("styles/{name}.styled.yaml"),
            verdict,
        ));
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}

/// `FUZZ_FEATURES=A,B` restricts `features` to those families.
fn features_from_env(features: &Features) -> Features {
    let Ok(list) = std::env::var("FUZZ_FEATURES") else {
        return features.clone();
    };
    let on: Vec<Feature> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            *Feature::ALL
                .iter()
                .find(|f| format!("{f:?}") == name)
                .unwrap_or_else(|| panic!("FUZZ_FEATURES: unknown family {name:?}"))
        })
        .filter(|f| features.has(*f))
        .collect();
    Features::only(&on)
}

/// One base document and what its plain writing gives.
struct Reference {
    base: Base,

    out: Option<Value>,
    exit_code: i32,
}

fn fuzz_styles(features: &Features) {
    check::install_panic_counter();
    let features = features_from_env(features);
    let seed = seed_from_env(DEFAULT_SEED);
    let cases = cases_from_env(DEFAULT_CASES);
    let keep_going = std::env::var_os("FUZZ_KEEP_GOING").is_some();
    let start = Instant::now();
    let mut failures: BTreeMap<Failure, (usize, String)> = BTreeMap::new();
    let mut failed_cases = 0usize;
    let mut reference: Option<Reference> = None;
    let first = fuzz::first_case_from_env();
    for case in first..cases {
        if case % VARIANTS == 0 || case == first {
            // Each base document is drawn from its first case's number, so any case replays
            // alone (FUZZ_FIRST_CASE).
            let base_case = case - case % VARIANTS;
            let mut rng = Rng::fork(seed, base_case as u64);
            let base = pick_base(&mut rng, &features);
            match make_reference(base) {
                Ok(r) => reference = Some(r),
                Err(failed) => {
                    // The plain writing itself fails: it is the input to keep.
                    let (base, plain, finding) = *failed;
                    let report = report(seed, case, &base, &plain, &finding);
                    if !keep_going {
                        panic!("{report}");
                    }
                    eprintln!("{report}");
                    failures.entry(finding.failure).or_insert((case, report));
                    failed_cases += 1;
                    reference = None;
                }
            }
        }
        let Some(r) = &reference else { continue };
        let style_seed = Rng::fork(seed, case as u64).next();
        if let Err(finding) = check_case(r, style_seed, &features, &HashSet::new()) {
            // Only the first failure of each kind is minimised (a long run may find many).
            let seen = failures.contains_key(&finding.failure);
            let (doc, forced, finding) = if seen || std::env::var_os("FUZZ_NO_SHRINK").is_some() {
                (r.base.doc.clone(), HashSet::new(), finding)
            } else {
                shrink(r, style_seed, &features, finding)
            };
            let styled = style::write(&doc, style_seed, &features, &forced);
            if let Ok(name) = std::env::var("FUZZ_SAVE_REGRESSION") {
                save_regression(&name, &styled.text, &style::plain(&doc));
            }
            let report = report(seed, case, &r.base, &styled.text, &finding);
            if !keep_going {
                panic!("{report}");
            }
            eprintln!("{report}");
            failures.entry(finding.failure).or_insert((case, report));
            failed_cases += 1;
        }
        if (case + 1) % 10_000 == 0 {
            // Case numbers, not counts: a shard (FUZZ_FIRST_CASE) says which cases it ran.
            eprintln!(
                "fuzz_styles: cases {first}..{}, {:.0} s, {failed_cases} failed in {} classes",
                case + 1,
                start.elapsed().as_secs_f64(),
                failures.len()
            );
        }
    }
    eprintln!(
        "fuzz_styles: seed {seed:#x}, cases {first}..{cases} ({} cases) in {:.1} s, {failed_cases} failed in {} classes",
        cases.saturating_sub(first),
        start.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "failing classes: {:?}",
        failures.keys().collect::<Vec<_>>()
    );
}

/// A base document: a generated platform (three in four) or an example, with extra content.
fn pick_base(rng: &mut Rng, features: &Features) -> Base {
    let mut base = if rng.chance(75) {
        let setup = *rng.pick(bases::SETUPS);
        bases::generated(setup, rng)
    } else {
        rng.pick(bases::examples()).clone()
    };
    let extras = Extras {
        long_keys: features.has(Feature::LongKeys),
    };
    bases::inject(&mut base.doc, rng, extras);
    base
}

/// Runs the plain writing of `base` (and its JSON form, which must agree).
fn make_reference(base: Base) -> Result<Reference, Box<(Base, String, Finding)>> {
    let plain = style::plain(&base.doc);
    let back: Value = serde_yaml::from_str(&plain).expect("plain writing parses");
    assert!(
        check::ordered_eq(&back, &base.doc),
        "style writer bug: the plain writing of {} reads back differently",
        base.name
    );
    let run = check::run(plain.as_bytes());
    let out = match check::contract(&run).and_then(|out| {
        fuzz::typed::untouched_keep_types(plain.as_bytes(), &run.out.stdout).map(|()| out)
    }) {
        Ok(out) => out,
        Err(f) => return Err(Box::new((base, plain, f))),
    };
    let json = serde_json::to_string(&base.doc).expect("JSON");
    let json_run = check::run(json.as_bytes());
    let json_out = match check::contract(&json_run) {
        Ok(out) => out,
        Err(f) => return Err(Box::new((base, plain, f))),
    };
    let agree = match (&out, &json_out) {
        (Some(a), Some(b)) => check::compare_outputs(&check::merged(b), &check::merged(a), true),
        (None, None) => Ok(()),
        _ => Err(Finding::new(
            Failure::MissingOutput,
            "YAML and JSON inputs differ",
        )),
    }
    .and_then(|()| {
        (run.out.exit_code == json_run.out.exit_code)
            .then_some(())
            .ok_or_else(|| {
                Finding::new(
                    Failure::ExitCodeDiffers,
                    "YAML and JSON inputs: exit codes differ",
                )
            })
    });
    if let Err(mut f) = agree {
        f.detail = format!("the JSON form of the plain document: {}", f.detail);
        return Err(Box::new((base, plain, f)));
    }
    Ok(Reference {
        exit_code: run.out.exit_code,
        out,
        base,
    })
}

/// Checks one restyled writing of `r`'s document.
fn check_case(
    r: &Reference,
    style_seed: u64,
    features: &Features,
    forced: &HashSet<usize>,
) -> Result<(), Finding> {
    check_doc(&r.base.doc, r, style_seed, features, forced)
}

/// Checks one restyled writing of `doc` against the plain writing of `doc` (which is `r`'s
/// reference when `doc` is `r`'s document, else computed here: the shrinker changes `doc`).
fn check_doc(
    doc: &Value,
    r: &Reference,
    style_seed: u64,
    features: &Features,
    forced: &HashSet<usize>,
) -> Result<(), Finding> {
    let (want_out, want_code) = if doc == &r.base.doc {
        (r.out.clone(), r.exit_code)
    } else {
        let run = check::run(style::plain(doc).as_bytes());
        (check::contract(&run)?, run.out.exit_code)
    };
    let styled = style::write(doc, style_seed, features, forced);
    check::reader_agrees(styled.text.as_bytes())?;
    // The reference every path must agree with: serde_yaml's whole-document parse.
    let back: Value = serde_yaml::from_str(styled.text.trim_start_matches('\u{feff}'))
        .unwrap_or_else(|e| {
            writer_bug(
                &format!("{e}"),
                e.location().map(|l| l.line()),
                &styled.text,
            )
        });
    let back = check::merged(&back);
    let same = if styled.merges {
        *back == *doc
    } else {
        check::ordered_eq(&back, doc)
    };
    if !same {
        let first = first_difference(&back, doc, !styled.merges);
        writer_bug(
            &format!("reads back differently at {first}"),
            None,
            &styled.text,
        );
    }
    same_as_plain(styled.text.as_bytes(), !styled.merges, &want_out, want_code)
}

/// Runs the restyled `input` and compares it with the plain writing's output `want_out` and
/// exit code `want_code`: the contract, the exit code, the output (in key order when
/// `ordered`), and a second run on the output that must change no item.
fn same_as_plain(
    input: &[u8],
    ordered: bool,
    want_out: &Option<Value>,
    want_code: i32,
) -> Result<(), Finding> {
    let run = check::run(input);
    let got = check::contract(&run)?;
    fuzz::typed::untouched_keep_types(input, &run.out.stdout)?;
    if run.out.exit_code != want_code {
        return Err(Finding::new(
            Failure::ExitCodeDiffers,
            format!(
                "exit code {} where the plain document gives {want_code}\n{}",
                run.out.exit_code, run.out.stderr
            ),
        ));
    }
    match (&got, want_out) {
        (None, None) => return Ok(()),
        (Some(g), Some(w)) => {
            check::compare_outputs(&check::merged(g), &check::merged(w), ordered)?;
        }
        (None, Some(_)) => {
            return Err(Finding::new(
                Failure::MissingOutput,
                format!(
                    "no output where the plain document has one\n{}",
                    run.out.stderr
                ),
            ));
        }
        (Some(_), None) => {
            return Err(Finding::new(
                Failure::ListDiffers,
                "an output where the plain document has none",
            ));
        }
    }
    let first = got.expect("output");
    let again = check::run(&run.out.stdout);
    // The same bytes as the first output, which passed the contract above: nothing changed.
    if again.out.stdout == run.out.stdout && !again.panicked && again.out.exit_code == 0 {
        return Ok(());
    }
    let second = check::contract(&again)?
        .ok_or_else(|| Finding::new(Failure::NotIdempotent, "no output on the second run"))?;
    let items = |v: &Value| check::merged(&v["items"]).into_owned();
    let same = if ordered {
        check::ordered_eq(&items(&second), &items(&first))
    } else {
        items(&second) == items(&first)
    };
    if !same {
        return Err(Finding::new(
            Failure::NotIdempotent,
            format!(
                "the second run changed the items\n--- first ---\n{}--- second ---\n{}",
                check::yaml(&first["items"]),
                check::yaml(&second["items"])
            ),
        ));
    }
    Ok(())
}

/// Minimises a failing case (see `fuzz::shrink::document`).
fn shrink(
    r: &Reference,
    style_seed: u64,
    features: &Features,
    finding: Finding,
) -> (Value, HashSet<usize>, Finding) {
    let kind = finding.failure.clone();
    let mut still = |doc: &Value, forced: &HashSet<usize>| match check_doc(
        doc, r, style_seed, features, forced,
    ) {
        Err(f) if f.failure == kind => Some(f),
        _ => None,
    };
    let choices = |doc: &Value, forced: &HashSet<usize>| {
        style::write(doc, style_seed, features, forced)
            .choices
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    };
    fuzz::shrink::document(&r.base.doc, finding, &mut still, &choices)
}

/// `tests/fuzz-regressions/styles/`: restyled/plain pairs that `style_regressions_stay_fixed`
/// replays.
fn regression_dir() -> std::path::PathBuf {
    common::root().join("tests/fuzz-regressions/styles")
}

/// Keeps a minimised failing case as `<name>.styled.yaml` and `<name>.plain.yaml`.
fn save_regression(name: &str, styled: &str, plain: &str) {
    let dir = regression_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.styled.yaml")), styled).unwrap();
    std::fs::write(dir.join(format!("{name}.plain.yaml")), plain).unwrap();
    eprintln!("saved {}/{name}.{{styled,plain}}.yaml", dir.display());
}

/// What a failure report says: how to replay it, what failed, the minimised input.
fn report(seed: u64, case: usize, base: &Base, input: &str, finding: &Finding) -> String {
    let mut text = format!(
        "style case failed: {:?}\nreplay: FUZZ_SEED={seed:#x} FUZZ_FIRST_CASE={case} FUZZ_CASES={} (base {})\n{}\n",
        finding.failure,
        case + 1,
        base.name,
        fuzz::truncate(&finding.detail, 6_000)
    );
    let path = fuzz::failure_dir().join(format!("styles-{seed:x}-{case}.yaml"));
    std::fs::write(&path, input).unwrap();
    text.push_str(&format!(
        "--- input, minimised unless the plain writing failed ({}) ---\n{}",
        path.display(),
        fuzz::truncate(input, 6_000)
    ));
    text
}

/// A restyled document that does not read back as the document: a bug of the style writer,
/// not of the function. Writes the text to `target/fuzz-failures/` and panics.
fn writer_bug(what: &str, line: Option<usize>, text: &str) -> ! {
    let path = fuzz::failure_dir().join("style-writer-bug.yaml");
    std::fs::write(&path, text).unwrap();
    let context = line
        .map(|l| {
            text.lines()
                .enumerate()
                .skip(l.saturating_sub(8))
                .take(12)
                .map(|(n, t)| format!("{:5} | {t}\n", n + 1))
                .collect::<String>()
        })
        .unwrap_or_default();
    panic!("style writer bug: {what} ({})\n{context}", path.display());
}

/// Where two documents first differ (a path), for writer bugs.
fn first_difference(a: &Value, b: &Value, ordered: bool) -> String {
    let eq = |x: &Value, y: &Value| {
        if ordered {
            check::ordered_eq(x, y)
        } else {
            x == y
        }
    };
    match (a, b) {
        (Value::Mapping(x), Value::Mapping(y)) if ordered => {
            for ((ka, va), (kb, vb)) in x.iter().zip(y) {
                if ka != kb {
                    return format!("key {ka:?} vs {kb:?}");
                }
                if !eq(va, vb) {
                    return format!(
                        ".{}{}",
                        check::yaml(ka).trim(),
                        first_difference(va, vb, ordered)
                    );
                }
            }
            format!(": mapping of {} vs {} entries", x.len(), y.len())
        }
        (Value::Mapping(x), Value::Mapping(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    None => return format!(": extra key {k:?}"),
                    Some(vb) if !eq(va, vb) => {
                        return format!(
                            ".{}{}",
                            check::yaml(k).trim(),
                            first_difference(va, vb, ordered)
                        );
                    }
                    _ => {}
                }
            }
            format!(": mapping of {} vs {} entries", x.len(), y.len())
        }
        (Value::Sequence(x), Value::Sequence(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if !eq(p, q) {
                    return format!("[{i}]{}", first_difference(p, q, ordered));
                }
            }
            format!(": sequence of {} vs {} entries", x.len(), y.len())
        }
        _ => format!(": {a:?} vs {b:?}"),
    }
}

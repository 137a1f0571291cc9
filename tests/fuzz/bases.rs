//! The documents the suites start from: small generated platforms (the benchmark generator's
//! code, `src/bin/cutover-gen`) in every mode, phase and plan mode, the examples exactly as
//! `kpt fn eval` hands them to the function, and extra content that stresses the text paths
//! (long, multi-line and YAML-lookalike strings).

#[path = "../../src/bin/cutover-gen/generate/mod.rs"]
#[allow(dead_code)]
mod generate;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_yaml::{Mapping, Value};

use super::Rng;
use crate::common::{self, examples::TestCase};
use generate::{Config, Spec};

/// A ResourceList to fuzz, as a tree.
#[derive(Debug, Clone)]
pub struct Base {
    /// Where it comes from (`generated:announcer-cutover:seed`, `example:prepull-l2-only`).
    pub name: String,
    /// The ResourceList.
    pub doc: Value,
}

/// What a generated platform runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    AnnouncerPrepare,
    AnnouncerStopSpeaker,
    AnnouncerCutover,
    /// `announcer: metallb`: the plan only.
    AnnouncerPlan,
    Prepull,
}

pub const SETUPS: &[Setup] = &[
    Setup::AnnouncerPrepare,
    Setup::AnnouncerStopSpeaker,
    Setup::AnnouncerCutover,
    Setup::AnnouncerPlan,
    Setup::Prepull,
];

/// A small generated platform for `setup`.
pub fn generated(setup: Setup, rng: &mut Rng) -> Base {
    let seed = rng.next() % 1_000_000;
    let spec = match setup {
        Setup::Prepull => Spec {
            services: 2 + rng.below(4),
            namespaces: 1 + rng.below(2),
            pools: 1 + rng.below(2),
            l2_advertisements: 1,
            units: 8 + rng.below(5),
            config: Config::Prepull,
            seed,
            observed: false,
            pass_through: 0,
        },
        _ => {
            let pools = 2 + rng.below(5);
            Spec {
                services: 4 + rng.below(24),
                namespaces: 1 + rng.below(4),
                pools,
                l2_advertisements: 1 + rng.below(pools.min(3)),
                units: 0,
                config: if setup == Setup::AnnouncerCutover {
                    Config::AnnouncerCutover
                } else {
                    Config::Announcer
                },
                seed,
                observed: false,
                // Items no mode reads (Deployments first): the reader skips them past their
                // head, and the mutations and styles reach what skipping must check.
                pass_through: rng.below(8),
            }
        }
    };
    let text = generate::generate(&spec);
    let mut doc: Value = serde_yaml::from_str(&text).expect("generated platform parses");
    let set = |doc: &mut Value, key: &str, value: &str| {
        set_function_config(doc, key, value);
    };
    match setup {
        Setup::AnnouncerStopSpeaker => set(&mut doc, "phase", "stop-speaker"),
        Setup::AnnouncerPlan => set(&mut doc, "announcer", "metallb"),
        _ => {}
    }
    Base {
        name: format!("generated:{setup:?}:{seed}"),
        doc,
    }
}

/// Sets `spec.<key>` of the function config, both as `functionConfig` and as the item kpt
/// passes for `fn-config.yaml`.
fn set_function_config(doc: &mut Value, key: &str, value: &str) {
    let set = |fc: &mut Value| {
        if let Some(spec) = fc.get_mut("spec").and_then(Value::as_mapping_mut) {
            spec.insert(key.into(), value.into());
        }
    };
    if let Some(fc) = doc.get_mut("functionConfig") {
        set(fc);
    }
    for item in items_mut(doc) {
        let is_fc = item["apiVersion"].as_str() == Some("fn.cutover.dev/v1alpha1");
        if is_fc {
            set(item);
        }
    }
}

/// The items of a ResourceList.
pub fn items_mut(doc: &mut Value) -> impl Iterator<Item = &mut Value> {
    doc.get_mut("items")
        .and_then(Value::as_sequence_mut)
        .into_iter()
        .flatten()
}

/// Every example package (and `examples/quickstart/resourcelist.yaml`) as the function sees it
/// under `kpt fn eval` (`--fn-config`, or `-- key=value` when `.expected/config.yaml` has
/// `args`): captured once per test binary by running the real kpt with an exec function that
/// copies its stdin to a file.
pub fn examples() -> &'static [Base] {
    static EXAMPLES: OnceLock<Vec<Base>> = OnceLock::new();
    EXAMPLES.get_or_init(capture_examples)
}

fn capture_examples() -> Vec<Base> {
    let work = common::root().join("target/fuzz-kpt");
    std::fs::create_dir_all(&work).unwrap();
    let tmp = tempfile::tempdir_in(&work).unwrap();
    let dump = tmp.path().join("dump.sh");
    let out = tmp.path().join("dumped.yaml");
    std::fs::write(
        &dump,
        format!("#!/bin/sh\ncat > '{0}'\ncat '{0}'\n", out.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dump, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut bases = Vec::new();
    for dir in common::examples::examples() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        // kpt takes half a second per package: its capture is kept per package content.
        let cached = work.join(format!("{name}-{:016x}.yaml", content_hash(&dir)));
        if let Ok(text) = std::fs::read_to_string(&cached) {
            bases.push(Base {
                name: format!("example:{name}"),
                doc: serde_yaml::from_str(&text).expect("cached capture parses"),
            });
            continue;
        }
        let copy = tmp.path().join(dir.file_name().unwrap());
        common::copy_dir(&dir, &copy);
        let mut cmd = common::kpt();
        cmd.env("TMPDIR", tmp.path())
            .args(["fn", "eval"])
            .arg(&copy)
            .arg("--exec")
            .arg(&dump)
            .args(["-o", "stdout"]);
        let args = common::examples::key_values(&TestCase::load(&dir).config.args);
        if args.is_empty() {
            cmd.arg("--fn-config").arg(copy.join("fn-config.yaml"));
        } else {
            cmd.arg("--").args(&args);
        }
        let run = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run kpt (needed for the examples): {e}"));
        assert!(
            run.status.success(),
            "kpt fn eval {}: {}",
            dir.display(),
            String::from_utf8_lossy(&run.stderr)
        );
        let text = std::fs::read_to_string(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        std::fs::write(&cached, &text).unwrap();
        bases.push(Base {
            name: format!("example:{}", dir.file_name().unwrap().to_string_lossy()),
            doc: serde_yaml::from_str(&text).expect("kpt's ResourceList parses"),
        });
    }
    let quickstart = common::root().join("examples/quickstart/resourcelist.yaml");
    bases.push(Base {
        name: "example:quickstart".into(),
        doc: serde_yaml::from_str(&std::fs::read_to_string(quickstart).unwrap()).unwrap(),
    });
    bases
}

/// A hash of every file under `dir` (paths and contents).
fn content_hash(dir: &Path) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    let mut h = DefaultHasher::new();
    for f in files {
        f.strip_prefix(dir).unwrap().hash(&mut h);
        std::fs::read(&f).unwrap().hash(&mut h);
    }
    h.finish()
}

/// Strings that trip text-based YAML handling: YAML lookalikes, quotes, comment and document
/// markers, leading/trailing blanks, tabs, non-ASCII, and what other YAML 1.1 readers take for
/// booleans, numbers or null.
pub const TRICKY: &[&str] = &[
    "items:\n- kind: Fake\n  metadata:\n    name: evil\n",
    "a: b\n",
    "line one\nline two: with colon\n",
    "- kind: Fake\n",
    "functionConfig:\n  kind: Nope\n",
    "results:\n- message: forged\n",
    "héllo ✓ 日本語",
    "  leading spaces",
    "trailing spaces  ",
    "tab\tinside",
    "\tleading tab",
    "key:\tvalue",
    "quote ' and \" both",
    "# not a comment",
    "---\nnot a new document",
    "...",
    "---",
    "on",
    "yes",
    "0755",
    "1e3",
    "2026-01-01",
    "~",
    "null",
    "true",
    "key: value # hash",
    "",
    "\n",
    "x\n\n\n",
    "\nleading newline",
    "*alias",
    "&anchor",
    "!tag",
    "%percent",
    "@at",
    "{flow: like}",
    "[a, b]",
    "<<",
    "- ",
    ": colon",
    "a\n  indented\nb",
    "sp ace\n\n  more  spaces \nend",
];

/// A tricky string: one of [`TRICKY`], a long run of words (over 1024 characters), or a few
/// joined.
pub fn tricky_string(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => {
            let len = 1030 + rng.below(2000);
            long_words(rng, len)
        }
        1 => {
            let n = 2 + rng.below(3);
            (0..n)
                .map(|_| *rng.pick(TRICKY))
                .collect::<Vec<_>>()
                .join(if rng.chance(50) { "\n" } else { " " })
        }
        _ => (*rng.pick(TRICKY)).to_owned(),
    }
}

/// Words separated by single spaces, `len` bytes or a little more.
pub fn long_words(rng: &mut Rng, len: usize) -> String {
    const WORDS: &[&str] = &[
        "metallb", "cilium", "pool", "speaker", "announce", "lease", "node", "kind:", "items", "x",
        "ARP", "frr-k8s", "value", "sylva", "--", "a'b", "c\"d",
    ];
    let mut s = String::new();
    while s.len() < len {
        if !s.is_empty() {
            s.push(' ');
        }
        let word = WORDS[rng.below(WORDS.len())];
        s.push_str(word);
    }
    s
}

/// A copy of a random node (a scalar or a small collection) of a random item.
fn random_value(items: &[Value], rng: &mut Rng) -> Option<Value> {
    let mut node = items.get(rng.below(items.len().max(1)))?;
    for _ in 0..(1 + rng.below(5)) {
        let next = match node {
            Value::Mapping(m) if !m.is_empty() => m.values().nth(rng.below(m.len())),
            Value::Sequence(s) if !s.is_empty() => s.get(rng.below(s.len())),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    let small = serde_yaml::to_string(node).is_ok_and(|t| t.len() < 400);
    small.then(|| node.clone())
}

/// Adds `fuzzTyped`, values the style writer may spell as go-yaml reads another type (see
/// `style::scalar::TYPED_PLAIN`, `1e3`, `.5`, `+1`, `0o17`, `0x1F`), to the values of a
/// HelmRelease (the announcer edits Cilium's) or to a random item.
fn typed_values(items: &mut [Value], rng: &mut Rng) {
    if items.is_empty() {
        return;
    }
    let mut m = Mapping::new();
    let strings = super::style::scalar::TYPED_PLAIN
        .iter()
        .chain(super::style::scalar::TYPED_BINARY)
        .chain(super::style::scalar::TYPED_TIMESTAMP);
    for (i, s) in strings.enumerate() {
        if rng.chance(60) {
            m.insert(format!("s{i}").into(), (*s).into());
        }
    }
    m.insert("octal".into(), 15.into());
    m.insert("hex".into(), 31.into());
    m.insert("exp".into(), 1000.0.into());
    m.insert("half".into(), 0.5.into());
    m.insert("one".into(), 1.into());
    m.insert("0644".into(), "mode".into());
    m.insert(
        "list".into(),
        Value::Sequence(vec!["0644".into(), "=".into(), 8.into()]),
    );
    let releases: Vec<usize> = (0..items.len())
        .filter(|&i| {
            items[i].get("kind").and_then(Value::as_str) == Some("HelmRelease")
                && items[i]
                    .get("spec")
                    .and_then(|s| s.get("values"))
                    .is_some_and(Value::is_mapping)
        })
        .collect();
    let target = if !releases.is_empty() && rng.chance(70) {
        items[*rng.pick(&releases)]
            .get_mut("spec")
            .and_then(|s| s.get_mut("values"))
            .and_then(Value::as_mapping_mut)
    } else {
        let i = rng.below(items.len());
        items[i].as_mapping_mut()
    };
    if let Some(target) = target {
        target.insert("fuzzTyped".into(), Value::Mapping(m));
    }
}

/// What [`inject`] may add.
#[derive(Debug, Clone, Copy)]
pub struct Extras {
    /// Keys longer than 1024 characters (YAML's limit for implicit keys).
    pub long_keys: bool,
}

/// Adds content the generated platforms and examples lack: a ConfigMap full of tricky strings
/// (sometimes the last item, right before `functionConfig`) and a `fuzz.cutover.dev/note`
/// annotation with a tricky value on some items (Services included, whose annotations the
/// announcer rewrites).
pub fn inject(doc: &mut Value, rng: &mut Rng, extras: Extras) {
    let Some(items) = doc.get_mut("items").and_then(Value::as_sequence_mut) else {
        return;
    };
    if rng.chance(60) {
        let mut data = Mapping::new();
        for i in 0..(1 + rng.below(6)) {
            data.insert(format!("k{i}").into(), tricky_string(rng).into());
        }
        // Copies of values from other items: the same value in two items is what an alias
        // across items is made of.
        for i in 0..rng.below(4) {
            if let Some(v) = random_value(items, rng) {
                data.insert(format!("copy{i}").into(), v);
            }
        }
        if extras.long_keys && rng.chance(30) {
            data.insert(long_words(rng, 1100).replace(' ', "-").into(), "v".into());
        }
        let name = format!("fuzz-data-{}", rng.below(1000));
        let mut cm: Value = serde_yaml::from_str(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n  annotations:\n    config.kubernetes.io/index: '0'\n    config.kubernetes.io/path: 'fuzz/{name}.yaml'\n    internal.config.kubernetes.io/index: '0'\n    internal.config.kubernetes.io/path: 'fuzz/{name}.yaml'\n"
        ))
        .unwrap();
        cm.as_mapping_mut()
            .unwrap()
            .insert("data".into(), Value::Mapping(data));
        let at = if rng.chance(50) {
            items.len()
        } else {
            rng.below(items.len() + 1)
        };
        items.insert(at, cm);
    }
    if rng.chance(60) {
        typed_values(items, rng);
    }
    if rng.chance(50) {
        let notes = 1 + rng.below(6);
        for _ in 0..notes {
            if items.is_empty() {
                break;
            }
            let i = rng.below(items.len());
            let note = tricky_string(rng);
            if let Some(meta) = items[i].get_mut("metadata").and_then(Value::as_mapping_mut) {
                let annotations = meta
                    .entry("annotations".into())
                    .or_insert_with(|| Value::Mapping(Mapping::new()));
                if let Some(a) = annotations.as_mapping_mut() {
                    a.insert("fuzz.cutover.dev/note".into(), note.into());
                }
            }
        }
    }
}

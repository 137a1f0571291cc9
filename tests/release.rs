//! The memory-lean path of the engine (items released while they are parsed, patches applied to
//! their text, output streamed) must give exactly the items of the plain path (every item kept
//! as a tree, edits applied to the trees, every changed item emitted).
//!
//! The reference is built from the library's parts with every tree kept: `io::parse_text`,
//! `modes::run`, `apply::apply`. The lean path is the function as shipped (`cutover::process`).
//! Both outputs are read back and compared item by item as YAML text, so values, key order and
//! item order must all agree.

mod common;
#[path = "../src/bin/cutover-gen/generate/mod.rs"]
#[allow(dead_code)]
mod generate;

use cutover::krm::{apply, io};
use cutover::{config, modes};
use generate::{Config, Spec};
use serde_yaml::Value;

/// Items of an output ResourceList, each as YAML text (key order kept).
fn item_texts(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| serde_yaml::to_string(i).unwrap())
        .collect()
}

/// The reference: every tree kept, edits applied to the trees.
fn reference(input: &str) -> (Vec<String>, usize) {
    let list = io::parse_text(input).expect("input parses");
    assert!(list.released.is_empty(), "the plain parse keeps every tree");
    let fc = list.function_config.as_ref();
    let cfg = config::parse(fc).expect("config");
    let outcome = modes::run(&cfg, &list.items, fc);
    assert!(!outcome.has_errors(), "{:?}", outcome.results);
    let mut items = list.items.clone();
    apply::apply(&mut items, outcome.edits).expect("edits apply");
    (item_texts(&items), outcome.results.len())
}

/// The function as shipped; also returns how many items its parse released.
fn lean(input: &str) -> (Vec<String>, usize, usize) {
    let (list, _) = io::parse_text_observed(input, modes::prepare).expect("input parses");
    let released = list.released.len();
    let out = cutover::process(input.as_bytes());
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let back = io::parse_text(&text).expect("output parses");
    let results = serde_yaml::from_str::<Value>(&text).unwrap()["results"]
        .as_sequence()
        .map_or(0, Vec::len);
    (item_texts(&back.items), released, results)
}

fn platform(services: usize, config: Config, seed: u64) -> String {
    platform_with(services, 0, config, seed)
}

/// A platform with `pass_through` items no mode reads (Deployments, ConfigMaps, other charts'
/// HelmReleases and CRDs).
fn platform_with(services: usize, pass_through: usize, config: Config, seed: u64) -> String {
    generate::generate(&Spec {
        services,
        namespaces: 12,
        pools: 8,
        l2_advertisements: 4,
        units: 0,
        config,
        seed,
        observed: false,
        pass_through,
    })
}

#[test]
fn released_and_text_patched_items_equal_the_tree_path() {
    for (config, seed) in [
        (Config::Announcer, 3),
        (Config::AnnouncerCutover, 4),
        (Config::AnnouncerCutover, 9),
    ] {
        let input = platform(600, config, seed);
        let (want, want_results) = reference(&input);
        let (got, released, got_results) = lean(&input);
        assert!(released >= 600, "every Service is released, got {released}");
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "item {i} differs");
        }
        assert_eq!(got_results, want_results);
    }
}

/// Items the announcer neither reads nor edits (all but its HelmReleases here) are released
/// too, and the output is still the tree path's.
#[test]
fn items_no_mode_reads_are_released_and_equal_the_tree_path() {
    let input = platform_with(300, 400, Config::AnnouncerCutover, 5);
    let (want, want_results) = reference(&input);
    let (got, released, got_results) = lean(&input);
    // 300 Services and, of the 400 others, all but the 40 HelmReleases of other charts.
    assert!(released >= 300 + 360, "released {released}");
    assert_eq!(got, want);
    assert_eq!(got_results, want_results);
}

/// JSON input has no item texts: nothing is released, every tree is kept and patched, and the
/// items are the same as for the YAML input.
#[test]
fn json_input_keeps_every_tree_and_gives_the_same_items() {
    let yaml = platform(200, Config::AnnouncerCutover, 5);
    let value: Value = serde_yaml::from_str(&yaml).unwrap();
    let json = serde_json::to_string(&value).unwrap();
    let (list, _) = io::parse_text_observed(&json, modes::prepare).unwrap();
    assert!(list.released.is_empty());
    let (from_yaml, _, _) = lean(&yaml);
    let (from_json, _, _) = lean(&json);
    assert_eq!(from_json, from_yaml);
}

/// Services in layouts the text patch declines (flow-style labels) are parsed again and patched
/// as trees, next to ones it takes (a comment in metadata): same items as the reference.
#[test]
fn odd_layouts_fall_back_to_the_tree() {
    let input = platform(120, Config::AnnouncerCutover, 6);
    // Put every tenth Service's labels in flow style (the text patch declines them) and a
    // comment into another's metadata (the recorded positions make that one fine).
    let mut odd = String::new();
    let mut seen = 0usize;
    let mut flow: Option<Vec<String>> = None;
    for line in input.lines() {
        if let Some(entries) = &mut flow {
            if let Some(entry) = line.strip_prefix("      ") {
                entries.push(entry.to_owned());
                continue;
            }
            odd.push_str(&format!("    labels: {{{}}}\n", entries.join(", ")));
            flow = None;
        }
        if line == "  kind: Service" {
            seen += 1;
        }
        if line == "    labels:" && seen % 10 == 1 {
            flow = Some(Vec::new());
            continue;
        }
        if line == "    labels:" && seen % 10 == 2 {
            odd.push_str("    # a comment in metadata\n");
        }
        odd.push_str(line);
        odd.push('\n');
    }
    assert_ne!(odd, input);
    let (want, _) = reference(&odd);
    let (got, released, _) = lean(&odd);
    assert!(released > 0);
    assert_eq!(got, want);
    // The fallback was taken: some Service with flow-style labels got the pool label (a label
    // patch the text patch declines).
    let before = io::parse_text(&odd).unwrap().items;
    let services = before
        .iter()
        .zip(&want)
        .filter(|(b, _)| b["kind"] == "Service");
    let flow_labelled = services
        .enumerate()
        // The Services whose labels were put in flow style above (1-based count % 10 == 1).
        .filter(|(n, _)| (n + 1) % 10 == 1)
        .filter(|(_, (b, after))| {
            after.contains("cutover.dev/address-pool")
                && !serde_yaml::to_string(b)
                    .unwrap()
                    .contains("cutover.dev/address-pool")
        })
        .count();
    assert!(flow_labelled > 0, "no label patch hit an odd layout");
}

/// Rewrites `input` line by line: `f(line, services_seen)` returns the lines to write instead.
fn rewrite(input: &str, mut f: impl FnMut(&str, usize) -> Vec<String>) -> String {
    let mut out = String::new();
    let mut services = 0usize;
    for line in input.lines() {
        if line == "  kind: Service" {
            services += 1;
        }
        for l in f(line, services) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// Layouts the parser's marks prove (comments inside the maps, CRLF, a byte order mark) are
/// patched as text; forms they do not cover (merge keys, aliases to other items) fall back to
/// the tree. Either way the items equal the all-trees path.
#[test]
fn event_proven_layouts_and_fallbacks_equal_the_tree_path() {
    let input = platform(160, Config::AnnouncerCutover, 11);
    let comments = rewrite(&input, |line, _| match line {
        "    annotations:" => vec![
            line.into(),
            "      # orchestrator and user annotations".into(),
        ],
        l if l.starts_with("      app.kubernetes.io/name: ") => vec![format!("{l}   # the app")],
        l => vec![l.into()],
    });
    let merges = rewrite(&input, |line, n| match line {
        "    annotations:" if n % 5 == 0 => vec![
            line.into(),
            "      <<: {zz.example.com/merged: \"yes\"}".into(),
        ],
        l => vec![l.into()],
    });
    let mut anchored = false;
    let aliases = rewrite(&input, |line, _| match line {
        "    namespace: tenant-00000" if !anchored => {
            anchored = true;
            vec!["    namespace: &tenant0 tenant-00000".into()]
        }
        "    namespace: tenant-00000" => vec!["    namespace: *tenant0".into()],
        l => vec![l.into()],
    });
    let crlf = input.replace('\n', "\r\n");
    let bom = format!("\u{feff}{input}");
    for (name, text, all_released) in [
        ("comments", &comments, true),
        ("merge keys", &merges, true),
        ("aliases", &aliases, false),
        ("crlf", &crlf, true),
        ("bom", &bom, true),
    ] {
        assert_ne!(text, &input, "{name}");
        let (want, want_results) = reference(text);
        let (got, released, got_results) = lean(text);
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{name}: item {i} differs");
        }
        assert_eq!(got_results, want_results, "{name}");
        if all_released {
            assert!(released >= 160, "{name}: {released} released");
        } else {
            // The Services aliasing the first one's anchor keep their trees.
            assert!(
                released > 0 && released < 160,
                "{name}: {released} released"
            );
        }
    }
    // The comments survive in every patched Service: the text patch was taken, not the tree.
    let out = String::from_utf8(cutover::process(comments.as_bytes()).stdout).unwrap();
    // (Pools, advertisements and the MetalLB release are removed, the Cilium release replaced.)
    assert!(
        out.matches("      # orchestrator and user annotations\n")
            .count()
            >= 160
    );
    assert!(out.matches("   # the app\n").count() >= 160);
    // The merged annotation is in the output, as kubectl would read it.
    let (merged, _, _) = lean(&merges);
    assert!(merged.iter().any(|i| i.contains("zz.example.com/merged")));
}

/// `base` with `extra` items put first in its item list.
fn with_items(base: &str, extra: &str) -> String {
    base.replacen("\nitems:\n", &format!("\nitems:\n{extra}"), 1)
}

/// A Deployment (a kind the announcer does not read) with `rest` after its metadata.
fn deployment(name: &str, rest: &str) -> String {
    format!(
        "- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: {name}\n    namespace: apps\n{rest}"
    )
}

/// A CustomResourceDefinition named `name` of API group `group`, with a schema.
fn crd(name: &str, group: &str) -> String {
    format!(
        "- apiVersion: apiextensions.k8s.io/v1\n  kind: CustomResourceDefinition\n  metadata:\n    name: {name}\n  spec:\n    names: {{kind: Widget, plural: widgets}}\n    scope: Namespaced\n    versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema: {{type: object, properties: {{spec: {{type: object}}}}}}\n    group: {group}\n"
    )
}

/// Items skipped past their head (`apiVersion`, `kind`, `metadata`) give the tree path's output;
/// what skipping cannot check makes the reader build every item instead, and an input error
/// is the same error either way. Each case gives how many more items than the base it skips
/// (`None`: the read falls back to building every item).
#[test]
fn skipped_items_equal_the_tree_path_and_refusals_build_everything() {
    let base = platform(20, Config::AnnouncerCutover, 7);
    let base_skipped = common::lean_read::skipped(&base).unwrap();
    let deep = format!("  spec:\n{}", nested(140));
    let cases: Vec<(&str, String, Option<usize>)> = vec![
        ("plain", deployment("a", "  spec:\n    replicas: 2\n    selector: {matchLabels: {app: a}}\n"), Some(1)),
        ("flow and block scalars", deployment("b", "  spec: {a: [1, 2.5, x], b: {c: \"q\"}}\n  data: |\n    text\n    more\n"), Some(1)),
        ("two", deployment("c", "  spec: {}\n") + &deployment("d", "  status: {x: y}\n"), Some(2)),
        ("kind after spec", "- apiVersion: apps/v1\n  metadata: {name: e}\n  spec: {replicas: 1}\n  kind: Deployment\n".into(), Some(0)),
        ("local config", "- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: f\n    annotations: {config.kubernetes.io/local-config: \"true\"}\n  spec: {a: 1}\n".into(), Some(0)),
        ("MetalLB's own", "- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: controller\n    labels: {app: metallb}\n  spec: {a: 1}\n".into(), Some(0)),
        ("a CRD, spec.group read alone", crd("widgets.example.com", "example.com"), Some(1)),
        ("a MetalLB CRD, read whole", crd("ipaddresspools.metallb.io", "metallb.io"), Some(0)),
        ("a CRD of MetalLB's group named otherwise", crd("pools.example.com", "metallb.io"), Some(1)),
        ("anchor in the skipped part", deployment("g", "  spec: {a: &x 1}\n"), None),
        ("alias in the skipped part", deployment("h", "  spec: {a: &x 1}\n") + &deployment("i", "  spec: {b: *x}\n"), None),
        ("merge key", deployment("j", "  spec:\n    <<: {a: 1}\n"), None),
        ("tag", deployment("k", "  spec: {replicas: !!int 2}\n"), None),
        ("key that is not a string", deployment("l", "  spec: {1: a}\n"), None),
        ("duplicate keys read as numbers", deployment("m", "  spec: {1: a, 0x1: b}\n"), None),
        ("duplicate key", deployment("n", "  spec:\n    a: 1\n    b: 2\n    a: 3\n"), None),
        ("duplicate quoted key", deployment("o", "  spec: {\"a\": 1, a: 2}\n"), None),
        ("duplicate top-level key", deployment("p", "  spec: {}\n  spec: {}\n"), None),
        ("duplicate head key after the skip", deployment("q", "  spec: {}\n  kind: Secret\n"), None),
        ("integer beyond 64 bits", deployment("r", "  spec: {replicas: 123456789012345678901234567890}\n"), None),
        ("too deep", deployment("s", &deep), None),
        ("alias in the head", "- apiVersion: v1\n  kind: Secret\n  metadata: &m {name: t}\n  data: {}\n- apiVersion: v1\n  kind: Secret\n  metadata: *m\n  data: {}\n".into(), None),
    ];
    for (name, extra, more) in cases {
        let input = with_items(&base, &extra);
        if !common::lean_read::check_items_read_in_part(name, &input, base_skipped, more) {
            continue;
        }
        let (want, want_results) = reference(&input);
        let (got, _, got_results) = lean(&input);
        assert_eq!(got, want, "{name}: output");
        assert_eq!(got_results, want_results, "{name}: results");
    }
}

/// A CustomResourceDefinition is read for its `spec.group` alone unless it is named as a MetalLB
/// CRD: in every phase (phase `stop-speaker` marks the MetalLB installation's items, phase
/// `cutover` removes them) the output equals the tree path's, for a CRD of MetalLB's group named
/// otherwise too.
#[test]
fn crds_read_for_their_group_give_the_tree_paths_output_in_every_phase() {
    let base = platform(20, Config::AnnouncerCutover, 11);
    // The function config, as an item and as the list's `functionConfig`.
    assert_eq!(base.matches("    phase: cutover\n").count(), 2);
    // MetalLB's and Cilium's CRDs as their projects render them, and one no project renders.
    let crds = fixture_item("crds/metallb-ipaddresspools.yaml")
        + &fixture_item("crds/cilium-loadbalancerippools.yaml")
        + &crd("pools.example.com", "metallb.io");
    let base_skipped = common::lean_read::skipped(&base).unwrap();
    for phase in ["prepare", "stop-speaker", "cutover"] {
        let input = with_items(&base, &crds)
            .replace("    phase: cutover\n", &format!("    phase: {phase}\n"));
        // Cilium's CRD and the one named otherwise in part, MetalLB's whole.
        assert!(common::lean_read::check_items_read_in_part(
            phase,
            &input,
            base_skipped,
            Some(2)
        ));
        let (want, want_results) = reference(&input);
        let (got, _, got_results) = lean(&input);
        assert_eq!(got, want, "{phase}: output");
        assert_eq!(got_results, want_results, "{phase}: results");
    }
}

/// The document of `tests/fixtures/<path>` as an entry of a block items list.
fn fixture_item(path: &str) -> String {
    let file = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    common::indent_item(text.trim_start_matches("---\n"))
}

/// `depth` nested block mappings under `spec`.
fn nested(depth: usize) -> String {
    (0..depth)
        .map(|d| format!("{}k{d}:\n", "  ".repeat(d + 2)))
        .collect::<String>()
        + &format!("{}v: 1\n", "  ".repeat(depth + 2))
}

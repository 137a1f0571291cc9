//! The loader against serde_yaml (same values where serde_yaml is right) and against the rules
//! where it was not.

use super::*;

/// The whole document as one value.
fn load(src: &str) -> Result<Value, LoadError> {
    let mut l = Loader::new(src, expansion_limit(src.len()));
    assert!(matches!(l.next_node()?.kind, Kind::StreamStart));
    let node = l.next_node()?;
    if let Kind::StreamEnd = node.kind {
        return Ok(Value::Null);
    }
    assert!(matches!(node.kind, Kind::DocumentStart { .. }));
    let root = l.next_node()?;
    let v = l.value(root, 0)?;
    assert!(matches!(l.next_node()?.kind, Kind::DocumentEnd));
    Ok(v)
}

#[test]
fn values_equal_serde_yaml() {
    let docs = [
        "a: 1\nb: [x, 'y', \"z\", 1.5, -3, true, ~, '']\nc: {d: {e: [[]]}, f: {}}\n",
        "- |\n  lit\n  two\n- >\n  folded\n  line\n- |+\n  keep\n\n- k: |-\n    strip\n",
        "a: &x {k: v}\nb: *x\nc: [*x, *x]\n",
        "? [1, 2]\n: complex\n? {a: b}\n: m\n1: one\ntrue: t\n~: n\n",
        "t: !custom {a: 1}\nu: !scalar x\nv: !!str 12\nw: !!int '7'\nx: !!float 1\n",
        "s: \"esc \\t \\u00e9 \\x41\"\nq: 'it''s'\nm: \"multi\n  line\"\n",
        "{a: 1, b: [2, 3]}",
        "- 1\n- - 2\n  - 3\n",
        "ip: 10.0.0.1\nv: 1.27.0\noctal: 0755\nhex: 0x1F\n",
    ];
    for src in docs {
        let want: Value = serde_yaml::from_str(src).unwrap();
        let got = load(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        assert_eq!(got, want, "{src}");
    }
}

#[test]
fn duplicate_keys_are_errors_with_their_path() {
    let e = load("a:\n  b: 1\n  b: 2\n").unwrap_err();
    assert_eq!(e.message, "duplicate entry with key \"b\"");
    assert_eq!(e.path(), "a");
    assert_eq!((e.mark.line, e.mark.column), (2, 2));
}

/// Mappings gathered on the stack (up to 16 entries) and built as read (past that) give the
/// values serde_yaml gives, nested in each other, and refuse a duplicate where it is read: the
/// first duplicate, also when it is the entry that moves a mapping off the stack.
#[test]
fn mappings_of_every_size_read_and_refuse_duplicates_alike() {
    let map = |n: usize, nested: &str| {
        let mut text = String::from("{");
        for i in 0..n {
            text.push_str(&format!("k{i}: {nested}, "));
        }
        text.push_str("last: 1}");
        text
    };
    for n in [0, 1, 15, 16, 17, 40] {
        for inner in [0, 3, 16, 20] {
            let src = format!(
                "a: {}\nb: [{}]\n",
                map(n, &map(inner, "x")),
                map(inner, "y")
            );
            let want: Value = serde_yaml::from_str(&src).unwrap();
            assert_eq!(load(&src).unwrap(), want, "{n} {inner}");
        }
        for dup in 0..n {
            // Entries k0 … k(n-1), then k{dup} again, then one more.
            let mut src = String::from("m:\n");
            for i in 0..n {
                src.push_str(&format!("  k{i}: {i}\n"));
            }
            src.push_str(&format!("  k{dup}: again\n  k{dup}: third\n"));
            let e = load(&src).unwrap_err();
            assert_eq!(e.message, format!("duplicate entry with key \"k{dup}\""));
            assert_eq!((e.path().as_str(), e.mark.line), ("m", n + 1), "{n} {dup}");
        }
    }
}

#[test]
fn paths_name_keys_and_indices() {
    let e =
        load("items:\n- metadata:\n    annotations:\n      example.com/x: 18446744073709551616\n")
            .unwrap_err();
    assert_eq!(e.path(), "items[0].metadata.annotations[\"example.com/x\"]");
    assert!(e.message.contains("64 bits"), "{}", e.message);
}

#[test]
fn merge_keys_are_applied_as_kyaml_applies_them() {
    let v = load("base: &b {x: 1, y: 2}\nm:\n  y: 0\n  <<: *b\n  z: 3\n").unwrap();
    let m: Value = serde_yaml::from_str("{y: 0, z: 3, x: 1}").unwrap();
    assert_eq!(v["m"], m);
    // A list: earlier sources win; the last source's keys come first.
    let v = load("a: &a {k: a, p: 1}\nb: &b {k: b, q: 2}\nm: {<<: [*a, *b], own: o}\n").unwrap();
    let want: Value = serde_yaml::from_str("{own: o, k: a, q: 2, p: 1}").unwrap();
    assert_eq!(v["m"], want);
    assert_eq!(
        serde_yaml::to_string(&v["m"]).unwrap(),
        serde_yaml::to_string(&want).unwrap()
    );
    // Inline mappings merge too; a quoted `<<` is an ordinary key.
    let v = load("m: {<<: {a: 1}, '<<': q}\n").unwrap();
    let want: Value = serde_yaml::from_str("{'<<': q, a: 1}").unwrap();
    assert_eq!(v["m"], want);
    // Nested: a merged mapping's own merges are already applied.
    let v = load("a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b}\n").unwrap();
    let want: Value = serde_yaml::from_str("{y: 2, x: 1}").unwrap();
    assert_eq!(v["c"], want);
    for bad in [
        "m: {<<: 1}\n",
        "m: {<<: [1]}\n",
        "m: {<<: {a: 1}, <<: {b: 2}}\n",
    ] {
        let e = load(bad).unwrap_err();
        assert!(e.message.contains("merge"), "{bad}: {}", e.message);
        assert_eq!(e.path(), "m", "{bad}");
    }
}

#[test]
fn aliases_are_bounded_by_the_input_size() {
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let e = load(&bomb).unwrap_err();
    assert!(e.message.contains("repetition limit"), "{}", e.message);
    // Padding the input raises the limit by a quarter node per byte only.
    let padded = format!("{bomb}pad: [{}]\n", "1, ".repeat(200_000));
    assert!(load(&padded).is_err());
    // Ordinary use of anchors passes.
    let mut fine = String::from("d: &d {a: 1, b: [1, 2, 3]}\n");
    for i in 0..1000 {
        fine.push_str(&format!("k{i}: *d\n"));
    }
    assert!(load(&fine).is_ok());
}

#[test]
fn aliases_inside_their_anchor_and_unknown_ones_are_errors() {
    let e = load("a: &a [1, *a]\n").unwrap_err();
    assert!(e.message.contains("inside the node"), "{}", e.message);
    let e = load("a: *nope\n").unwrap_err();
    assert!(e.message.contains("unknown anchor"), "{}", e.message);
    // Redefinition: an alias names the latest definition.
    let v = load("a: &x 1\nb: *x\nc: &x 2\nd: *x\n").unwrap();
    assert_eq!((v["b"].as_u64(), v["d"].as_u64()), (Some(1), Some(2)));
}

#[test]
fn depth_counts_aliases() {
    let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    assert!(load(&format!("a: {}\n", deep(127))).is_ok());
    let e = load(&format!("a: {}\n", deep(128))).unwrap_err();
    assert!(e.message.contains("recursion limit"), "{}", e.message);
    // An alias of a 100-deep value inside a 100-deep value is 200 deep.
    let e = load(&format!(
        "a: &a {}\nb: {}\n",
        deep(100),
        deep(100).replace('1', "*a")
    ))
    .unwrap_err();
    assert!(e.message.contains("recursion limit"), "{}", e.message);
}

#[test]
fn explicit_null_of_an_empty_string_is_null() {
    let v = load("a: !!null ''\nb: !!null\n").unwrap();
    assert_eq!(v["a"], Value::Null);
    assert_eq!(v["b"], Value::Null);
}

#[test]
fn single_documents_read_with_the_same_rules() {
    use crate::krm::yaml::from_str;
    assert_eq!(from_str("").unwrap(), Value::Null);
    assert_eq!(from_str("# only\n").unwrap(), Value::Null);
    let v = from_str("\u{feff}a: &a {x: 1}\nb: {<<: *a, y: 2}\n").unwrap();
    assert_eq!(v["b"]["x"], 1);
    assert!(
        from_str("a: 1\n---\nb: 2\n")
            .unwrap_err()
            .message
            .contains("more than one")
    );
    assert!(from_str("a: [1\n").unwrap_err().syntax);
}

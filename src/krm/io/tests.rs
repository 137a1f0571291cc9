//! The one-pass reader: same values as a whole-document parse, spans that are proven (every
//! proven span reads back alone as its item), and the inputs that broke earlier readers
//! (quoted scalars closing at column 0, aliases, hostile documents).

use super::*;
use crate::krm::result::KrmResult;

const HEAD: &str = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n";

/// The items (and function config) serde_yaml reads from the whole document, when it reads it.
fn serde_items(src: &str) -> Option<(Vec<Value>, Option<Value>)> {
    let doc: Value = serde_yaml::from_str(src).ok()?;
    let items = doc.get("items")?.as_sequence()?.clone();
    let fc = doc.get("functionConfig").cloned().filter(Value::is_mapping);
    Some((items, fc))
}

/// Every proven span of `list` parses alone to exactly its item.
fn assert_spans_read_back(src: &str, list: &ResourceList) {
    for i in 0..list.items.len() {
        if let Some(span) = list.span(i) {
            let alone = parse_item(src, span)
                .unwrap_or_else(|| panic!("span of item {i} does not parse alone:\n{src}"));
            assert_eq!(alone, list.items[i], "item {i}\n{src}");
        }
    }
}

/// How many items have a proven span.
fn proven(list: &ResourceList) -> usize {
    list.item_spans.iter().flatten().count()
}

#[test]
fn one_pass_reads_what_serde_yaml_reads_and_proves_spans() {
    let fc = "functionConfig:\n  kind: X\n  data: {a: '1'}\n";
    // (input, items with a proven span)
    let cases: Vec<(String, usize)> = vec![
        // kpt layout, comments and blank lines between items, keys after the list
        (
            format!(
                "{HEAD}items:\n- kind: A\n  metadata: {{name: a}}\n# note\n\n- kind: B\n  spec:\n    ports:\n    - port: 80\n{fc}"
            ),
            2,
        ),
        // CRLF line ends
        (
            format!("{HEAD}items:\n- kind: A\n  b: 1\n- kind: B\n").replace('\n', "\r\n"),
            2,
        ),
        // flow items, block scalars with dash lines, quoted keys and values
        (
            format!(
                "{HEAD}items:\n- {{kind: A, b: [1, 2]}}\n- kind: B\n  script: |\n    - not an item\n    items:\n  'q': \"x: y\"\n"
            ),
            2,
        ),
        // an anchor used inside its own item; an alias to another item's anchor
        (
            format!("{HEAD}items:\n- kind: A\n  a: &x {{k: v}}\n  b: *x\n- kind: B\n"),
            2,
        ),
        (
            format!("{HEAD}items:\n- kind: A\n  a: &x {{k: v}}\n- kind: B\n  b: *x\n"),
            1,
        ),
        // a double-quoted scalar continuing on a column-0 `- ` line: one item, not two
        (
            format!("{HEAD}items:\n- kind: A\n  msg: \"first\n- second\"\n- kind: B\n"),
            2,
        ),
        // `items:` inside a quoted scalar of another key, the real list later
        (
            format!("{HEAD}note: \"x\nitems:\n- kind: Fake\n\"\nitems:\n- kind: Real\n"),
            1,
        ),
        (
            format!("{HEAD}note: \"x\nitems:\n- kind: Fake\n\"\nitems: []\n"),
            0,
        ),
        // an empty list, items indented under the key (not kpt's layout: no spans)
        (format!("{HEAD}items: []\n"), 0),
        (format!("{HEAD}items:\n  - kind: A\n  - kind: B\n"), 0),
        (format!("{HEAD}items: [{{kind: A}}, {{kind: B}}]\n"), 0),
        // a document end marker
        (format!("{HEAD}items:\n- kind: A\n...\n"), 1),
        // comments after the list, no newline at the end
        (format!("{HEAD}items:\n- kind: A\n# end\n#"), 1),
        (format!("{HEAD}items:\n- kind: A"), 1),
        // the function config first
        (format!("{HEAD}{fc}items:\n- kind: A\n- kind: B\n"), 2),
        // `%TAG` handles are not repeated in the output: no spans
        (
            format!("%TAG !e! tag:example.com,2000:\n---\n{HEAD}items:\n- kind: A\n  x: !e!y 1\n"),
            0,
        ),
        // deep nesting near the limit
        (
            format!(
                "{HEAD}items:\n- a: {}1{}\n",
                "[".repeat(125),
                "]".repeat(125)
            ),
            1,
        ),
    ];
    for (src, spans) in &cases {
        let list = parse(src.as_bytes()).unwrap_or_else(|e| panic!("{src}\n{e}"));
        if let Some((items, fc)) = serde_items(src) {
            assert_eq!(list.items, items, "{src}");
            assert_eq!(list.function_config, fc, "{src}");
        }
        assert_eq!(proven(&list), *spans, "{src:?}");
        assert_spans_read_back(src, &list);
    }
}

#[test]
fn invalid_documents_are_errors() {
    for (src, needle) in [
        (
            format!("{HEAD}items:\n- kind: A\n---\nkind: Other\n"),
            "more than one document",
        ),
        (
            format!("{HEAD}items:\n- kind: A\n- 3\n"),
            "items[1] is not a mapping",
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n- kind: A\n".to_owned(),
            "kind is \"List\"",
        ),
        (
            format!("{HEAD}items:\n- kind: A\n  b: [1, 2\n- kind: B\n"),
            "line",
        ),
        // a flow mapping continuing on a column-0 `- ` line
        (
            format!("{HEAD}items:\n- kind: A\n  m: {{a: 1,\n- b: 2}}\n"),
            "line 6",
        ),
        (
            format!("{HEAD}items:\n- kind: A\n  b: 1\n   c: 2\n"),
            "line",
        ),
        (format!("{HEAD}items:\n- kind: A\n  kind: B\n"), "items[0]"),
        (
            format!("{HEAD}items:\n- kind: A\nitems:\n- kind: B\n"),
            "duplicate entry",
        ),
        (
            format!(
                "{HEAD}items:\n- a: {}1{}\n",
                "[".repeat(127),
                "]".repeat(127)
            ),
            "recursion limit",
        ),
    ] {
        let e = parse(src.as_bytes()).unwrap_err().to_string();
        assert!(e.contains(needle), "{src:?}: {e}");
    }
}

/// kpt hands over a multi-line single-quoted scalar (as PyYAML writes `"a: b\n"`) with its
/// closing quote at column 0; as the last item before `functionConfig:` its text must end after
/// that line (captured from `kpt fn eval` 1.0.0-beta.56 with an exec function that tees stdin).
#[test]
fn kpt_quoted_scalar_closing_at_column_0() {
    let src = include_str!("../../../tests/fixtures/kpt-serialized/quoted-scalar-at-column-0.yaml");
    let list = parse(src.as_bytes()).unwrap();
    assert_eq!(list.items[0]["data"]["k"], "a: b\n");
    let span = list.span(0).expect("proven");
    assert!(
        src[span.clone()].ends_with("    k: 'a: b\n\n'\n"),
        "{:?}",
        &src[span]
    );
    assert_spans_read_back(src, &list);
    let texts = [Some(&src[list.span(0).unwrap()])];
    let out = write(&list.items, &texts, list.function_config.as_ref(), &[], &[]).unwrap();
    let back = parse(&out).unwrap();
    assert_eq!(back.items, list.items);
    assert_eq!(back.function_config, list.function_config);
}

/// A multi-line quoted string under-indented so that its lines look like list entries: the
/// events, not the lines, say where items start.
#[test]
fn under_indented_quoted_strings_do_not_make_items() {
    let src = format!(
        "{HEAD}items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: real}}\n  data:\n    x: \"\nitems:\n- kind: Fake\n  metadata: {{name: fake}}\n\"\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: second}}\n"
    );
    let list = parse(src.as_bytes()).unwrap();
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.items[1]["metadata"]["name"], "second");
    assert_eq!(proven(&list), 2);
    assert_spans_read_back(&src, &list);
    let first = &src[list.span(0).unwrap()];
    assert!(
        first.contains("kind: Fake") && first.ends_with("\"\n"),
        "{first}"
    );
}

/// Aliases the old text scan missed: names starting with `-`, after a tab, first in a flow
/// mapping. Each makes its item refer outside itself, so it is not copied.
#[test]
fn every_alias_form_is_seen() {
    for alias in ["*-a", "\t*-a", "{*-a : x}", "[ *-a ]"] {
        let src = format!("{HEAD}items:\n- kind: A\n  a: &-a v\n- kind: B\n  b: {alias}\n");
        let list = parse(src.as_bytes()).unwrap_or_else(|e| panic!("{src}\n{e}"));
        assert!(list.span(0).is_some(), "{src}");
        assert!(list.span(1).is_none(), "{src}");
        assert_spans_read_back(&src, &list);
        // Written out, the alias is expanded: the output reads back to the same items.
        let texts: Vec<Option<&str>> = (0..2).map(|i| list.span(i).map(|s| &src[s])).collect();
        let out = write(&list.items, &texts, None, &[], &[]).unwrap();
        assert_eq!(
            parse(&out).unwrap().items,
            list.items,
            "{}",
            String::from_utf8_lossy(&out)
        );
    }
}

/// Released items keep their span and file; items that refer outside themselves are kept.
#[test]
fn released_items_have_proven_spans_only() {
    struct ReleaseAll;
    impl Observer for ReleaseAll {
        fn observe(&mut self, _: usize, _: &Value) -> bool {
            false
        }
    }
    let src = format!(
        "{HEAD}items:\n- kind: A\n  metadata:\n    name: a\n    annotations: {{config.kubernetes.io/path: a.yaml}}\n  x: &x 1\n- kind: B\n  y: *x\n"
    );
    let (list, _) = parse_text_observed(&src, |_| ReleaseAll).unwrap();
    assert_eq!(list.released.len(), 1);
    assert_eq!(
        list.released
            .get(0)
            .and_then(Released::file)
            .map(|f| f.path),
        Some("a.yaml".to_owned())
    );
    assert_eq!(list.items[0], Value::Mapping(Mapping::new()));
    assert_eq!(list.items[1]["y"], 1);
}

/// The function config guessed from the text (kpt writes it last) must be the one the
/// document holds; when the guess is wrong the document is read again.
#[test]
fn the_function_config_guess_is_checked() {
    let seen = std::cell::RefCell::new(Vec::new());
    let make = |fc: Option<&Value>| {
        seen.borrow_mut().push(fc.cloned());
        KeepAll
    };
    let src = format!("{HEAD}items:\n- kind: A\nfunctionConfig:\n  kind: X\n");
    parse_text_observed(&src, make).unwrap();
    assert_eq!(seen.borrow().len(), 1);
    // A `functionConfig:` line inside a quoted scalar fools the guess.
    seen.borrow_mut().clear();
    let src = format!(
        "{HEAD}functionConfig:\n  kind: Real\nitems:\n- kind: A\n  s: \"\nfunctionConfig:\n  kind: Fake\n\"\n"
    );
    let list = parse_text(&src).unwrap();
    assert_eq!(list.function_config.unwrap()["kind"], "Real");
    let src = format!(
        "{HEAD}items:\n- kind: A\n  s: \"x\nfunctionConfig:\n  kind: Fake\n\"\nfunctionConfig: {{kind: Real}}\n"
    );
    let make = |fc: Option<&Value>| {
        seen.borrow_mut().push(fc.cloned());
        KeepAll
    };
    let (list, _) = parse_text_observed(&src, make).unwrap();
    assert_eq!(list.function_config.unwrap()["kind"], "Real");
    let made = seen.borrow();
    assert_eq!(
        made.last().cloned().flatten().unwrap()["kind"],
        "Real",
        "{made:?}"
    );
}

#[test]
fn byte_order_marks_and_flow_documents_are_read() {
    let yaml = format!("\u{feff}{HEAD}items:\n- kind: A\n  b: 1\n");
    let list = parse(yaml.as_bytes()).unwrap();
    assert_eq!(list.items[0]["b"], 1);
    let span = list.span(0).unwrap();
    assert_eq!(&yaml[span], "- kind: A\n  b: 1\n");
    let json = "\u{feff}{\"apiVersion\":\"config.kubernetes.io/v1\",\"kind\":\"ResourceList\",\"items\":[{\"kind\":\"A\"}]}";
    assert_eq!(parse(json.as_bytes()).unwrap().items[0]["kind"], "A");
    let flow = "{apiVersion: config.kubernetes.io/v1, kind: ResourceList, items: [{kind: A, b: !!null ''}]}";
    let list = parse(flow.as_bytes()).unwrap();
    assert_eq!(list.items[0]["b"], Value::Null);
    // JSON-looking text that is neither gets the JSON parser's message.
    let e = parse(b"{\"a\": }").unwrap_err();
    assert!(
        matches!(
            e,
            InputError::Syntax {
                line: Some(1),
                column: Some(7),
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn integers_beyond_64_bits_are_errors_in_yaml_and_json() {
    let yaml = format!("{HEAD}items:\n- kind: A\n  spec:\n    n: 18446744073709551616\n");
    let e = parse(yaml.as_bytes()).unwrap_err();
    assert!(
        matches!(&e, InputError::Invalid { path, line: Some(6), .. } if path == "items[0].spec.n"),
        "{e:?}"
    );
    assert!(e.to_string().contains("64 bits"), "{e}");
    let json = r#"{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"kind":"A","spec":{"n":-9223372036854775809}}]}"#;
    let e = parse(json.as_bytes()).unwrap_err();
    assert!(
        matches!(&e, InputError::Invalid { path, .. } if path == "items[0].spec.n"),
        "{e:?}"
    );
    // In strings and as floats they are fine.
    let json = r#"{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"kind":"A","s":"18446744073709551616","f":18446744073709551616.0}]}"#;
    assert!(parse(json.as_bytes()).is_ok());
    assert_eq!(
        long_json_integer(r#"{"a": "\"123456789012345678901"}"#),
        None
    );
}

#[test]
fn items_that_are_not_krm_resources_are_noted() {
    let src = format!(
        "{HEAD}items:\n- apiVersion: v1\n  kind: A\n  metadata: {{name: a}}\n- apiVersion: v1\n  kind: B\n  metadata:\n    annotations: {{config.kubernetes.io/path: b.yaml}}\n"
    );
    let list = parse(src.as_bytes()).unwrap();
    assert_eq!(
        list.not_krm,
        vec![NotKrm {
            index: 1,
            field: "metadata.name",
            file: Some(FileRef {
                path: "b.yaml".into(),
                index: 0
            }),
        }]
    );
    let r = list.not_krm[0].result();
    assert!(r.message.contains("items[1]") && r.message.contains("metadata.name"));
}

#[test]
fn reads_yaml_and_json_the_same() {
    let y = parse(
        b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {kind: A, b: 1}\n",
    )
    .unwrap();
    let j = parse(br#"{"apiVersion":"config.kubernetes.io/v1beta1","kind":"ResourceList","items":[{"kind":"A","b":1}]}"#)
        .unwrap();
    assert_eq!(y.items, j.items);
}

#[test]
fn keeps_key_order_and_unknown_fields() {
    let src = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- zeta: 1\n  alpha: {w: 2, x: [3, 1]}\n  kind: Weird\n";
    let rl = parse(src.as_bytes()).unwrap();
    let out = String::from_utf8(write(&rl.items, &[], None, &[], &[]).unwrap()).unwrap();
    assert_eq!(
        out,
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- zeta: 1\n  alpha:\n    w: 2\n    x:\n    - 3\n    - 1\n  kind: Weird\n"
    );
}

#[test]
fn finds_item_text_as_kpt_lays_it_out() {
    let src = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- kind: A # c\n  labels: {a: b}\n\n# between\n- kind: B\n  s: |\n    - not an item\nfunctionConfig:\n  kind: X\n";
    let rl = parse(src.as_bytes()).unwrap();
    assert_eq!(
        &src[rl.span(0).unwrap()],
        "- kind: A # c\n  labels: {a: b}\n\n# between\n"
    );
    assert_eq!(
        &src[rl.span(1).unwrap()],
        "- kind: B\n  s: |\n    - not an item\n"
    );
    let texts: Vec<Option<&str>> = (0..2).map(|i| Some(&src[rl.span(i).unwrap()])).collect();
    let out = String::from_utf8(write(&rl.items, &texts, None, &[], &[]).unwrap()).unwrap();
    assert!(out.contains("  labels: {a: b}\n"), "{out}");
    let back = parse(out.as_bytes()).unwrap();
    assert_eq!(back.items, rl.items);
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let e = parse(b"apiVersion: x\nkind: [\n").unwrap_err();
    match e {
        InputError::Syntax { line, column, .. } => {
            assert!(line.is_some() && column.is_some(), "{e:?}")
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn rejects_what_is_not_a_resource_list() {
    for (src, needle) in [
        ("", "empty"),
        ("  \n", "empty"),
        ("# only a comment\n", "not a mapping"),
        ("- a\n", "not a mapping"),
        ("kind: ConfigMap\n", "kind is \"ConfigMap\""),
        ("kind: ResourceList\n", "apiVersion is missing"),
        (
            "kind: ResourceList\napiVersion: v1\nitems: []\n",
            "apiVersion is \"v1\"",
        ),
        (
            "kind: ResourceList\napiVersion: config.kubernetes.io/v1\n",
            "items is missing",
        ),
        (
            "kind: ResourceList\napiVersion: config.kubernetes.io/v1\nitems: 3\n",
            "items is not a list",
        ),
        (
            "kind: ResourceList\napiVersion: config.kubernetes.io/v1\nitems: [3]\n",
            "items[0] is not a mapping",
        ),
    ] {
        let e = parse(src.as_bytes()).unwrap_err().to_string();
        assert!(e.contains(needle), "{src:?}: {e}");
    }
    assert_eq!(
        parse(b"a: \xff").unwrap_err(),
        InputError::NotUtf8 { offset: 3 }
    );
}

#[test]
fn hostile_documents_end_in_errors_not_crashes() {
    let deep = format!(
        "{HEAD}items:\n- a: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(matches!(
        parse(deep.as_bytes()),
        Err(InputError::Invalid { .. })
    ));
    let deep_json = format!(
        "{{\"items\": {}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(parse(deep_json.as_bytes()).is_err());
    let mut laughs = format!("{HEAD}a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        laughs.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    laughs.push_str("items: [*a11]\n");
    let e = parse(laughs.as_bytes()).unwrap_err().to_string();
    assert!(e.contains("repetition limit"), "{e}");
}

#[test]
fn keeps_existing_results_before_new_ones() {
    let rl = parse(b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n- message: earlier\n  severity: info\n").unwrap();
    let out = write(
        &rl.items,
        &[],
        None,
        &rl.results,
        &[KrmResult::warning("now")],
    )
    .unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.ends_with(
            "results:\n- message: earlier\n  severity: info\n- message: now\n  severity: warning\n"
        ),
        "{out}"
    );
}

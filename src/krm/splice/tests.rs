//! The text patch must give exactly the tree patch's item, or decline.

use serde_yaml::Value;

use super::*;
use crate::krm::io::{Observer, ResourceList, parse_item, parse_text_observed};

/// Lets every item go, so each gets its layout recorded.
struct ReleaseAll;

impl Observer for ReleaseAll {
    fn observe(&mut self, _: usize, _: &Value) -> bool {
        false
    }
}

/// `text` (one item) read in a ResourceList with its tree released.
fn read(text: &str) -> (String, ResourceList) {
    let doc = format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{text}");
    let (list, _) = parse_text_observed(&doc, |_| ReleaseAll).expect("test item parses");
    assert_eq!(&doc[list.span(0).expect("proven span")], text);
    (doc, list)
}

fn tree(text: &str) -> Value {
    parse_item(text, 0..text.len()).expect("test item parses")
}

/// Patches both ways; returns whether the text patch applied. When it did, the patched text must
/// parse to the patched tree (key order included).
fn check(text: &str, ops: &[PatchOp]) -> bool {
    let (_, list) = read(text);
    let layout = list.released.layout(0);
    if !can_patch(text, layout, ops) {
        return false;
    }
    let patched = patch_text(text, layout.unwrap(), ops)
        .unwrap_or_else(|| panic!("declined:\n{text}\n{ops:?}"));
    let mut want = tree(text);
    for op in ops {
        op.apply_to(&mut want);
    }
    let got = parse_item(&patched, 0..patched.len())
        .unwrap_or_else(|| panic!("patched text does not parse:\n{patched}"));
    assert_eq!(
        serde_yaml::to_string(&got).unwrap(),
        serde_yaml::to_string(&want).unwrap(),
        "{text}\n{ops:?}\n{patched}"
    );
    // The patched text reads back with a layout, as the next run reads it.
    let (_, again) = read(&patched);
    assert!(again.released.layout(0).is_some(), "{patched}");
    true
}

const SERVICE: &str = "\
- apiVersion: v1
  kind: Service
  metadata:
    name: web
    namespace: t1
    labels:
      app: web
    annotations:
      metallb.io/loadBalancerIPs: 10.0.0.1
      metallb.universe.tf/allow-shared-ip: 'k1'
      config.kubernetes.io/index: '3'
      config.kubernetes.io/path: 'ns/services.yaml'
  spec:
    type: LoadBalancer
    ports:
    - port: 80
      protocol: TCP
  status: {}
";

fn ops_catalogue() -> Vec<Vec<PatchOp>> {
    vec![
        vec![PatchOp::set_label("cutover.dev/address-pool", "p1")],
        vec![PatchOp::set_label("app", "other")],
        vec![PatchOp::set_annotation("lbipam.cilium.io/ips", "10.0.0.1")],
        vec![PatchOp::set_annotation(
            "metallb.io/loadBalancerIPs",
            "10.0.0.2",
        )],
        vec![PatchOp::set_annotation("odd", "yes")],
        vec![PatchOp::set_annotation("odd", "")],
        vec![PatchOp::set_annotation("with: colon", "a # b")],
        vec![
            PatchOp::set_annotation("lbipam.cilium.io/ips", "10.0.0.1"),
            PatchOp::set_annotation("lbipam.cilium.io/sharing-key", "k1"),
            PatchOp::remove_annotation("metallb.io/loadBalancerIPs"),
            PatchOp::remove_annotation("metallb.universe.tf/allow-shared-ip"),
            PatchOp::set_label("cutover.dev/address-pool", "p1"),
        ],
        vec![PatchOp::remove_annotation("absent")],
        vec![
            PatchOp::remove_annotation("metallb.io/loadBalancerIPs"),
            PatchOp::remove_annotation("metallb.universe.tf/allow-shared-ip"),
            PatchOp::remove_annotation("config.kubernetes.io/index"),
            PatchOp::remove_annotation("config.kubernetes.io/path"),
        ],
    ]
}

/// Variants of the Service's metadata, each paired with whether the text patch must apply.
fn variants() -> Vec<(String, bool)> {
    let labels = "    labels:\n      app: web\n";
    let annotations_block = "    annotations:\n      metallb.io/loadBalancerIPs: 10.0.0.1\n      metallb.universe.tf/allow-shared-ip: 'k1'\n      config.kubernetes.io/index: '3'\n      config.kubernetes.io/path: 'ns/services.yaml'\n";
    vec![
        (SERVICE.to_owned(), true),
        (SERVICE.replace(labels, ""), true),
        (SERVICE.replace(annotations_block, ""), true),
        (
            SERVICE.replace(annotations_block, "").replace(labels, ""),
            true,
        ),
        // Metadata last, metadata first.
        (SERVICE.replace("  status: {}\n", ""), true),
        (
            SERVICE
                .replacen(
                    "- apiVersion: v1\n  kind: Service\n  metadata:",
                    "- metadata:",
                    1,
                )
                .replace("  spec:", "  apiVersion: v1\n  kind: Service\n  spec:"),
            true,
        ),
        // Wider indentation, a compact list under metadata.
        (
            SERVICE.replace(
                "    labels:\n      app: web\n",
                "    finalizers:\n    - a\n    labels:\n        app: web\n",
            ),
            true,
        ),
        // Double-quoted values with escapes, an empty value.
        (
            SERVICE.replace(
                "      app: web\n",
                "      app: \"w\\\"e\\\\\"\n      empty:\n",
            ),
            true,
        ),
        // Comments and blank lines anywhere: the marks are exact, so they are fine.
        (
            SERVICE.replace(
                "      app: web\n",
                "      app: web # comment line\n      # c\n",
            ),
            true,
        ),
        (
            SERVICE.replace("    name: web\n", "    name: web\n\n"),
            true,
        ),
        (
            SERVICE.replace("  metadata:\n", "  metadata:\n    # why\n"),
            true,
        ),
        // A quoted scalar over lines that looks like metadata, before the real one.
        (
            SERVICE.replace(
                "  metadata:\n",
                "  note: \"a\n  metadata:\n    labels:\n      x: y\"\n  metadata:\n",
            ),
            true,
        ),
        // The last annotation a block scalar (kustomize writes its id annotation so), CRLF.
        (
            SERVICE.replace(
                "      config.kubernetes.io/path: 'ns/services.yaml'\n",
                "      kustomize.config.k8s.io/id: |\n        kind: Service\n        name: web\n",
            ),
            true,
        ),
        (SERVICE.replace('\n', "\r\n"), true),
    ]
}

/// Labels in forms the text patch declines (the tree patch is used for ops on them).
fn odd_labels() -> Vec<String> {
    vec![
        SERVICE.replace("    labels:\n      app: web\n", "    labels: {app: web}\n"),
        SERVICE.replace("    labels:\n      app: web\n", "    labels: ~\n"),
        SERVICE.replace("    labels:\n      app: web\n", "    labels:\n"),
        SERVICE.replace("      app: web\n", "      'app': web\n"),
        SERVICE.replace("      app: web\n", "      ? app\n      : web\n"),
        SERVICE.replace("      app: web\n", "      !!str app: web\n"),
        SERVICE.replace("    labels:\n", "    labels: &l\n"),
        SERVICE.replace("      app: web\n", "      <<: {app: web}\n"),
    ]
}

#[test]
fn text_patch_equals_tree_patch_or_declines() {
    for (text, must_apply) in variants() {
        for ops in ops_catalogue() {
            let applied = check(&text, &ops);
            if must_apply {
                assert!(applied, "declined:\n{text}\n{ops:?}");
            }
        }
    }
    for text in odd_labels() {
        for ops in ops_catalogue() {
            check(&text, &ops);
        }
    }
}

#[test]
fn odd_forms_decline_ops_on_them_only() {
    for text in odd_labels() {
        let (_, list) = read(&text);
        let layout = list.released.layout(0);
        assert!(
            !can_patch(&text, layout, &[PatchOp::set_label("app", "x")]),
            "{text}"
        );
        // The annotations are untouched by the odd labels (unless the item has anchors or
        // merge keys, which keep every map to the tree).
        if !text.contains('&') && !text.contains("<<") {
            assert!(
                can_patch(&text, layout, &[PatchOp::set_annotation("a", "x")]),
                "{text}"
            );
        }
    }
}

/// A set on a value that is not one line (a block scalar, a quoted string over lines) declines.
#[test]
fn multi_line_values_are_not_replaced() {
    for text in [
        SERVICE.replace("      app: web\n", "      app: |\n        web\n"),
        SERVICE.replace(
            "      app: web\n",
            "      app: \"web\n      metallb.io/loadBalancerIPs: x\"\n",
        ),
    ] {
        let (_, list) = read(&text);
        let layout = list.released.layout(0);
        assert!(!can_patch(&text, layout, &[PatchOp::set_label("app", "x")]));
        assert!(check(
            &text,
            &[PatchOp::Remove {
                path: vec!["metadata".into(), "labels".into(), "app".into()]
            }]
        ));
        assert!(check(&text, &[PatchOp::set_label("new", "x")]));
    }
}

/// A bare `labels:` (null) stays as it is when the annotations are patched.
#[test]
fn untouched_maps_keep_their_bytes() {
    let text = SERVICE.replace("    labels:\n      app: web\n", "    labels:\n");
    let (_, list) = read(&text);
    let ops = [PatchOp::set_annotation("lbipam.cilium.io/ips", "10.0.0.1")];
    let out = patch_text(&text, list.released.layout(0).unwrap(), &ops).unwrap();
    assert!(out.contains("    labels:\n    annotations:\n"), "{out}");
    assert!(check(&text, &ops));
}

#[test]
fn untouched_lines_keep_their_bytes() {
    let (_, list) = read(SERVICE);
    let layout = list.released.layout(0).unwrap();
    let out = patch_text(
        SERVICE,
        layout,
        &[PatchOp::set_annotation("lbipam.cilium.io/ips", "10.0.0.1")],
    )
    .unwrap();
    assert_eq!(
        out,
        SERVICE.replace(
            "      config.kubernetes.io/path: 'ns/services.yaml'\n",
            "      config.kubernetes.io/path: 'ns/services.yaml'\n      lbipam.cilium.io/ips: 10.0.0.1\n"
        )
    );
    // A set replaces the value's text only: the quotes the emitter needs, nothing else.
    let out = patch_text(SERVICE, layout, &[PatchOp::set_label("app", "on")]).unwrap();
    assert_eq!(
        out,
        SERVICE.replace("      app: web\n", "      app: \"on\"\n")
    );
    let text = SERVICE.replace("      app: web\n", "      app: web   # keep me\n");
    let (_, list) = read(&text);
    let out = patch_text(
        &text,
        list.released.layout(0).unwrap(),
        &[PatchOp::set_label("app", "x")],
    )
    .unwrap();
    assert!(out.contains("      app: x   # keep me\n"), "{out}");
}

#[test]
fn items_without_block_metadata_are_not_text_patched() {
    for text in [
        "- apiVersion: v1\n  kind: Service\n  spec: {}\n",
        "- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n",
    ] {
        let (_, list) = read(text);
        assert!(list.released.layout(0).is_none(), "{text}");
    }
    let text = "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: a\n";
    assert!(check(
        text,
        &[
            PatchOp::set_label("a", "b"),
            PatchOp::set_annotation("c", "d")
        ]
    ));
}

#[test]
fn ops_outside_metadata_maps_and_multi_line_values_decline() {
    let (_, list) = read(SERVICE);
    let layout = list.released.layout(0).unwrap();
    let ops = [
        PatchOp::Set {
            path: vec!["spec".into(), "type".into(), "x".into()],
            value: Value::from("y"),
        },
        PatchOp::Set {
            path: vec!["metadata".into(), "annotations".into()],
            value: Value::Mapping(Default::default()),
        },
        PatchOp::set_annotation("a", "two\nlines"),
        PatchOp::Set {
            path: vec!["metadata".into(), "labels".into(), "n".into()],
            value: Value::from(5),
        },
    ];
    for op in ops {
        assert!(
            patch_text(SERVICE, layout, std::slice::from_ref(&op)).is_none(),
            "{op:?}"
        );
    }
}

/// Keys a reader could take for something else are quoted, and a key longer than a simple
/// key may be is written explicitly; both read back.
#[test]
fn awkward_keys_are_written_readably() {
    let long = "k".repeat(1100);
    for key in ["<<", "on", "1.5", "a: b", long.as_str()] {
        assert!(
            check(SERVICE, &[PatchOp::set_annotation(key, "v")]),
            "{key}"
        );
    }
}

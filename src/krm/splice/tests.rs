//! The text patch must give exactly the tree patch's item, or decline.

use super::*;
use crate::krm::io::parse_item;

fn tree(text: &str) -> Value {
    parse_item(text, 0..text.len()).expect("test item parses")
}

/// Patches both ways; returns whether the text patch applied. When it did, the patched text must
/// parse to the patched tree (key order included).
fn check(text: &str, ops: &[PatchOp]) -> bool {
    let item = tree(text);
    let maps = patchable_maps(text, &item);
    if !can_patch(maps, ops) {
        return false;
    }
    // Accepted ops never fail.
    let patched = patch_text(text, ops).unwrap_or_else(|| panic!("declined:\n{text}\n{ops:?}"));
    let mut want = item.clone();
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
        // Forms the text patch declines (the tree patch is used).
        (
            SERVICE.replace("    labels:\n      app: web\n", "    labels: {app: web}\n"),
            false,
        ),
        (
            SERVICE.replace("    labels:\n      app: web\n", "    labels: ~\n"),
            false,
        ),
        (
            SERVICE.replace(
                "      app: web\n",
                "      app: web # comment line\n      # c\n",
            ),
            false,
        ),
        (
            SERVICE.replace("      app: web\n", "      'app': web\n"),
            false,
        ),
        (
            SERVICE.replace("      app: web\n", "      app: |\n        web\n"),
            false,
        ),
        (
            SERVICE.replace("    name: web\n", "    name: web\n\n"),
            false,
        ),
        (
            SERVICE.replace("  metadata:\n", "  metadata:\n    # why\n"),
            false,
        ),
        // A quoted scalar over lines that looks like entries.
        (
            SERVICE.replace(
                "      app: web\n",
                "      app: \"web\n      metallb.io/loadBalancerIPs: x\"\n",
            ),
            false,
        ),
        (
            SERVICE.replace(
                "  spec:\n",
                "  note: \"a\n  metadata:\n    labels:\n      x: y\"\n  spec:\n",
            ),
            false,
        ),
    ]
}

#[test]
fn text_patch_equals_tree_patch_or_declines() {
    for (text, must_apply) in variants() {
        for ops in ops_catalogue() {
            let applied = check(&text, &ops);
            // Every variant marked false must decline only for ops on the odd map; the ops on
            // the other map may still apply, so only the positive direction is asserted for all.
            if must_apply {
                assert!(applied, "declined:\n{text}\n{ops:?}");
            }
        }
    }
}

#[test]
fn fooling_layouts_never_pass_the_tree_check() {
    for (text, must_apply) in variants().into_iter().filter(|(_, ok)| !ok) {
        assert!(!must_apply);
        let item = tree(&text);
        let maps = patchable_maps(&text, &item);
        // The odd forms are all in or around the labels (and the metadata block).
        assert!(!maps[0], "{text}");
        assert!(
            !can_patch(maps, &[PatchOp::set_label("app", "x")]),
            "{text}"
        );
    }
}

#[test]
fn untouched_lines_keep_their_bytes() {
    let out = patch_text(
        SERVICE,
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
}

#[test]
fn items_without_metadata_are_not_text_patched() {
    let text = "- apiVersion: v1\n  kind: Service\n  spec: {}\n";
    assert_eq!(patchable_maps(text, &tree(text)), [false; 2]);
    let text = "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: a\n";
    assert_eq!(patchable_maps(text, &tree(text)), [true; 2]);
}

#[test]
fn ops_outside_metadata_maps_and_multi_line_values_decline() {
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
            patch_text(SERVICE, std::slice::from_ref(&op)).is_none(),
            "{op:?}"
        );
    }
}

#[test]
fn key_lines_are_plain_keys_only() {
    assert_eq!(key_line("a: b"), Some(("a", "b")));
    assert_eq!(key_line("a:"), Some(("a", "")));
    assert_eq!(
        key_line("metallb.io/ip:   10.0.0.1  "),
        Some(("metallb.io/ip", "10.0.0.1"))
    );
    assert_eq!(key_line("a: b: c"), Some(("a", "b: c")));
    assert_eq!(key_line("url: http://x"), Some(("url", "http://x")));
    for no in [
        "", "a", "a:b: c", "a:b", "a #x: y", "a : b", "- a: b", "'a': b", "\"a\": b", "? a", "# c",
        "{a: b}", "&x a: b",
    ] {
        assert_eq!(key_line(no), None, "{no:?}");
    }
}

//! Check 5: with the exported ConfigMaps among the items, every image the control plane and the
//! machine deployments select resolves to exactly one `os_images` entry of (A), and (B) lists its
//! sha256 as available. The chart values are those of the corrected wiring, so the answer holds
//! for the cluster as it will be once the output is applied.

use serde::Deserialize;
use serde_yaml::{Mapping, Value};

use super::check::Check;
use super::inputs::Inputs;
use super::resources::ValuesReference;
use super::selection::{self, Choice, ClusterFacts, Level};
use super::values::{self, Document, get, is_template};
use crate::krm::{KrmObject, KrmResult, Severity};

/// How sylva-capi-cluster treats a selected image whose sha256 (B) does not list. Its source
/// was not available; the change that introduced (B) says the chart "checks" that the sha256 is
/// present, which is taken to mean the render fails. Change it here.
pub const NOT_SERVED: Severity = Severity::Error;
/// A listed image with `available: false`: the os-image-server is still downloading it;
/// provisioning waits until it is served.
pub const NOT_YET_AVAILABLE: Severity = Severity::Warning;
/// Top-level key of (B)'s document (sylva-units' values schema, `capm3_os_image_server_images`).
pub const SERVED_IMAGES_KEY: &str = "capm3_os_image_server_images";
/// The sylva-units value that makes the management cluster's os-image-server serve more images.
pub const ADDITIONAL_SELECTORS_KEY: &str = "os_image_server_additional_selectors";
/// Image attributes a proposed additional selector pins (all base selector keys), in order.
const PINNED_ATTRIBUTES: [&str; 6] = [
    "os",
    "os-release",
    "flavor",
    "k8s-flavor",
    "k8s-version",
    "commit-tag",
];

/// One entry of (B): `capm3_os_image_server_images.<sha256>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ServedImage {
    /// The image has been downloaded and is served.
    #[serde(default)]
    pub available: Option<bool>,
    /// The image's key in the management cluster's `os_images`.
    #[serde(default)]
    pub image_key: Option<String>,
}

/// (B) as read from its ConfigMap: sha256 → entry. The assumption about the os-image-server
/// output's layout lives here: the document at the `valuesFrom` key (Flux's default
/// `values.yaml`, sylva-units gives none) with the map under [`SERVED_IMAGES_KEY`].
pub fn served_images(
    doc: &Document,
    item: &Value,
) -> Result<Vec<(String, ServedImage)>, KrmResult> {
    let Some(map) = doc.root.get(SERVED_IMAGES_KEY) else {
        return Ok(Vec::new());
    };
    let field = format!("{}.{SERVED_IMAGES_KEY}", doc.field);
    let entries: std::collections::BTreeMap<String, ServedImage> =
        serde_path_to_error::deserialize(map.clone()).map_err(|e| {
            KrmResult::error(format!(
                "{SERVED_IMAGES_KEY} is not a map of sha256 to {{available, image_key}}: {}",
                e.inner()
            ))
            .about(item)
            .field(format!("{field}.{}", e.path()))
            .tag("check", Check::Input)
        })?;
    Ok(entries.into_iter().collect())
}

/// The `os_image_server_additional_selectors` entry that makes the management cluster serve
/// `image`: its identifying attributes as literal (regex-quoted) selector values, the
/// diskimage-builder tag included so the same build is served; the image key alone when the
/// image has none of them.
pub fn proposed_selector(key: &str, image: &Mapping) -> Value {
    let mut selector = Mapping::new();
    for attribute in PINNED_ATTRIBUTES {
        if let Some(Value::String(v)) = image.get(attribute) {
            selector.insert(attribute.into(), selection::quote_meta(v).into());
        }
    }
    if selector.is_empty() {
        selector.insert(
            selection::IMAGE_KEY_ATTRIBUTE.into(),
            selection::quote_meta(key).into(),
        );
    }
    let mut entry = Mapping::new();
    entry.insert(key.into(), Value::Mapping(selector));
    let mut out = Mapping::new();
    out.insert(ADDITIONAL_SELECTORS_KEY.into(), Value::Mapping(entry));
    Value::Mapping(out)
}

/// What the image check needs about one `cluster` HelmRelease.
pub struct Cluster<'a> {
    /// Position of the HelmRelease.
    pub index: usize,
    /// Its namespace.
    pub namespace: Option<&'a str>,
    /// `spec.valuesFrom` as sylva-units wires it.
    pub refs: &'a [ValuesReference],
    /// Position of (A) and (B) in `refs`.
    pub positions: (usize, usize),
    /// `spec.values`.
    pub inline: Option<&'a Value>,
    /// The infrastructure provider (`capm3`).
    pub provider: &'a str,
}

fn describe(item: &Value) -> String {
    match item.namespace() {
        Some(ns) => format!("ConfigMap {ns}/{}", item.name()),
        None => format!("ConfigMap {}", item.name()),
    }
}

fn missing(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("ConfigMap {ns}/{name} is not among the items"),
        None => format!("ConfigMap {name} is not among the items"),
    }
}

/// Runs the checks; results are appended to `out`.
pub fn check(
    items: &[Value],
    inputs: &Inputs,
    cluster: &Cluster<'_>,
    out: &mut Vec<KrmResult>,
) -> Result<(), KrmResult> {
    let release = &items[cluster.index];
    let about = |r: KrmResult| r.about(release);
    let (a_ref, b_ref) = (
        &cluster.refs[cluster.positions.0],
        &cluster.refs[cluster.positions.1],
    );
    let served = served_in_b(items, inputs, cluster, &a_ref.name, b_ref, out)?;
    // (A) and the chart values.
    let Some(a_index) = inputs.config_map(cluster.namespace, &a_ref.name) else {
        out.push(about(KrmResult::warning(format!(
            "image selection not checked: {} (export it from the management cluster to check which images the control plane and machine deployments select)",
            missing(cluster.namespace, &a_ref.name)
        )))
        .field("spec.valuesFrom")
        .tag("check", Check::ImageSelection));
        return Ok(());
    };
    let root = cluster_values(items, inputs, cluster)?;
    let facts = match cluster_facts(&root) {
        Ok(facts) => facts,
        Err(what) => {
            out.push(about(KrmResult::warning(format!(
                "image selection not checked: {what} (include the rendered cluster values Secret the HelmRelease's valuesFrom names)"
            )))
            .field("spec.valuesFrom")
            .tag("check", Check::ImageSelection));
            return Ok(());
        }
    };
    let os_images = root
        .get("os_images")
        .and_then(Value::as_mapping)
        .cloned()
        .unwrap_or_default();
    if served.is_none() {
        out.push(about(KrmResult::warning(format!(
            "served images not checked: {} (export the os-image-server output to check that every selected image is served)",
            missing(cluster.namespace, &b_ref.name)
        )))
        .field(format!("spec.valuesFrom[{}]", cluster.positions.1))
        .tag("check", Check::ImageServed));
    }
    let a_name = describe(&items[a_index]);
    for level in selection::levels(&root, cluster.provider) {
        check_level(
            &level,
            &root,
            &os_images,
            &facts,
            served.as_deref(),
            &a_name,
            out,
            &about,
        );
    }
    Ok(())
}

/// (B): the images the os-image-server serves, when the ConfigMap is among the items; an error
/// result when it lacks its key or also carries `os_images` (which would override (A)).
fn served_in_b(
    items: &[Value],
    inputs: &Inputs,
    cluster: &Cluster<'_>,
    a_name: &str,
    b_ref: &ValuesReference,
    out: &mut Vec<KrmResult>,
) -> Result<Option<Vec<(String, ServedImage)>>, KrmResult> {
    let b_item = inputs.config_map(cluster.namespace, &b_ref.name);
    let mut served = None;
    if let Some(index) = b_item {
        let item = &items[index];
        match values::read_document(item, index, b_ref.key())? {
            None => out.push(
                KrmResult::error(format!(
                    "{} has no data key {}: the HelmRelease cannot read (B)",
                    describe(item),
                    b_ref.key()
                ))
                .about(item)
                .field(format!("data.{}", b_ref.key()))
                .tag("check", Check::ServedImages),
            ),
            Some(doc) => {
                if doc.root.contains_key("os_images") {
                    out.push(
                        KrmResult::error(format!(
                            "(B) {} carries os_images: merged after (A) {} it overrides the cluster's own image facts with the management cluster's, so a machine can select a checksum the server does not serve",
                            describe(item),
                            a_name
                        ))
                        .about(item)
                        .field(format!("{}.os_images", doc.field))
                        .tag("check", Check::OsImagesOverride),
                    );
                }
                served = Some(served_images(&doc, item)?);
            }
        }
    }
    Ok(served)
}

/// The values the chart renders the cluster from: the HelmRelease's values in `valuesFrom`
/// order, and the sylva values' `cluster` under them when the cluster values Secret is not
/// among the items.
fn cluster_values(
    items: &[Value],
    inputs: &Inputs,
    cluster: &Cluster<'_>,
) -> Result<Mapping, KrmResult> {
    let chart = values::chart_values(
        items,
        inputs,
        cluster.namespace,
        cluster.refs,
        cluster.inline,
    )?;
    let mut root = chart.root;
    if !root.contains_key("capi_providers") {
        // The cluster values Secret is not among the items: the sylva values' `cluster` is
        // what sylva-units puts in it.
        if let Some(sylva) = values::sylva_values(items, inputs, cluster.namespace)?
            && let Some(Value::Mapping(base)) = sylva.root.get("cluster")
        {
            let mut merged = base.clone();
            values::merge_maps(&mut merged, &root);
            root = merged;
        }
    }
    Ok(root)
}

/// `k8s_version` and the image flavor of the bootstrap provider, each with why it is unknown
/// here (a level whose selector sets the key itself does not need it). A bootstrap provider the
/// chart has no flavor for fails every selector in the chart, so nothing is checked then.
fn cluster_facts(root: &Mapping) -> Result<ClusterFacts, String> {
    let k8s_version = match get(root, &["k8s_version"]) {
        Some(Value::String(v)) if !is_template(v) && !v.is_empty() => Ok(v.clone()),
        Some(Value::String(v)) if is_template(v) => {
            Err("k8s_version is a template sylva-units has not rendered".into())
        }
        _ => Err("k8s_version is not in the cluster values".into()),
    };
    let flavor = match get(root, &["capi_providers", "bootstrap_provider"]) {
        Some(Value::String(b)) if is_template(b) => Err(
            "capi_providers.bootstrap_provider is a template sylva-units has not rendered".into(),
        ),
        Some(Value::String(b)) => match selection::k8s_flavor(b) {
            Some(flavor) => Ok(flavor.to_owned()),
            None => {
                return Err(format!(
                    "unknown bootstrap provider {b:?} (no k8s-flavor for it)"
                ));
            }
        },
        _ => Err("capi_providers.bootstrap_provider is not in the cluster values".into()),
    };
    Ok(ClusterFacts {
        k8s_version,
        flavor,
    })
}

/// The image a level selects, or `None` once the reason it has none is in `out` (explicit
/// machine images, a fact the selector needs and the items do not give, a selection the chart
/// refuses).
fn chosen(
    level: &Level,
    cluster: &Mapping,
    os_images: &Mapping,
    facts: &ClusterFacts,
    a_name: &str,
    out: &mut Vec<KrmResult>,
    about: &dyn Fn(KrmResult) -> KrmResult,
) -> Option<(String, Option<Mapping>)> {
    let what = &level.what;
    match selection::choose(level, os_images, facts) {
        Ok(Choice::Unset) => {
            out.push(
                about(KrmResult::info(format!(
                    "{what}: neither os_image_selector nor image_key is set; its machines use the explicit machine_image_* values, which are not checked against the served images"
                )))
                .field(level.field_path(cluster, "os_image_selector"))
                .tag("check", Check::ImageSelection),
            );
            None
        }
        Ok(Choice::Undecided(missing)) => {
            out.push(
                about(KrmResult::warning(format!(
                    "{what}: image selection not checked: its os_image_selector does not set {missing} and {} (include the rendered cluster values Secret the HelmRelease's valuesFrom names, or pin {missing} in the selector)",
                    facts.why_unknown(missing)
                )))
                .field(level.field_path(cluster, "os_image_selector"))
                .tag("check", Check::ImageSelection),
            );
            None
        }
        Ok(Choice::Key { key, selector }) => Some((key, selector)),
        Err(e) => {
            let mut r = about(KrmResult::error(format!(
                "{what}: {} in os_images of {a_name}{}; sylva-capi-cluster fails to render",
                e.message,
                if e.candidates.is_empty() {
                    String::new()
                } else {
                    format!(" (candidates: {})", e.candidates.join(", "))
                }
            )))
            .field(level.field_path(cluster, e.field))
            .tag("check", Check::ImageSelection);
            if let Some(s) = e.selector {
                r = r.current(Value::Mapping(*s));
            } else if let Some(k) = level.def.get("image_key") {
                r = r.current(k.clone());
            }
            out.push(r);
            None
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn check_level(
    level: &Level,
    cluster: &Mapping,
    os_images: &Mapping,
    facts: &ClusterFacts,
    served: Option<&[(String, ServedImage)]>,
    a_name: &str,
    out: &mut Vec<KrmResult>,
    about: &dyn Fn(KrmResult) -> KrmResult,
) {
    let what = &level.what;
    let Some((key, selector)) = chosen(level, cluster, os_images, facts, a_name, out, about) else {
        return;
    };
    let image = os_images
        .get(key.as_str())
        .and_then(Value::as_mapping)
        .cloned()
        .unwrap_or_default();
    let field = level.field_path(
        cluster,
        if selector.is_some() {
            "os_image_selector"
        } else {
            "image_key"
        },
    );
    let Some(sha) = image.get("sha256").and_then(Value::as_str) else {
        out.push(
            about(KrmResult::error(format!(
                "{what}: image {key} of {a_name} has no sha256; capm3 needs it to verify the download"
            )))
            .field(field)
            .current(key.clone())
            .tag("check", Check::ImageSelection),
        );
        return;
    };
    out.push(
        about(KrmResult::info(format!(
            "{what}: selects image {key} (sha256 {sha}) from {a_name}"
        )))
        .field(field.clone())
        .current(key.clone())
        .tag("check", Check::ImageSelection),
    );
    let Some(served) = served else { return };
    // Same key, other checksum on the management side: (A) wins.
    for (other_sha, entry) in served {
        if entry.image_key.as_deref() == Some(key.as_str()) && other_sha != sha {
            out.push(
                about(KrmResult::info(format!(
                    "{what}: the management cluster serves image key {key} with sha256 {other_sha}, the cluster's own os-images-info (A) says {sha}: (A) wins, the machines are provisioned with {sha}"
                )))
                .field(SERVED_IMAGES_KEY)
                .current(other_sha.clone())
                .proposed(sha.to_owned())
                .tag("check", Check::ImageContext),
            );
        }
    }
    match served.iter().find(|(s, _)| s == sha).map(|(_, e)| e) {
        Some(ServedImage {
            available: Some(true),
            ..
        }) => out.push(
            about(KrmResult::info(format!("{what}: image {key} (sha256 {sha}) is served and available")))
                .field(format!("{SERVED_IMAGES_KEY}.{sha}"))
                .tag("check", Check::ImageServed),
        ),
        Some(_) => out.push(
            about(KrmResult::new(
                NOT_YET_AVAILABLE,
                format!(
                    "{what}: image {key} (sha256 {sha}) is listed by the os-image-server but not available yet (still downloading); provisioning waits for it"
                ),
            ))
            .field(format!("{SERVED_IMAGES_KEY}.{sha}.available"))
            .current(false)
            .tag("check", Check::ImageServed),
        ),
        None => out.push(
            about(KrmResult::new(
                NOT_SERVED,
                format!(
                    "{what}: image {key} (sha256 {sha}) is not served by the management cluster's os-image-server, so metal3 would wait for a download that never matches; \
                     add the proposed entry to {ADDITIONAL_SELECTORS_KEY} in the management cluster's sylva values"
                ),
            ))
            .field(SERVED_IMAGES_KEY)
            .current(sha.to_owned())
            .proposed(proposed_selector(&key, &image))
            .tag("check", Check::ImageServed),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposed_selector_pins_the_build_with_literal_values() {
        let image: Mapping = serde_yaml::from_str(
            "{os: ubuntu, os-release: noble, flavor: plain, k8s-flavor: rke2, k8s-version: 1.31.8+rke2r1, commit-tag: 0.4.12, sha256: aa, size: '1'}",
        )
        .unwrap();
        let proposed = proposed_selector("ubuntu-noble-plain-rke2-1-31-8", &image);
        let expected: Value = serde_yaml::from_str(
            "os_image_server_additional_selectors:\n  ubuntu-noble-plain-rke2-1-31-8:\n    os: ubuntu\n    os-release: noble\n    flavor: plain\n    k8s-flavor: rke2\n    k8s-version: '1\\.31\\.8\\+rke2r1'\n    commit-tag: '0\\.4\\.12'\n",
        )
        .unwrap();
        assert_eq!(proposed, expected);
        // The proposal selects the image it was made from.
        let selector = &proposed[ADDITIONAL_SELECTORS_KEY]["ubuntu-noble-plain-rke2-1-31-8"];
        assert!(
            selection::matches(
                "ubuntu-noble-plain-rke2-1-31-8",
                &image,
                selector.as_mapping().unwrap()
            )
            .unwrap()
        );
        assert!(selection::validate(selector.as_mapping().unwrap()).is_ok());
        let bare = proposed_selector("x.y", &Mapping::new());
        assert_eq!(
            bare[ADDITIONAL_SELECTORS_KEY]["x.y"]["_os_images_key_"],
            Value::from("x\\.y")
        );
    }

    #[test]
    fn served_images_read_the_schema_layout() {
        let item: Value = serde_yaml::from_str(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  values.yaml: |\n    capm3_os_image_server_images:\n      aa: {available: true, image_key: k}\n      bb: {available: false}\n",
        )
        .unwrap();
        let doc = values::read_document(&item, 0, "values.yaml")
            .unwrap()
            .unwrap();
        let served = served_images(&doc, &item).unwrap();
        assert_eq!(served.len(), 2);
        assert_eq!(served[0].1.image_key.as_deref(), Some("k"));
        assert_eq!(served[1].1.available, Some(false));
        let bad: Value = serde_yaml::from_str(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  values.yaml: 'capm3_os_image_server_images: {aa: {available: maybe}}'\n",
        )
        .unwrap();
        let doc = values::read_document(&bad, 0, "values.yaml")
            .unwrap()
            .unwrap();
        let e = served_images(&doc, &bad).unwrap_err();
        assert!(
            e.field
                .unwrap()
                .path
                .starts_with("data.values.yaml.capm3_os_image_server_images")
        );
    }
}

//! OS image selection the way sylva-capi-cluster does it: a port of the sylva-library helpers
//! (templates/_os_images.tpl: `find-cluster-image-selectors`, `finalize-os-image-selector`,
//! `validate-selector`, `selector-matches-os-image`, `pick-os-image`, `compute-image-key`, and
//! `k8s-flavor-from-cabpX` in templates/_misc.tpl), so that cutover picks exactly the image the
//! chart will pick, or fails where the chart fails.

use regex_lite::Regex;
use serde_yaml::{Mapping, Value};

use super::values::merge_maps;

/// Selector keys sylva-library accepts without `_use_extra_keys_` (`validate-selector`).
pub const BASE_SELECTOR_KEYS: [&str; 9] = [
    "_use_extra_keys_",
    "_os_images_key_",
    "os",
    "os-release",
    "k8s-flavor",
    "k8s-version",
    "hardened",
    "commit-tag",
    "flavor",
];
/// The attribute every image has in selection: its key in `os_images`.
pub const IMAGE_KEY_ATTRIBUTE: &str = "_os_images_key_";
const EXTRA_KEYS_OPT_IN: &str = "_use_extra_keys_";
/// The selector key `finalize-os-image-selector` fills from the cluster's `k8s_version`.
pub const K8S_VERSION: &str = "k8s-version";
/// The selector key `finalize-os-image-selector` fills from the bootstrap provider.
pub const K8S_FLAVOR: &str = "k8s-flavor";
/// What a selector compares an attribute the image lacks with (`dig ... "//unset"`).
const UNSET: &str = "//unset";

/// One place in the cluster values that selects the image of a set of machines.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// `control plane` or `machine deployment <name>`.
    pub what: String,
    /// The value layers merged into `def`, most specific last (e.g. `["capm3",
    /// "control_plane.capm3"]`).
    pub layers: Vec<String>,
    /// The merged definition (`os_image_selector`, `image_key`, ...).
    pub def: Mapping,
}

impl Level {
    /// The path of the most specific layer that sets `field`, e.g. `control_plane.capm3.image_key`.
    pub fn field_path(&self, cluster: &Mapping, field: &str) -> String {
        let layer = self
            .layers
            .iter()
            .rev()
            .find(|l| {
                let path: Vec<&str> = l.split('.').collect();
                super::values::get(cluster, &path)
                    .and_then(Value::as_mapping)
                    .is_some_and(|m| m.contains_key(field))
            })
            .unwrap_or_else(|| self.layers.last().expect("a level has a layer"));
        format!("{layer}.{field}")
    }
}

fn mapping_at(root: &Mapping, path: &[&str]) -> Mapping {
    super::values::get(root, path)
        .and_then(Value::as_mapping)
        .cloned()
        .unwrap_or_default()
}

/// The levels `find-cluster-image-selectors` visits: the control plane (`<p>` under
/// `control_plane.<p>`), then every machine deployment in name order (Go ranges over map keys in
/// sorted order): `<p>` under `machine_deployment_default.<p>` under `machine_deployments.<md>.<p>`.
pub fn levels(cluster: &Mapping, provider: &str) -> Vec<Level> {
    let root = mapping_at(cluster, &[provider]);
    let mut cp = root.clone();
    merge_maps(&mut cp, &mapping_at(cluster, &["control_plane", provider]));
    let mut out = vec![Level {
        what: "control plane".into(),
        layers: vec![provider.into(), format!("control_plane.{provider}")],
        def: cp,
    }];
    let mut md_default = root;
    merge_maps(
        &mut md_default,
        &mapping_at(cluster, &["machine_deployment_default", provider]),
    );
    let mut names: Vec<&str> = cluster
        .get("machine_deployments")
        .and_then(Value::as_mapping)
        .map(|m| m.keys().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    names.sort_unstable();
    for name in names {
        let mut def = md_default.clone();
        merge_maps(
            &mut def,
            &mapping_at(cluster, &["machine_deployments", name, provider]),
        );
        out.push(Level {
            what: format!("machine deployment {name}"),
            layers: vec![
                provider.into(),
                format!("machine_deployment_default.{provider}"),
                format!("machine_deployments.{name}.{provider}"),
            ],
            def,
        });
    }
    out
}

/// `k8s-flavor-from-cabpX`: the image flavor a CAPI bootstrap provider needs.
pub fn k8s_flavor(bootstrap_provider: &str) -> Option<&'static str> {
    match bootstrap_provider {
        "cabpk" => Some("kubeadm"),
        "cabpr" => Some("rke2"),
        "cabpoa" => Some("openshift"),
        "cabpck" => Some("ck8s"),
        _ => None,
    }
}

/// `finalize-os-image-selector`: the cluster's Kubernetes version (without a leading `v`, `+`
/// escaped for the regex) and flavor, unless the selector sets them (the selector's own keys
/// win). A value the selector does not set and the cluster facts do not know is returned as the
/// selector key that could not be filled.
pub fn finalize(selector: &Mapping, facts: &ClusterFacts) -> Result<Mapping, &'static str> {
    let mut out = Mapping::new();
    let version = facts
        .k8s_version
        .as_ref()
        .map(|v| v.trim_start_matches('v').replace('+', "\\+"));
    for (key, fact) in [
        (K8S_VERSION, version.ok()),
        (K8S_FLAVOR, facts.flavor.as_ref().ok().cloned()),
    ] {
        match fact {
            Some(value) => {
                out.insert(key.into(), value.into());
            }
            None if selector.contains_key(key) => {}
            None => return Err(key),
        }
    }
    merge_maps(&mut out, selector);
    Ok(out)
}

/// `validate-selector`: base keys only (unless `_use_extra_keys_` is set), string or boolean
/// values.
pub fn validate(selector: &Mapping) -> Result<(), String> {
    let extra = selector.contains_key(EXTRA_KEYS_OPT_IN);
    for (key, value) in selector {
        let name = key.as_str().unwrap_or_default();
        if !extra && !BASE_SELECTOR_KEYS.contains(&name) {
            return Err(format!(
                "OS selector key {name:?} is not among the supported base keys ({}); sylva-capi-cluster refuses it unless _use_extra_keys_ is set",
                BASE_SELECTOR_KEYS.join(", ")
            ));
        }
        if !matches!(value, Value::String(_) | Value::Bool(_)) {
            return Err(format!(
                "OS selector value for key {name:?} is not a string or a boolean"
            ));
        }
    }
    Ok(())
}

fn as_match_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `selector-matches-os-image`: every selector value, as a regex anchored at both ends,
/// matches the image's attribute of that key (booleans compared as `true`/`false`).
pub fn matches(image_key: &str, image: &Mapping, selector: &Mapping) -> Result<bool, String> {
    for (key, value) in selector {
        let name = key.as_str().unwrap_or_default();
        if name == EXTRA_KEYS_OPT_IN {
            continue;
        }
        let pattern = as_match_text(value)
            .ok_or_else(|| format!("selector value for key {name:?} is not a string"))?;
        let candidate = if name == IMAGE_KEY_ATTRIBUTE {
            image_key.to_owned()
        } else {
            match image.get(name) {
                None => UNSET.to_owned(),
                Some(v) => as_match_text(v).ok_or_else(|| {
                    format!("OS image {image_key}: attribute {name:?} is not a string")
                })?,
            }
        };
        let re = Regex::new(&format!("^({pattern})$"))
            .map_err(|e| format!("selector value for key {name:?} is not a valid regex: {e}"))?;
        if !re.is_match(&candidate) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// How a level chose its image.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// Neither `os_image_selector` nor `image_key` is set: the machines use the explicit
    /// `machine_image_*` values, which the chart does not check against the served images.
    Unset,
    /// The selector does not set this key (`k8s-version` or `k8s-flavor`) and the cluster value
    /// that fills it is not known here: the image cannot be told.
    Undecided(&'static str),
    /// An image key, with the finalized selector that found it (if one did).
    Key {
        /// Key in `os_images`.
        key: String,
        /// The finalized selector, when `os_image_selector` chose it.
        selector: Option<Mapping>,
    },
}

/// Why a level's image cannot be chosen, as sylva-capi-cluster would fail.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectError {
    /// What went wrong.
    pub message: String,
    /// The image keys involved (the matches, or every key when nothing matched).
    pub candidates: Vec<String>,
    /// The finalized selector, if there was one.
    pub selector: Option<Box<Mapping>>,
    /// The field at fault: `os_image_selector` or `image_key`.
    pub field: &'static str,
}

/// The cluster facts selection needs: `k8s_version` and the bootstrap provider's flavor, each
/// with why it is unknown when it is (not among the items, an unrendered template).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterFacts {
    /// `k8s_version`, e.g. `v1.31.8+rke2r1`.
    pub k8s_version: Result<String, String>,
    /// `k8s-flavor` of the bootstrap provider.
    pub flavor: Result<String, String>,
}

impl ClusterFacts {
    /// Why the fact that fills selector key `key` is unknown.
    pub fn why_unknown(&self, key: &str) -> &str {
        let fact = if key == K8S_VERSION {
            &self.k8s_version
        } else {
            &self.flavor
        };
        fact.as_ref().err().map_or("", String::as_str)
    }
}

/// `compute-image-key` for one level against `os_images`, then the check that the key exists.
pub fn choose(
    level: &Level,
    os_images: &Mapping,
    facts: &ClusterFacts,
) -> Result<Choice, SelectError> {
    let fail =
        |message: String, candidates: Vec<String>, selector: Option<Mapping>, field| SelectError {
            message,
            candidates,
            selector: selector.map(Box::new),
            field,
        };
    let image_key = level.def.get("image_key").and_then(Value::as_str);
    let selector = match level.def.get("os_image_selector") {
        None | Some(Value::Null) => None,
        Some(Value::Mapping(m)) if m.is_empty() => None,
        Some(Value::Mapping(m)) => match finalize(m, facts) {
            Ok(selector) => Some(selector),
            Err(key) => return Ok(Choice::Undecided(key)),
        },
        Some(_) => {
            return Err(fail(
                "os_image_selector is not a mapping".into(),
                Vec::new(),
                None,
                "os_image_selector",
            ));
        }
    };
    let Some(selector) = selector else {
        return match image_key {
            None | Some("") => Ok(Choice::Unset),
            Some(key) if os_images.contains_key(key) => Ok(Choice::Key {
                key: key.to_owned(),
                selector: None,
            }),
            Some(key) => Err(fail(
                format!("image_key {key} is not an entry of os_images"),
                keys(os_images),
                None,
                "image_key",
            )),
        };
    };
    validate(&selector)
        .map_err(|m| fail(m, Vec::new(), Some(selector.clone()), "os_image_selector"))?;
    if os_images.is_empty() {
        return Err(fail(
            "os_images is empty".into(),
            Vec::new(),
            Some(selector),
            "os_image_selector",
        ));
    }
    let mut found = Vec::new();
    for (key, image) in os_images {
        let key = key.as_str().unwrap_or_default();
        let empty = Mapping::new();
        let attributes = image.as_mapping().unwrap_or(&empty);
        if matches(key, attributes, &selector)
            .map_err(|m| fail(m, Vec::new(), Some(selector.clone()), "os_image_selector"))?
        {
            found.push(key.to_owned());
        }
    }
    found.sort();
    match found.as_slice() {
        [key] => match image_key {
            Some(pinned) if !pinned.is_empty() && pinned != key => Err(fail(
                format!(
                    "both os_image_selector and image_key are set, but the selector picks {key} and image_key is {pinned}"
                ),
                found.clone(),
                Some(selector),
                "image_key",
            )),
            _ => Ok(Choice::Key {
                key: key.clone(),
                selector: Some(selector),
            }),
        },
        [] => Err(fail(
            "no OS image matches the selector".into(),
            keys(os_images),
            Some(selector),
            "os_image_selector",
        )),
        _ => Err(fail(
            format!(
                "one OS image is needed, but {} match the selector",
                found.len()
            ),
            found.clone(),
            Some(selector),
            "os_image_selector",
        )),
    }
}

fn keys(os_images: &Mapping) -> Vec<String> {
    let mut keys: Vec<String> = os_images
        .keys()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys
}

/// Regex-escapes a literal for a selector value (Go's `regexp.QuoteMeta`).
pub fn quote_meta(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if r"\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(src: &str) -> Mapping {
        serde_yaml::from_str(src).unwrap()
    }

    const IMAGES: &str = "\
ubuntu-noble-plain-rke2-1-31-8: {os: ubuntu, os-release: noble, flavor: plain, hardened: false, k8s-flavor: rke2, k8s-version: 1.31.8+rke2r1, sha256: aa}
ubuntu-noble-hardened-rke2-1-31-8: {os: ubuntu, os-release: noble, flavor: hardened, hardened: true, k8s-flavor: rke2, k8s-version: 1.31.8+rke2r1, sha256: bb}
opensuse-15-6-plain-rke2-1-31-8: {os: opensuse, os-release: '15.6', flavor: plain, k8s-flavor: rke2, k8s-version: 1.31.8+rke2r1, sha256: cc}
";

    fn facts() -> ClusterFacts {
        ClusterFacts {
            k8s_version: Ok("v1.31.8+rke2r1".into()),
            flavor: Ok("rke2".into()),
        }
    }

    fn level(def: &str) -> Level {
        Level {
            what: "control plane".into(),
            layers: vec!["capm3".into()],
            def: map(def),
        }
    }

    #[test]
    fn finalize_injects_version_and_flavor_unless_set() {
        let s = finalize(&map("os: ubuntu"), &facts()).unwrap();
        assert_eq!(
            s,
            map("k8s-version: '1.31.8\\+rke2r1'\nk8s-flavor: rke2\nos: ubuntu\n")
        );
        let kubeadm = ClusterFacts {
            k8s_version: Ok("v1.31.8".into()),
            flavor: Ok("kubeadm".into()),
        };
        let s = finalize(&map("k8s-version: 1.30.*"), &kubeadm).unwrap();
        assert_eq!(s.get("k8s-version"), Some(&Value::from("1.30.*")));
        // Unknown facts: the selector's own keys stand in; otherwise the key is reported.
        let unknown = ClusterFacts {
            k8s_version: Err("k8s_version is a template".into()),
            flavor: Err("no bootstrap provider".into()),
        };
        assert_eq!(
            finalize(
                &map("{k8s-version: '1\\.31\\..*', k8s-flavor: rke2}"),
                &unknown
            )
            .unwrap(),
            map("{k8s-version: '1\\.31\\..*', k8s-flavor: rke2}")
        );
        assert_eq!(finalize(&map("os: ubuntu"), &unknown), Err(K8S_VERSION));
        assert_eq!(
            finalize(&map("k8s-version: '1\\.31\\..*'"), &unknown),
            Err(K8S_FLAVOR)
        );
        assert_eq!(unknown.why_unknown(K8S_FLAVOR), "no bootstrap provider");
    }

    #[test]
    fn selectors_are_anchored_regexes_and_booleans_compare_as_text() {
        let image = map("{os: ubuntu, hardened: false}");
        assert!(matches("k", &image, &map("os: ubunt.")).unwrap());
        assert!(!matches("k", &image, &map("os: buntu")).unwrap());
        assert!(matches("k", &image, &map("hardened: false")).unwrap());
        assert!(matches("k", &image, &map("hardened: 'false'")).unwrap());
        assert!(matches("k", &image, &map("os-release: //unset")).unwrap());
        assert!(matches("my-key", &image, &map("_os_images_key_: my-.*")).unwrap());
        assert!(!matches("k", &map("os-release: 15.6"), &map("os: x")).unwrap());
        assert!(matches("k", &map("os-release: 15.6"), &map("os-release: '15.6'")).is_err());
    }

    #[test]
    fn choose_picks_exactly_one_or_fails_like_the_chart() {
        let images = map(IMAGES);
        let one = choose(
            &level("os_image_selector: {os: ubuntu, flavor: plain}"),
            &images,
            &facts(),
        )
        .unwrap();
        assert!(
            matches!(one, Choice::Key { ref key, .. } if key == "ubuntu-noble-plain-rke2-1-31-8")
        );
        let many =
            choose(&level("os_image_selector: {os: ubuntu}"), &images, &facts()).unwrap_err();
        assert_eq!(
            many.candidates,
            vec![
                "ubuntu-noble-hardened-rke2-1-31-8",
                "ubuntu-noble-plain-rke2-1-31-8"
            ]
        );
        let none =
            choose(&level("os_image_selector: {os: debian}"), &images, &facts()).unwrap_err();
        assert_eq!(none.candidates.len(), 3);
        let other_version = ClusterFacts {
            k8s_version: Ok("v1.30.12+rke2r1".into()),
            flavor: Ok("rke2".into()),
        };
        assert!(
            choose(
                &level("os_image_selector: {os: opensuse}"),
                &images,
                &other_version
            )
            .is_err()
        );
        let conflict = choose(
            &level("os_image_selector: {os: opensuse}\nimage_key: ubuntu-noble-plain-rke2-1-31-8"),
            &images,
            &facts(),
        )
        .unwrap_err();
        assert_eq!(conflict.field, "image_key");
        assert_eq!(
            choose(&level("{}"), &images, &facts()).unwrap(),
            Choice::Unset
        );
        // Without k8s_version, a selector that pins k8s-version still picks its image.
        let no_version = ClusterFacts {
            k8s_version: Err("unknown".into()),
            flavor: Ok("rke2".into()),
        };
        let pinned = choose(
            &level("os_image_selector: {os: opensuse, k8s-version: '1\\.31\\..*'}"),
            &images,
            &no_version,
        )
        .unwrap();
        assert!(
            matches!(pinned, Choice::Key { ref key, .. } if key == "opensuse-15-6-plain-rke2-1-31-8")
        );
        assert_eq!(
            choose(
                &level("os_image_selector: {os: opensuse}"),
                &images,
                &no_version
            )
            .unwrap(),
            Choice::Undecided(K8S_VERSION)
        );
        assert!(matches!(
            choose(
                &level("image_key: ubuntu-noble-plain-rke2-1-31-8"),
                &images,
                &no_version
            ),
            Ok(Choice::Key { .. })
        ));
        assert!(choose(&level("image_key: nope"), &images, &facts()).is_err());
        let bad_key = choose(
            &level("os_image_selector: {distro: ubuntu}"),
            &images,
            &facts(),
        )
        .unwrap_err();
        assert!(bad_key.message.contains("base keys"), "{}", bad_key.message);
        assert!(
            choose(
                &level("os_image_selector: {distro: ubuntu, _use_extra_keys_: true}"),
                &images,
                &facts()
            )
            .is_err()
        );
    }

    #[test]
    fn levels_merge_root_control_plane_and_machine_deployments_in_name_order() {
        let cluster = map("capm3: {os_image_selector: {os: ubuntu}}\n\
             control_plane: {capm3: {os_image_selector: {flavor: hardened}}}\n\
             machine_deployment_default: {capm3: {image_key: x}}\n\
             machine_deployments: {zz: {capm3: {}}, md0: {capm3: {image_key: y}}}\n");
        let levels = levels(&cluster, "capm3");
        let whats: Vec<&str> = levels.iter().map(|l| l.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "control plane",
                "machine deployment md0",
                "machine deployment zz"
            ]
        );
        assert_eq!(
            levels[0].def,
            map("os_image_selector: {os: ubuntu, flavor: hardened}")
        );
        assert_eq!(levels[1].def.get("image_key"), Some(&Value::from("y")));
        assert_eq!(levels[2].def.get("image_key"), Some(&Value::from("x")));
        assert_eq!(
            levels[2].field_path(&cluster, "image_key"),
            "machine_deployment_default.capm3.image_key"
        );
        assert_eq!(
            levels[0].field_path(&cluster, "os_image_selector"),
            "control_plane.capm3.os_image_selector"
        );
    }

    #[test]
    fn quote_meta_escapes_regex_syntax() {
        assert_eq!(quote_meta("1.31.8+rke2r1"), "1\\.31\\.8\\+rke2r1");
        let re = Regex::new(&format!("^({})$", quote_meta("a.b+c"))).unwrap();
        assert!(re.is_match("a.b+c") && !re.is_match("axb+c"));
    }
}

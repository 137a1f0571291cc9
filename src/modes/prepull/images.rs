//! Which images to pre-pull: `spec.images`, else the frr-k8s and frr refs the metallb chart will
//! actually use (chart value overrides, so an air-gapped mirror is hit), else the Sylva 1.7
//! defaults. The speaker image is never pre-pulled: it is identified from the same chart values
//! (`speaker.image.repository`, with a mirror or a renamed repository) and the chart default.

use serde_yaml::Value;

use super::config::{DEFAULT_FRR_IMAGE, DEFAULT_FRR_K8S_IMAGE, MetalLBImagePrepullSpec};
use super::config_field;
use super::helm_unit;
use super::image::ImageRef;
use super::inputs::Inputs;
use super::values::{Origin, SylvaValues};
use crate::krm::{KrmObject, KrmResult};

/// One image to pre-pull and where its ref came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepullImage {
    /// The pinned ref.
    pub image: ImageRef,
    /// Where it came from, for the result message.
    pub source: String,
}

/// Why the speaker must not be pre-pulled (shared by the error results).
pub const SPEAKER_REASON: &str = "it must not be pre-pulled: the native \
     speaker pods must roll slowly (pulling their new image) so that at least one frr-k8s pod is \
     up before the last native speaker pod is replaced; the speaker reports Ready on process \
     start, not when BGP is re-established, so a pre-pulled speaker rolls in seconds and \
     withdraws every route at once";

/// A metallb chart value tree that may override images.
pub(super) struct ChartValues<'a> {
    /// The upstream metallb chart's values.
    pub values: &'a Value,
    /// Describes the holder, e.g. `HelmRelease metallb-system/metallb spec.values`.
    pub source: String,
    /// Result about this item/field when an override is invalid.
    pub about: Option<&'a Value>,
    /// Field path of the tree in `about`.
    pub field: String,
}

/// The MetalLB chart's default speaker repository (metallb `charts/metallb/values.yaml`
/// `speaker.image.repository`; the tag defaults to the chart's appVersion).
pub const DEFAULT_SPEAKER_REPOSITORY: &str = "quay.io/metallb/speaker";

/// Path of the frr-k8s controller image block under the metallb chart values (the frr-k8s
/// subchart's `frrk8s.image`, metallb/frr-k8s `charts/frr-k8s/values.yaml` at v0.0.25).
pub(super) const FRR_K8S_PATH: &[&str] = &["frr-k8s", "frrk8s", "image"];
/// Path of the FRR image block under the metallb chart values (`frrk8s.frr.image` there).
pub(super) const FRR_PATH: &[&str] = &["frr-k8s", "frrk8s", "frr", "image"];

/// One image to resolve: what it is, where its block sits in the chart values, its default
/// ref, and how the default is described in results.
pub(super) struct Target<'a> {
    /// `frr-k8s` or `frr`.
    pub what: &'a str,
    /// Path of the image block under the metallb chart values.
    pub path: &'a [&'a str],
    /// Default ref.
    pub default: &'a str,
    /// Where the default comes from, for results.
    pub default_source: String,
}

/// Resolves the image list.
pub fn resolve(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
    values: &SylvaValues,
    gated: Option<&Value>,
    fc: Option<&Value>,
) -> Result<Vec<PrepullImage>, KrmResult> {
    let patched = gated.and_then(helm_unit::patched_spec);
    let sources = chart_values(items, inputs, values, gated.zip(patched.as_ref()), fc);
    let targets = [
        ("frr-k8s", FRR_K8S_PATH, DEFAULT_FRR_K8S_IMAGE),
        ("frr", FRR_PATH, DEFAULT_FRR_IMAGE),
    ]
    .map(|(what, path, default)| Target {
        what,
        path,
        default,
        default_source: format!("default {what} image of Sylva 1.7"),
    });
    resolve_from(spec, &sources, &targets, fc)
}

/// Resolves the image list from chart value trees (highest precedence first) and the targets'
/// defaults; `spec.images` replaces both. Shared by the Sylva and the upstream-chart paths.
pub(super) fn resolve_from(
    spec: &MetalLBImagePrepullSpec,
    sources: &[ChartValues<'_>],
    targets: &[Target<'_>],
    fc: Option<&Value>,
) -> Result<Vec<PrepullImage>, KrmResult> {
    let speakers = speaker_repositories(sources)?;
    if let Some(images) = &spec.images {
        let fc_err = |message: String, field: String| {
            let r = KrmResult::error(message).field(config_field(fc, &field));
            match fc {
                Some(fc) => r.about(fc),
                None => r,
            }
        };
        if images.is_empty() {
            return Err(fc_err(
                "images is empty: omit it to use the frr-k8s and frr images of the metallb chart"
                    .into(),
                "images".into(),
            ));
        }
        let mut out: Vec<PrepullImage> = Vec::with_capacity(images.len());
        for (i, image) in images.iter().enumerate() {
            if let Some(why) = speaker_evidence(image, &speakers) {
                return Err(fc_err(
                    format!("{image} is the MetalLB speaker image ({why}); {SPEAKER_REASON}"),
                    format!("images[{i}]"),
                )
                .current(image.as_str()));
            }
            if out.iter().any(|o| o.image == *image) {
                return Err(
                    fc_err(format!("{image} is listed twice"), format!("images[{i}]"))
                        .current(image.as_str()),
                );
            }
            out.push(PrepullImage {
                image: image.clone(),
                source: "spec.images".into(),
            });
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity(targets.len());
    for target in targets {
        let what = target.what;
        let image = one_image(target, sources)?;
        if let Some(why) = speaker_evidence(&image.image, &speakers) {
            return Err(KrmResult::error(format!(
                "the {what} image resolved from {} is the MetalLB speaker image {} ({why}); {SPEAKER_REASON}; \
                 fix the chart values or set spec.images",
                image.source, image.image
            )));
        }
        out.push(image);
    }
    Ok(out)
}

/// A speaker repository and where it was read.
struct Speaker {
    repository: String,
    source: String,
}

/// The speaker repositories the release may use: `speaker.image.repository` of every chart value
/// source (a mirror or a renamed repository such as `…/metallb-speaker`), and the chart default.
fn speaker_repositories(sources: &[ChartValues<'_>]) -> Result<Vec<Speaker>, KrmResult> {
    let mut out = vec![Speaker {
        repository: DEFAULT_SPEAKER_REPOSITORY.into(),
        source: "the metallb chart's default speaker.image.repository".into(),
    }];
    for src in sources {
        if let Some(repo) = scalar(src, &["speaker", "image"], "repository")? {
            out.push(Speaker {
                repository: repo.trim_end_matches('/').to_owned(),
                source: format!("speaker.image.repository in {}", src.source),
            });
        }
    }
    Ok(out)
}

/// Why `image` is a speaker image, if it is: its repository is one the release uses for the
/// speaker, or it is a mirror path of the default one (`<mirror>/quay.io/metallb/speaker`), which
/// would warm the same layers.
fn speaker_evidence(image: &ImageRef, speakers: &[Speaker]) -> Option<String> {
    let repo = image.repository();
    if let Some(s) = speakers.iter().find(|s| s.repository == repo) {
        return Some(format!("repository {repo} is {}", s.source));
    }
    image
        .is_metallb_speaker()
        .then(|| format!("{repo} mirrors the default speaker repository metallb/speaker"))
}

/// Chart value trees, highest precedence first.
fn chart_values<'a>(
    items: &'a [Value],
    inputs: &Inputs,
    values: &'a SylvaValues,
    gated: Option<(&'a Value, &'a Value)>,
    fc: Option<&'a Value>,
) -> Vec<ChartValues<'a>> {
    let mut out = Vec::new();
    for &i in &inputs.metallb_helmreleases {
        if let Some(v) = items[i]
            .get("spec")
            .and_then(|s| s.get("values"))
            .filter(|v| v.is_mapping())
        {
            out.push(ChartValues {
                values: v,
                source: format!("{} spec.values", items[i].object_ref()),
                about: Some(&items[i]),
                field: "spec.values".into(),
            });
        }
    }
    // The HelmRelease spec the gated Helm unit patches in: the values sylva-units rendered.
    if let Some((kustomization, spec)) = gated
        && let Some(v) = spec.get("values").filter(|v| v.is_mapping())
    {
        out.push(ChartValues {
            values: v,
            source: format!(
                "the HelmRelease patched in by Kustomization {}",
                kustomization.name()
            ),
            about: Some(kustomization),
            field: "spec.patches".into(),
        });
    }
    let (about, prefix) = match &values.origin {
        Origin::Inline => (fc, config_field(fc, "values")),
        Origin::Item { index, field } => (Some(&items[*index]), field.clone()),
    };
    // units.metallb.helmrelease_spec.values is normally a GoTPL string pointing at
    // metallb_helm_values; only a rendered mapping overrides anything.
    for path in [
        &["units", "metallb", "helmrelease_spec", "values"][..],
        &["metallb_helm_values"][..],
    ] {
        if let Some(v) = values.get(path).filter(|v| v.is_mapping()) {
            out.push(ChartValues {
                values: v,
                source: format!("sylva values {}", path.join(".")),
                about,
                field: prefix.clone(),
            });
        }
    }
    out
}

fn lookup<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| cur.as_mapping()?.get(*k))
}

/// A scalar image field (`repository`, `tag`), `None` when absent or an unrendered template.
fn scalar(src: &ChartValues<'_>, path: &[&str], key: &str) -> Result<Option<String>, KrmResult> {
    let mut full: Vec<&str> = path.to_vec();
    full.push(key);
    match lookup(src.values, &full) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.contains("{{") => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => {
            let r = KrmResult::error(format!(
                "{} {} must be a string",
                src.source,
                full.join(".")
            ))
            .field(src.field.clone());
            Err(match src.about {
                Some(item) => r.about(item),
                None => r,
            })
        }
    }
}

fn one_image(target: &Target<'_>, sources: &[ChartValues<'_>]) -> Result<PrepullImage, KrmResult> {
    let (what, path) = (target.what, target.path);
    let default = ImageRef::parse(target.default).expect("valid default image");
    let mut repository: Option<(String, &ChartValues<'_>)> = None;
    let mut tag: Option<(String, &ChartValues<'_>)> = None;
    for src in sources {
        if repository.is_none() {
            repository = scalar(src, path, "repository")?.map(|r| (r, src));
            if let (Some((repo, _)), Some(registry)) =
                (&mut repository, scalar(src, path, "registry")?)
            {
                *repo = format!("{}/{}", registry.trim_end_matches('/'), repo);
            }
        }
        if tag.is_none() {
            tag = scalar(src, path, "tag")?.map(|t| (t, src));
        }
    }
    if repository.is_none() && tag.is_none() {
        return Ok(PrepullImage {
            image: default,
            source: target.default_source.clone(),
        });
    }
    let default_tag = &default.as_str()[default.repository().len() + 1..];
    let repo = repository
        .as_ref()
        .map_or(default.repository(), |(r, _)| r.as_str());
    let tag_text = tag.as_ref().map_or(default_tag, |(t, _)| t.as_str());
    let text = format!("{repo}:{tag_text}");
    let src = repository.as_ref().or(tag.as_ref()).map(|(_, s)| *s);
    let describe = src.map_or_else(String::new, |s| {
        format!("{} at {}", s.source, path.join("."))
    });
    match ImageRef::parse(&text) {
        Ok(image) => Ok(PrepullImage {
            image,
            source: format!("{what} image override in {describe}"),
        }),
        Err(message) => {
            let r = KrmResult::error(format!("{what} image override in {describe}: {message}"));
            let r = match src {
                Some(s) => {
                    let r = r.field(s.field.clone());
                    match s.about {
                        Some(item) => r.about(item),
                        None => r,
                    }
                }
                None => r,
            };
            Err(r)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_support::values;

    fn images(
        spec: &MetalLBImagePrepullSpec,
        items: &[Value],
        v: &SylvaValues,
    ) -> Result<Vec<String>, KrmResult> {
        let inputs = Inputs::scan(items, None, "metallb");
        resolve(spec, items, &inputs, v, None, None)
            .map(|l| l.into_iter().map(|i| i.image.to_string()).collect())
    }

    #[test]
    fn defaults_without_overrides() {
        let got = images(&MetalLBImagePrepullSpec::default(), &[], &values("a: 1")).unwrap();
        assert_eq!(got, vec![DEFAULT_FRR_K8S_IMAGE, DEFAULT_FRR_IMAGE]);
    }

    #[test]
    fn chart_overrides_are_prepulled_exactly() {
        let v = values(
            "metallb_helm_values:\n  frr-k8s:\n    frrk8s:\n      image: {repository: mirror.local/metallb/frr-k8s}\n      frr:\n        image: {repository: mirror.local/frrouting/frr, tag: 10.4.3-fips}\n",
        );
        let got = images(&MetalLBImagePrepullSpec::default(), &[], &v).unwrap();
        assert_eq!(
            got,
            vec![
                "mirror.local/metallb/frr-k8s:v0.0.25",
                "mirror.local/frrouting/frr:10.4.3-fips"
            ]
        );
        // A metallb HelmRelease in the items wins over the sylva values.
        let hr: Value = serde_yaml::from_str(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: metallb}\nspec:\n  values:\n    frr-k8s: {frrk8s: {image: {tag: v0.0.26}}}\n",
        )
        .unwrap();
        let got = images(&MetalLBImagePrepullSpec::default(), &[hr], &v).unwrap();
        assert_eq!(got[0], "mirror.local/metallb/frr-k8s:v0.0.26");
    }

    #[test]
    fn bad_overrides_and_speaker_are_errors() {
        let v = values("metallb_helm_values: {frr-k8s: {frrk8s: {image: {tag: latest}}}}");
        let e = images(&MetalLBImagePrepullSpec::default(), &[], &v).unwrap_err();
        assert!(e.message.contains(":latest"), "{}", e.message);
        let spec = MetalLBImagePrepullSpec {
            images: Some(vec![
                ImageRef::parse("quay.io/frrouting/frr:10.4.3").unwrap(),
                ImageRef::parse("quay.io/metallb/speaker:v0.15.2").unwrap(),
            ]),
            ..Default::default()
        };
        let e = images(&spec, &[], &values("a: 1")).unwrap_err();
        assert_eq!(e.field.unwrap().path, "spec.images[1]");
        assert!(e.message.contains("must not be pre-pulled"));
    }
}

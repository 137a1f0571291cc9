//! Where the payload lives: `spec.payloadDir` (the package directory the files are written to)
//! and `spec.source` (where the operator publishes it for Flux). They are distinct on purpose: the
//! package is rarely the root of its source, and a unit pointing at a path that does not exist in
//! its source is never Ready, which would keep `metallb` from ever reconciling.

use serde_yaml::Value;

use super::config::{MetalLBImagePrepullSpec, Output, PayloadSource, SourceKind, SourceRef};
use super::fc_error;
use crate::krm::KrmResult;

/// The validated payload location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// Package-relative directory of the payload files (no `./`, no trailing `/`).
    pub dir: String,
    /// Flux `spec.path` of the unit, exactly as configured.
    pub path: String,
    /// `output: rendered`: the unit's `spec.sourceRef`.
    pub source_ref: Option<SourceRef>,
    /// `output: sylva-values`: the unit's `repo` (a `source_templates` entry).
    pub repo: Option<String>,
}

/// Both the removed fields get an error that says what replaced them.
pub fn reject_removed_fields(
    spec: &MetalLBImagePrepullSpec,
    fc: Option<&Value>,
) -> Result<(), KrmResult> {
    if spec.removed_source_ref.is_some() {
        return Err(fc_error(
            fc,
            "sourceRef was replaced by source.sourceRef: name the Flux source where you publish the payload \
             (it is no longer copied from the metallb unit, whose sylva-core source has no such directory)"
                .into(),
            "sourceRef",
        ));
    }
    if spec.removed_path.is_some() {
        return Err(fc_error(
            fc,
            "path was replaced by two fields: payloadDir (package directory the payload files are written to, \
             default metallb-image-prepull) and source.path (where that directory is inside source.sourceRef)"
                .into(),
            "path",
        ));
    }
    Ok(())
}

/// Longest `payloadDir` and longest name in it: Linux's `PATH_MAX` and `NAME_MAX`. The
/// directory is a path on disk, and it is repeated in every generated file's path annotation,
/// so an unbounded one would make the output grow as files × its length.
const PATH_MAX: usize = 4096;
const NAME_MAX: usize = 255;

/// Normalises `spec.payloadDir` (`./metallb-image-prepull/` → `metallb-image-prepull`).
pub fn payload_dir(
    spec: &MetalLBImagePrepullSpec,
    fc: Option<&Value>,
) -> Result<String, KrmResult> {
    package_dir(&spec.payload_dir, "payloadDir", "metallb-image-prepull", fc)
}

/// A package directory the function writes payload files to, read from the config's `field`
/// and normalised (`./a/b/` → `a/b`): relative, inside the package, bounded like a path on disk.
/// The payload contract of every mode that publishes one (`payloadDir`).
pub fn package_dir(
    raw: &str,
    field: &str,
    example: &str,
    fc: Option<&Value>,
) -> Result<String, KrmResult> {
    let longest_name = raw.split('/').map(str::len).max().unwrap_or(0);
    if raw.len() > PATH_MAX || longest_name > NAME_MAX {
        return Err(fc_error(
            fc,
            format!(
                "{field} is {} bytes with a name of {longest_name}: a package directory is at most \
                 {PATH_MAX} bytes with names of at most {NAME_MAX} (PATH_MAX and NAME_MAX)",
                raw.len()
            ),
            field,
        ));
    }
    let trimmed = raw.trim_start_matches("./").trim_end_matches('/');
    let valid = !trimmed.is_empty()
        && trimmed != "."
        && !raw.starts_with('/')
        && trimmed
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    if valid {
        Ok(trimmed.to_owned())
    } else {
        Err(fc_error(
            fc,
            format!(
                "{field} {raw:?} must be a relative directory inside the package, e.g. {example}"
            ),
            field,
        )
        .current(raw))
    }
}

/// A Flux `spec.path`: relative to the source root, without `..` (Flux refuses to leave the
/// artifact). `./` is the root itself (e.g. an OCI artifact pushed from the payload directory).
pub fn valid_flux_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|s| s != ".." && !s.chars().any(char::is_whitespace))
}

const EXAMPLE_RENDERED: &str = "source: {sourceRef: {kind: GitRepository, name: platform-config, namespace: sylva-system}, \
     path: ./clusters/mgmt/metallb-image-prepull} (ConfigMap form: source.sourceRef.kind=GitRepository \
     source.sourceRef.name=platform-config source.path=./clusters/mgmt/metallb-image-prepull)";
const EXAMPLE_VALUES: &str = "source: {repo: platform-config, path: ./clusters/mgmt/metallb-image-prepull} \
     (ConfigMap form: source.repo=platform-config source.path=./clusters/mgmt/metallb-image-prepull)";

/// Validates `spec.source` for the configured output form. Called only when the gate opens:
/// removing the unit never needs to know where it was published.
pub fn resolve(spec: &MetalLBImagePrepullSpec, fc: Option<&Value>) -> Result<Payload, KrmResult> {
    let dir = payload_dir(spec, fc)?;
    let (form, example) = match spec.output {
        Output::Rendered => ("output: rendered", EXAMPLE_RENDERED),
        Output::SylvaValues => ("output: sylva-values", EXAMPLE_VALUES),
    };
    let Some(source) = &spec.source else {
        return Err(fc_error(
            fc,
            format!(
                "source is required when the gate opens: the {} unit is a Flux Kustomization that reconciles the \
                 payload written to {dir}/ from wherever you publish it, and metallb waits for it, so a source \
                 without that directory would keep MetalLB from reconciling at all. Name it ({form}), e.g. {example}",
                super::UNIT
            ),
            "source",
        ));
    };
    let Some(path) = source.path.clone() else {
        return Err(fc_error(
            fc,
            format!(
                "source.path is required: the path of the published {dir}/ directory inside the source, e.g. {example}"
            ),
            "source.path",
        ));
    };
    if !valid_flux_path(&path) {
        return Err(fc_error(
            fc,
            format!(
                "source.path {path:?} must be a path relative to the source root (e.g. ./clusters/mgmt/{dir}), without '..'"
            ),
            "source.path",
        )
        .current(path));
    }
    let (source_ref, repo) = match spec.output {
        Output::Rendered => (Some(rendered_source_ref(source, fc)?), None),
        Output::SylvaValues => (None, Some(values_repo(source, fc)?)),
    };
    Ok(Payload {
        dir,
        path,
        source_ref,
        repo,
    })
}

/// `output: rendered`: the unit names its Flux source itself.
fn rendered_source_ref(source: &PayloadSource, fc: Option<&Value>) -> Result<SourceRef, KrmResult> {
    let Some(source_ref) = source.source_ref.clone() else {
        return Err(fc_error(
            fc,
            format!(
                "source.sourceRef is required with output: rendered: the Flux source (GitRepository, \
                 OCIRepository or Bucket) holding the published payload, e.g. {EXAMPLE_RENDERED}"
            ),
            "source.sourceRef",
        ));
    };
    if source_ref.name.is_empty() {
        return Err(fc_error(
            fc,
            "source.sourceRef.name must not be empty".into(),
            "source.sourceRef.name",
        ));
    }
    Ok(source_ref)
}

/// `output: sylva-values`: sylva-units makes the unit's source from a `source_templates` entry.
fn values_repo(source: &PayloadSource, fc: Option<&Value>) -> Result<String, KrmResult> {
    let Some(repo) = source.repo.clone().filter(|r| !r.is_empty()) else {
        return Err(fc_error(
            fc,
            format!(
                "source.repo is required with output: sylva-values: the source_templates entry sylva-units \
                 makes the unit's sourceRef from (a GitRepository or OCIRepository holding the published \
                 payload), e.g. {EXAMPLE_VALUES}"
            ),
            "source.repo",
        ));
    };
    // sylva-units derives the sourceRef from `repo`; a sourceRef that says something else
    // would be silently ignored.
    if let Some(sr) = &source.source_ref {
        let agrees = sr.name == repo && sr.namespace.is_none() && sr.kind != SourceKind::Bucket;
        if !agrees {
            return Err(fc_error(
                fc,
                format!(
                    "source.sourceRef ({} {}) disagrees with source.repo {repo:?}: with output: sylva-values \
                     sylva-units makes the sourceRef from the source_templates entry named by repo \
                     (GitRepository or OCIRepository, same namespace); drop source.sourceRef",
                    sr.kind.as_str(),
                    sr.name
                ),
                "source.sourceRef",
            ));
        }
    }
    Ok(repo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::prepull::PayloadSource;

    fn spec(output: Output, source: Option<PayloadSource>) -> MetalLBImagePrepullSpec {
        MetalLBImagePrepullSpec {
            output,
            source,
            ..Default::default()
        }
    }

    fn field(r: Result<Payload, KrmResult>) -> String {
        r.unwrap_err().field.unwrap().path
    }

    #[test]
    fn payload_dir_must_stay_inside_the_package() {
        for (dir, ok) in [
            ("./metallb-image-prepull", Some("metallb-image-prepull")),
            ("units/prepull/", Some("units/prepull")),
            ("../x", None),
            ("/abs", None),
            ("./", None),
            ("a//b", None),
            ("x".repeat(256).as_str(), None),
            ("abc/".repeat(1100).as_str(), None),
            ("x".repeat(255).as_str(), Some("x".repeat(255).as_str())),
        ] {
            let spec = MetalLBImagePrepullSpec {
                payload_dir: dir.into(),
                ..Default::default()
            };
            assert_eq!(payload_dir(&spec, None).ok().as_deref(), ok, "{dir}");
        }
    }

    #[test]
    fn each_form_names_what_it_misses() {
        assert_eq!(
            field(resolve(&spec(Output::Rendered, None), None)),
            "spec.source"
        );
        let no_path = PayloadSource {
            source_ref: None,
            path: None,
            repo: Some("r".into()),
        };
        assert_eq!(
            field(resolve(&spec(Output::SylvaValues, Some(no_path)), None)),
            "spec.source.path"
        );
        let path_only = PayloadSource {
            source_ref: None,
            path: Some("./x".into()),
            repo: None,
        };
        assert_eq!(
            field(resolve(
                &spec(Output::Rendered, Some(path_only.clone())),
                None
            )),
            "spec.source.sourceRef"
        );
        assert_eq!(
            field(resolve(&spec(Output::SylvaValues, Some(path_only)), None)),
            "spec.source.repo"
        );
        let escaping = PayloadSource {
            source_ref: None,
            path: Some("./a/../../b".into()),
            repo: Some("r".into()),
        };
        assert_eq!(
            field(resolve(&spec(Output::SylvaValues, Some(escaping)), None)),
            "spec.source.path"
        );
        let bucket = PayloadSource {
            source_ref: Some(SourceRef {
                kind: SourceKind::Bucket,
                name: "r".into(),
                namespace: None,
            }),
            path: Some("./".into()),
            repo: Some("r".into()),
        };
        assert_eq!(
            field(resolve(
                &spec(Output::SylvaValues, Some(bucket.clone())),
                None
            )),
            "spec.source.sourceRef"
        );
        let ok = resolve(&spec(Output::Rendered, Some(bucket)), None).unwrap();
        assert_eq!(ok.path, "./");
        assert_eq!(ok.dir, "metallb-image-prepull");
    }
}

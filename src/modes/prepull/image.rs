//! Container image references as the prepull unit needs them: pinned (tag or digest, never
//! `:latest`), because a pre-pull only helps when the workload asks for exactly the same ref.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// A validated image reference: `[registry/]repository(:tag|@digest|:tag@digest)`.
///
/// Untagged refs and `:latest` are rejected: kubelet pulls them with `Always`, so a pre-pull
/// would not save the pull on the critical path, and a mirror may resolve them differently.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ImageRef {
    text: String,
    /// Length of the repository part (everything before `:tag` / `@digest`).
    repo_len: usize,
}

impl ImageRef {
    /// Parses and validates a reference; the error says what is wrong and how to fix it.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "invalid image {text:?}: expected registry/repository:tag or @sha256:digest"
            ));
        }
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (text, None),
        };
        if let Some(digest) = digest {
            let valid = digest.split_once(':').is_some_and(|(algo, hex)| {
                !algo.is_empty()
                    && algo
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+._-".contains(c))
                    && hex.len() >= 32
                    && hex.chars().all(|c| c.is_ascii_hexdigit())
            });
            if !valid {
                return Err(format!(
                    "invalid image {text:?}: digest {digest:?} is not of the form sha256:<hex>"
                ));
            }
        }
        // A tag is the part after the last ':' that comes after the last '/' (a ':' before the
        // last '/' is a registry port).
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (repo, tag) = match name[last_slash..].rfind(':') {
            Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
            None => (name, None),
        };
        let repo_ok = !repo.is_empty()
            && !repo.starts_with('/')
            && !repo.ends_with('/')
            && !repo.contains("//")
            && repo.split('/').skip(1).all(|segment| {
                segment
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
            });
        if !repo_ok {
            return Err(format!(
                "invalid image {text:?}: repository {repo:?} must be lowercase path segments"
            ));
        }
        match (tag, digest) {
            (None, None) => {
                return Err(format!(
                    "image {text:?} has no tag or digest: pin it (e.g. {repo}:v1.2.3 or {repo}@sha256:...) \
                     so the pre-pulled image is exactly the one the workload starts"
                ));
            }
            (Some("latest"), _) => {
                return Err(format!(
                    "image {text:?} uses :latest: kubelet pulls :latest with imagePullPolicy Always, so \
                     pre-pulling it saves nothing; pin a version tag or a digest"
                ));
            }
            (Some(tag), _) => {
                let tag_ok = !tag.is_empty()
                    && tag.len() <= 128
                    && !tag.starts_with(['.', '-'])
                    && tag
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
                if !tag_ok {
                    return Err(format!("invalid image {text:?}: bad tag {tag:?}"));
                }
            }
            (None, Some(_)) => {}
        }
        Ok(ImageRef {
            text: text.to_owned(),
            repo_len: repo.len(),
        })
    }

    /// The reference as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The repository part, e.g. `quay.io/metallb/frr-k8s`.
    pub fn repository(&self) -> &str {
        &self.text[..self.repo_len]
    }

    /// Last path segment of the repository, e.g. `frr-k8s`.
    pub fn short_name(&self) -> &str {
        let repo = self.repository();
        repo.rsplit('/').next().unwrap_or(repo)
    }

    /// True for the MetalLB speaker image (any registry or mirror path).
    pub fn is_metallb_speaker(&self) -> bool {
        self.short_name() == "speaker"
            && self
                .repository()
                .rsplit('/')
                .nth(1)
                .is_some_and(|owner| owner == "metallb")
    }
}

impl std::fmt::Display for ImageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for ImageRef {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        ImageRef::parse(&value)
    }
}

impl From<ImageRef> for String {
    fn from(value: ImageRef) -> Self {
        value.text
    }
}

impl JsonSchema for ImageRef {
    fn schema_name() -> Cow<'static, str> {
        "ImageRef".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "Pinned image reference (tag other than latest, or digest)."
        })
    }
    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_pinned_refs() {
        let i = ImageRef::parse("quay.io/metallb/frr-k8s:v0.0.25").unwrap();
        assert_eq!(i.repository(), "quay.io/metallb/frr-k8s");
        assert_eq!(i.short_name(), "frr-k8s");
        let d = format!("registry.local:5000/frr@sha256:{}", "a".repeat(64));
        assert_eq!(
            ImageRef::parse(&d).unwrap().repository(),
            "registry.local:5000/frr"
        );
        let both = format!("quay.io/frrouting/frr:10.4.3@sha256:{}", "b".repeat(64));
        assert_eq!(ImageRef::parse(&both).unwrap().short_name(), "frr");
        assert_eq!(ImageRef::parse("a:1").unwrap().short_name(), "a");
    }

    #[test]
    fn rejects_unpinned_latest_and_malformed() {
        for (bad, why) in [
            ("quay.io/frrouting/frr", "no tag or digest"),
            ("registry.local:5000/frr", "no tag or digest"),
            ("quay.io/frrouting/frr:latest", ":latest"),
            ("", "invalid image"),
            ("quay.io/Metallb/frr:1", "lowercase"),
            ("frr:1 2", "invalid image"),
            ("frr@sha256:zz", "digest"),
            ("frr:", "bad tag"),
        ] {
            let e = ImageRef::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn recognises_the_speaker_on_any_registry() {
        assert!(
            ImageRef::parse("quay.io/metallb/speaker:v0.15.2")
                .unwrap()
                .is_metallb_speaker()
        );
        assert!(
            ImageRef::parse("mirror.local/quay.io/metallb/speaker:v0.15.2")
                .unwrap()
                .is_metallb_speaker()
        );
        assert!(
            !ImageRef::parse("quay.io/metallb/frr-k8s:v0.0.25")
                .unwrap()
                .is_metallb_speaker()
        );
    }
}

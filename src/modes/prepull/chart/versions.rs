//! MetalLB chart versions: parsing, and what each supported target version installs.
//!
//! MetalLB 0.16.0 made frr-k8s the default BGP backend (`frrk8s.enabled: true`,
//! `speaker.frr.enabled: false` in `charts/metallb/values.yaml`; release notes 0.16.0, PR #2965);
//! up to 0.15.3 the defaults were FRR mode (`speaker.frr.enabled: true`, `frrk8s.enabled: false`),
//! and native when both are false. The frr-k8s images come from the frr-k8s subchart the metallb
//! chart vendors; the metallb chart's own values override none of them.

use std::fmt;

/// A chart version `MAJOR.MINOR.PATCH` (a leading `v`, pre-release and build suffixes ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u64, pub u64, pub u64);

impl Version {
    /// Parses an exact version; `None` for ranges (`>=0.16.0`, `0.16.x`, `~0.16`) and anything
    /// else that names no single version.
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let core = text.split(['-', '+']).next()?;
        let mut parts = core.split('.');
        let mut next = || -> Option<u64> {
            let p = parts.next()?;
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        };
        let v = Version(next()?, next()?, next()?);
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The first chart version whose default BGP backend is frr-k8s.
pub const FRR_K8S_DEFAULT_SINCE: Version = Version(0, 16, 0);

/// What one metallb chart version installs for frr-k8s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChartRow {
    /// The metallb chart version.
    pub chart: Version,
    /// The frr-k8s subchart it vendors (`charts/metallb/Chart.yaml` dependencies).
    pub frr_k8s_chart: &'static str,
    /// frr-k8s controller image: `frrk8s.image.repository` and, its tag being empty, the
    /// subchart's appVersion.
    pub frr_k8s_image: &'static str,
    /// FRR image: `frrk8s.frr.image.{repository,tag}` of the subchart.
    pub frr_image: &'static str,
}

/// The supported target versions, read from the upstream sources:
/// - metallb/metallb tags `v0.16.0` and `v0.16.1`, `charts/metallb/Chart.yaml` (dependency
///   `frr-k8s` version `0.0.25`, condition `frrk8s.enabled`) and `charts/metallb/values.yaml`
///   (`frrk8s.enabled: true`; the `frr-k8s:` block sets only `prometheus.serviceMonitor`, no
///   image); the vendored `charts/metallb/charts/frr-k8s-0.0.25.tgz` is the same blob at both tags;
/// - metallb/frr-k8s tag `v0.0.25`, `charts/frr-k8s/Chart.yaml` (appVersion `v0.0.25`) and
///   `charts/frr-k8s/values.yaml` (`frrk8s.image.repository: quay.io/metallb/frr-k8s`, tag empty
///   → appVersion; `frrk8s.frr.image: quay.io/frrouting/frr:10.4.3`), consumed by
///   `templates/controller.yaml` as `{{ repository }}:{{ tag | default .Chart.AppVersion }}`.
pub const CHARTS: &[ChartRow] = &[
    ChartRow {
        chart: Version(0, 16, 0),
        frr_k8s_chart: "0.0.25",
        frr_k8s_image: "quay.io/metallb/frr-k8s:v0.0.25",
        frr_image: "quay.io/frrouting/frr:10.4.3",
    },
    ChartRow {
        chart: Version(0, 16, 1),
        frr_k8s_chart: "0.0.25",
        frr_k8s_image: "quay.io/metallb/frr-k8s:v0.0.25",
        frr_image: "quay.io/frrouting/frr:10.4.3",
    },
];

/// The row of `version`, if it is a supported one.
pub fn row(version: Version) -> Option<&'static ChartRow> {
    CHARTS.iter().find(|r| r.chart == version)
}

/// The supported versions, for messages.
pub fn supported() -> String {
    CHARTS
        .iter()
        .map(|r| r.chart.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_exactly_or_not_at_all() {
        assert_eq!(Version::parse("0.16.1"), Some(Version(0, 16, 1)));
        assert_eq!(Version::parse("v0.15.3"), Some(Version(0, 15, 3)));
        assert_eq!(Version::parse("0.16.0-rc.1"), Some(Version(0, 16, 0)));
        for range in [">=0.16.0", "0.16.x", "~0.16", "0.16", "*", "", "0.16.1.2"] {
            assert_eq!(Version::parse(range), None, "{range}");
        }
        assert!(Version(0, 15, 3) < FRR_K8S_DEFAULT_SINCE);
        assert!(Version(0, 16, 1) >= FRR_K8S_DEFAULT_SINCE);
    }

    #[test]
    fn every_row_is_a_pinned_frr_k8s_pair() {
        for r in CHARTS {
            assert!(r.chart >= FRR_K8S_DEFAULT_SINCE);
            assert!(r.frr_k8s_image.ends_with(&format!(":v{}", r.frr_k8s_chart)));
            crate::modes::prepull::ImageRef::parse(r.frr_k8s_image).unwrap();
            crate::modes::prepull::ImageRef::parse(r.frr_image).unwrap();
        }
        assert_eq!(supported(), "0.16.0, 0.16.1");
        assert!(row(Version(0, 16, 2)).is_none());
    }
}

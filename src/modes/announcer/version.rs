//! Cilium version facts that change what cutover emits (see the research notes in the docs).

use std::fmt;

/// A Cilium release number; `patch` is `None` when only `major.minor` is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CiliumVersion {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch, when given.
    pub patch: Option<u32>,
}

impl fmt::Display for CiliumVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.patch {
            Some(p) => write!(f, "{}.{}.{p}", self.major, self.minor),
            None => write!(f, "{}.{}", self.major, self.minor),
        }
    }
}

impl CiliumVersion {
    /// Parses `1.18`, `1.18.4`, `v1.19.1`, `1.21.0-pre.3` (pre-release suffix ignored). Version
    /// ranges (`>=1.18`, `1.18.x`, `*`) are not a version and give `None`.
    pub fn parse(text: &str) -> Option<CiliumVersion> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let core = text.split(['-', '+']).next()?;
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            None => None,
            Some(p) => Some(p.parse().ok()?),
        };
        if parts.next().is_some() {
            return None;
        }
        Some(CiliumVersion {
            major,
            minor,
            patch,
        })
    }

    fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// `cilium.io/v2` for CiliumLoadBalancerIPPool from 1.18 (cilium/cilium#39090), else v2alpha1.
    pub fn pool_api_version(&self) -> &'static str {
        if self.at_least(1, 18) {
            "cilium.io/v2"
        } else {
            "cilium.io/v2alpha1"
        }
    }

    /// `lbipam.cilium.io/*` annotation keys exist from 1.16; 1.14/1.15 only read the
    /// `io.cilium/lb-ipam-*` aliases (which later versions still read).
    pub fn annotation_prefix_is_new(&self) -> bool {
        self.at_least(1, 16)
    }

    /// `allowFirstLastIPs` defaults to `Yes` from 1.16 (it was `No` in 1.15).
    pub fn first_last_allowed_by_default(&self) -> bool {
        self.at_least(1, 16)
    }

    /// L2 announcements answer NDP for IPv6 from 1.19 (cilium/cilium#39648).
    pub fn announces_ipv6(&self) -> bool {
        self.at_least(1, 19)
    }

    /// L2 announcements exist from 1.14, but the 1.14 CiliumLoadBalancerIPPool CRD has only
    /// `spec.cidrs` (required); `blocks`, which cutover emits, starts in 1.15 (cilium/cilium
    /// `pkg/k8s/apis/cilium.io/client/crds/v2alpha1/ciliumloadbalancerippools.yaml` at the 1.14
    /// and 1.15 branch points). So the cutover needs 1.15.
    pub fn supports_cutover(&self) -> bool {
        self.at_least(1, 15)
    }

    /// 1.19.0 and 1.19.1 carry L2/LB-IPAM regressions on the upgrade path (cilium/cilium#44222,
    /// cilium/cilium#44221, cilium/cilium#44430). `Some(false)` = known good, `None` = `1.19`
    /// without a patch number.
    pub fn is_broken_for_l2(&self) -> Option<bool> {
        if (self.major, self.minor) != (1, 19) {
            return Some(false);
        }
        self.patch.map(|p| p <= 1)
    }

    /// The chart's default `k8sClientRateLimit` (qps, burst): 10/20 from 1.17's chart on
    /// (documented in the 1.19 chart), 5/10 before (per the L2 announcement docs).
    pub fn default_rate_limit(&self) -> (u64, u64) {
        if self.at_least(1, 17) {
            (10, 20)
        } else {
            (5, 10)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_classifies() {
        let v = CiliumVersion::parse("v1.19.1").unwrap();
        assert_eq!(v.is_broken_for_l2(), Some(true));
        assert_eq!(
            CiliumVersion::parse("1.19.2").unwrap().is_broken_for_l2(),
            Some(false)
        );
        assert_eq!(
            CiliumVersion::parse("1.19").unwrap().is_broken_for_l2(),
            None
        );
        assert_eq!(
            CiliumVersion::parse("1.18").unwrap().pool_api_version(),
            "cilium.io/v2"
        );
        assert_eq!(
            CiliumVersion::parse("1.17.9").unwrap().pool_api_version(),
            "cilium.io/v2alpha1"
        );
        assert_eq!(
            CiliumVersion::parse("1.21.0-pre.3").unwrap().to_string(),
            "1.21.0"
        );
        assert!(CiliumVersion::parse(">=1.18").is_none());
        assert!(CiliumVersion::parse("1.18.x").is_none());
        assert!(CiliumVersion::parse("*").is_none());
        assert!(CiliumVersion::parse("1.2.3.4").is_none());
    }
}

//! What LB-IPAM's behaviour depends on: the release ([`Quirks`]) and, per handler, the
//! cluster it reads ([`Ctx`]), with `isCompatible` — the rule that decides whether two
//! Services may share an IP.

use std::net::IpAddr;

use super::super::super::sharing::SharingRules;
use super::super::super::version::CiliumVersion;
use super::super::state::{Cluster, ServiceSpec, SvcKey, ip_list};

/// Behaviour that differs between Cilium releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quirks {
    /// `isCompatible` rules (`SharingRules` (`sharing.rs`), the announcer's per-release table).
    pub rules: SharingRules,
    /// Ports compare with their protocol.
    pub protocols: bool,
    /// `lbipam.cilium.io/*` keys are read (1.16+); before, only `io.cilium/lb-ipam-*`.
    pub new_keys: bool,
    /// `stripOrImportIngresses` does not register an imported IP under the Service's sharing
    /// key: 1.15.0–1.15.9 and 1.16.0–1.16.2 (cilium/cilium#34783, in 1.16.3 and 1.15.10).
    pub import_skips_key: bool,
    /// An import that finds the IP in use joins compatible holders (cilium/cilium#46262);
    /// before, it drops the ingress and a generic request takes the first compatible IP of
    /// the key (through 1.19.x).
    pub import_shares: bool,
    /// An operator restart may re-allocate IPs of Services that request none: below 1.18.2
    /// (cilium/cilium#43131, fixed by cilium/cilium#41147 and #41122). Requested IPs are kept
    /// (cilium/cilium#39033).
    pub restart_reallocates: bool,
    /// Editing a pool re-assigns the Services of that pool that request no IP: 1.17.4–1.17.x
    /// (cilium/cilium#40358, cilium/cilium#41458).
    pub edit_reassigns: bool,
}

impl Quirks {
    /// The quirks of a release; no patch number counts as `.0`. `protocol_value` is Cilium's
    /// `loadBalancer.protocolDifferentiation.enabled`.
    pub fn for_version(v: &CiliumVersion, protocol_value: Option<bool>) -> Quirks {
        let at = (v.major, v.minor, v.patch.unwrap_or(0));
        let rules = SharingRules::for_version(v);
        Quirks {
            rules,
            protocols: rules.compares_protocols(protocol_value),
            new_keys: at >= (1, 16, 0),
            import_skips_key: ((1, 15, 0)..=(1, 15, 9)).contains(&at)
                || ((1, 16, 0)..=(1, 16, 2)).contains(&at),
            import_shares: at >= (1, 20, 0),
            restart_reallocates: at < (1, 18, 2),
            edit_reassigns: ((1, 17, 4)..(1, 18, 0)).contains(&at),
        }
    }

    fn keys<'a>(&self, new: &'a str, alias: &'a str) -> Vec<&'a str> {
        if self.new_keys {
            vec![new, alias]
        } else {
            vec![alias]
        }
    }
    /// `getSVCRequestedIPs`: `spec.loadBalancerIP`, then `lbipam.cilium.io/ips` (alias
    /// `io.cilium/lb-ipam-ips`).
    pub fn requested(&self, spec: &ServiceSpec) -> Vec<IpAddr> {
        let mut ips = spec.lb_ip.as_deref().map(ip_list).unwrap_or_default();
        let keys = self.keys("lbipam.cilium.io/ips", "io.cilium/lb-ipam-ips");
        for ip in spec.annotation(&keys).map(ip_list).unwrap_or_default() {
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
        ips
    }
    /// `getSVCSharingKey`.
    pub fn sharing_key<'a>(&self, spec: &'a ServiceSpec) -> &'a str {
        let keys = self.keys(
            "lbipam.cilium.io/sharing-key",
            "io.cilium/lb-ipam-sharing-key",
        );
        spec.annotation(&keys).unwrap_or("")
    }
    fn cross_namespace<'a>(&self, spec: &'a ServiceSpec) -> Vec<&'a str> {
        let keys = self.keys(
            "lbipam.cilium.io/sharing-cross-namespace",
            "io.cilium/lb-ipam-sharing-cross-namespace",
        );
        spec.annotation(&keys)
            .map(|v| v.split(',').collect())
            .unwrap_or_default()
    }
}

/// What one handler reads: the cluster and the release's quirks.
pub struct Ctx<'a> {
    /// The cluster (Services' specs and Cilium pools as the informers deliver them).
    pub cluster: &'a Cluster,
    /// The release.
    pub q: &'a Quirks,
}

impl Ctx<'_> {
    pub(super) fn spec(&self, key: &SvcKey) -> Option<&ServiceSpec> {
        self.cluster.services.get(key).map(|s| &s.spec)
    }

    /// `isResponsibleForSVC` with `defaultLBServiceIPAM: lbipam` (the chart default, which
    /// the announcer requires): no class, or Cilium's L2 announcer class.
    pub(super) fn responsible(&self, key: &SvcKey) -> bool {
        self.spec(key).is_some_and(|s| {
            s.class
                .as_deref()
                .is_none_or(|c| c == "io.cilium/l2-announcer")
        })
    }

    /// `ServiceView.isCompatible` (service_store.go), with the per-release rules of
    /// `SharingRules` (`sharing.rs`): same sharing key; same namespace unless both permit
    /// each other (`sharing-cross-namespace`, 1.16+); no common port (by number, or number and
    /// protocol); same `externalTrafficPolicy`; both `Local` → equal non-empty selectors
    /// (unless both carry `sharing-permit-different-pods`, 1.21+).
    pub fn compatible(&self, a: &SvcKey, b: &SvcKey) -> bool {
        let (Some(sa), Some(sb)) = (self.spec(a), self.spec(b)) else {
            return false;
        };
        let q = self.q;
        if !q.rules.sharing_key || q.sharing_key(sa) != q.sharing_key(sb) {
            return false;
        }
        if a.namespace != b.namespace {
            let lists = |s: &ServiceSpec, ns: &str| {
                q.cross_namespace(s).iter().any(|n| *n == "*" || *n == ns)
            };
            if !(q.rules.cross_namespace && lists(sa, &b.namespace) && lists(sb, &a.namespace)) {
                return false;
            }
        }
        let clash =
            |pa: &(i32, String), pb: &(i32, String)| pa.0 == pb.0 && (!q.protocols || pa.1 == pb.1);
        if sa
            .ports
            .iter()
            .any(|pa| sb.ports.iter().any(|pb| clash(pa, pb)))
        {
            return false;
        }
        if sa.etp_local != sb.etp_local {
            return false;
        }
        if sa.etp_local {
            let permit = |s: &ServiceSpec| {
                s.annotations
                    .contains_key("lbipam.cilium.io/sharing-permit-different-pods")
            };
            if sa.selector.is_empty() || sb.selector.is_empty() {
                return false;
            }
            if sa.selector != sb.selector
                && !(q.rules.permit_different_pods && permit(sa) && permit(sb))
            {
                return false;
            }
        }
        true
    }
}

//! What each result of the announcer is about: the value of its `check` tag.
//!
//! Operators filter a run's results by `check` (a pipeline that fails only on `coverage`, say),
//! so the names are part of the interface. They are listed once, here; the list under "Results"
//! in docs/modes/load-balancer-announcer.md is tested against [`Check::ALL`], in this order.

/// The `check` tag of an announcer result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Reading the items and the observed state.
    Input,
    /// The platform's switch between MetalLB and Cilium (Cozystack's ConfigMap).
    AnnouncerSwitch,
    /// What the inventory holds as a whole (no MetalLB objects, say).
    Inventory,
    /// Cilium's release and what it changes in LB-IPAM and the L2 announcer.
    CiliumVersion,
    /// MetalLB BGP objects, which this mode does not translate.
    Bgp,
    /// MetalLB IPAddressPools translated into CiliumLoadBalancerIPPools.
    Pools,
    /// L2Advertisements translated into CiliumL2AnnouncementPolicies.
    L2Policies,
    /// IPv6 pools and Services (NDP rather than ARP).
    Ipv6,
    /// Each LoadBalancer Service's plan.
    Services,
    /// MetalLB's IP sharing against LB-IPAM's.
    Sharing,
    /// Cilium's Helm values (L2 announcements, devices, client rate limit).
    CiliumValues,
    /// Stopping MetalLB's speaker.
    Speaker,
    /// The order in which Flux, LB-IPAM and the speakers see the phases (the transition model).
    Transitions,
    /// The objects this mode generates (pools, policies, payloads).
    GeneratedObjects,
    /// MetalLB keys in Helm values' Service annotations.
    ValuesAnnotations,
    /// The Services' annotations rewritten for LB-IPAM.
    ServiceRewrite,
    /// The proof that every Service keeps its IP and its announcing nodes.
    Coverage,
    /// Removing MetalLB.
    Removal,
    /// What to run next.
    NextStep,
    /// A phase run out of its order.
    PhaseOrder,
    /// The plan (announcer `metallb`, or `plan: true`).
    Plan,
    /// The Flux-orchestrated output (`orchestrate`).
    Orchestrate,
    /// The run as a whole: nothing was changed because of the errors (shared by every mode).
    Outcome,
}

impl Check {
    /// Every check, in the order of the documentation.
    pub const ALL: [Check; 23] = [
        Check::Input,
        Check::AnnouncerSwitch,
        Check::Inventory,
        Check::CiliumVersion,
        Check::Bgp,
        Check::Pools,
        Check::L2Policies,
        Check::Ipv6,
        Check::Services,
        Check::Sharing,
        Check::CiliumValues,
        Check::Speaker,
        Check::Transitions,
        Check::GeneratedObjects,
        Check::ValuesAnnotations,
        Check::ServiceRewrite,
        Check::Coverage,
        Check::Removal,
        Check::NextStep,
        Check::PhaseOrder,
        Check::Plan,
        Check::Orchestrate,
        Check::Outcome,
    ];

    /// The tag's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Input => "input",
            Check::AnnouncerSwitch => "announcer-switch",
            Check::Inventory => "inventory",
            Check::CiliumVersion => "cilium-version",
            Check::Bgp => "bgp",
            Check::Pools => "pools",
            Check::L2Policies => "l2-policies",
            Check::Transitions => "transitions",
            Check::Ipv6 => "ipv6",
            Check::Services => "services",
            Check::Sharing => "sharing",
            Check::CiliumValues => "cilium-values",
            Check::Speaker => "speaker",
            Check::GeneratedObjects => "generated-objects",
            Check::ValuesAnnotations => "values-annotations",
            Check::ServiceRewrite => "service-rewrite",
            Check::Coverage => "coverage",
            Check::Removal => "removal",
            Check::NextStep => "next-step",
            Check::PhaseOrder => "phase-order",
            Check::Plan => "plan",
            Check::Orchestrate => "orchestrate",
            Check::Outcome => crate::modes::OUTCOME_CHECK,
        }
    }

    /// Whether `tag` is this check's name (for results read back by a later stage).
    pub fn is(self, tag: Option<&str>) -> bool {
        tag == Some(self.as_str())
    }
}

impl From<Check> for String {
    fn from(check: Check) -> String {
        check.as_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in the documentation's "Every result carries `check`: …" sentence, in order.
    fn documented() -> Vec<String> {
        let doc = include_str!("../../../docs/modes/load-balancer-announcer.md");
        let start = doc
            .find("Every result carries `check`:")
            .expect("the Results section lists the checks");
        let list = &doc[start..];
        let list = &list[..list.find(". ").expect("the list ends a sentence")];
        list.split('`')
            .skip(3)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_documented_checks_are_the_checks_in_order() {
        let names: Vec<&str> = Check::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(documented(), names);
    }

    #[test]
    fn names_are_distinct() {
        let names: Vec<&str> = Check::ALL.iter().map(|c| c.as_str()).collect();
        crate::modes::check_docs::assert_distinct(&names);
    }
}

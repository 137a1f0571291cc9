//! What each result of the prepull mode is about: the value of its `check` tag.
//!
//! Operators filter a run's results by `check`, so the names are part of the interface. They are
//! listed once, here; the table under "## Results" in docs/modes/metallb-image-prepull.md is
//! tested against [`Check::ALL`], in this order.

/// The `check` tag of a prepull result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The function config's own fields: the engine's own [`crate::config::CHECK`].
    Config,
    /// Where the payload is written and published (`payloadDir`, `spec.source`).
    Source,
    /// Where the sylva values were read, or why none were found.
    Values,
    /// Without sylva values: the item that installs MetalLB from the upstream chart.
    Install,
    /// Gate condition: an upgrade, and from which version to which.
    Upgrade,
    /// Gate condition (upstream chart): the target runs the bundled frr-k8s.
    Backend,
    /// Gate condition: BGP peers configured.
    Bgp,
    /// Gate condition: MetalLB enabled, and the Kustomization or installation to gate.
    Metallb,
    /// The BGP backend transition (Sylva path, when BGP is configured).
    Case,
    /// The gate's verdict when closed, or why it cannot be evaluated.
    Gate,
    /// Each image pre-pulled, with where its reference was read.
    Images,
    /// The generated unit and its payload: added, updated, removed, or why it cannot be.
    Unit,
    /// The gated unit's `dependsOn` entry on the generated one.
    DependsOn,
    /// `output: rendered` next to the sylva-units HelmRelease.
    SylvaUnitsRelease,
    /// The unit's definition in the sylva-units values (`output: sylva-values`).
    SylvaValues,
    /// The sylva-units Helm revision the unit carries, as its siblings do.
    HelmRevision,
    /// Workload clusters: the kubeConfig the unit applies its payload with.
    KubeConfig,
    /// The unit that checks the BGP sessions after the gated one (`bgpSessionCheck`).
    BgpSessions,
    /// What the run generated, in one line.
    Summary,
}

impl Check {
    /// Every check, in the order of the documentation.
    pub const ALL: [Check; 19] = [
        Check::Config,
        Check::Source,
        Check::Values,
        Check::Install,
        Check::Upgrade,
        Check::Backend,
        Check::Bgp,
        Check::Metallb,
        Check::Case,
        Check::Gate,
        Check::Images,
        Check::Unit,
        Check::DependsOn,
        Check::SylvaUnitsRelease,
        Check::SylvaValues,
        Check::HelmRevision,
        Check::KubeConfig,
        Check::BgpSessions,
        Check::Summary,
    ];

    /// The tag's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Config => crate::config::CHECK,
            Check::Source => "source",
            Check::Values => "values",
            Check::Install => "install",
            Check::Upgrade => "upgrade",
            Check::Backend => "backend",
            Check::Bgp => "bgp",
            Check::Metallb => "metallb",
            Check::Case => "case",
            Check::Gate => "gate",
            Check::Images => "images",
            Check::Unit => "unit",
            Check::DependsOn => "depends-on",
            Check::SylvaUnitsRelease => "sylva-units-release",
            Check::SylvaValues => "sylva-values",
            Check::HelmRevision => "helm-revision",
            Check::KubeConfig => "kube-config",
            Check::BgpSessions => "bgp-sessions",
            Check::Summary => "summary",
        }
    }
}

impl From<Check> for String {
    fn from(check: Check) -> String {
        check.as_str().to_owned()
    }
}

#[cfg(test)]
#[test]
fn the_documented_checks_are_the_checks_in_order() {
    let names: Vec<&str> = Check::ALL.iter().map(|c| c.as_str()).collect();
    let doc = include_str!("../../../docs/modes/metallb-image-prepull.md");
    crate::modes::check_docs::assert_documented(&names, doc, "## Results");
}

//! What each result of the capm3 mode is about: the value of its `check` tag.
//!
//! Operators filter a run's results by `check`, so the names are part of the interface. They are
//! listed once, here; the table under "Checks" in docs/modes/capm3-os-image-sources.md is
//! tested against [`Check::ALL`], in this order.

/// The `check` tag of a capm3 result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// An item the mode reads that does not decode.
    Input,
    /// Management or workload cluster, and its infra provider.
    Provider,
    /// The cluster's own os-images-info ConfigMap in `spec.valuesFrom`.
    OsImagesInfo,
    /// The served-images ConfigMap in `spec.valuesFrom`, for the cluster's context.
    ServedImages,
    /// The served images read after the image facts.
    ValuesOrder,
    /// A valuesFrom entry referenced twice.
    Duplicate,
    /// Served images that carry `os_images` and would override the cluster's own.
    OsImagesOverride,
    /// The Kyverno ClusterPolicy that clones the served images.
    ClonePolicy,
    /// The workload-cluster label on the cluster's Namespace.
    NamespaceLabel,
    /// Each selected image resolving to exactly one `os_images` entry.
    ImageSelection,
    /// Each selected image listed as available by the image server.
    ImageServed,
    /// The same image key built from other content in the management context.
    ImageContext,
    /// The `cluster` HelmRelease among the items.
    Cluster,
}

impl Check {
    /// Every check, in the order of the documentation.
    pub const ALL: [Check; 13] = [
        Check::Input,
        Check::Provider,
        Check::OsImagesInfo,
        Check::ServedImages,
        Check::ValuesOrder,
        Check::Duplicate,
        Check::OsImagesOverride,
        Check::ClonePolicy,
        Check::NamespaceLabel,
        Check::ImageSelection,
        Check::ImageServed,
        Check::ImageContext,
        Check::Cluster,
    ];

    /// The tag's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Input => "input",
            Check::Provider => "provider",
            Check::OsImagesInfo => "os-images-info",
            Check::ServedImages => "served-images",
            Check::ValuesOrder => "values-order",
            Check::Duplicate => "duplicate",
            Check::OsImagesOverride => "os-images-override",
            Check::ClonePolicy => "clone-policy",
            Check::NamespaceLabel => "namespace-label",
            Check::ImageSelection => "image-selection",
            Check::ImageServed => "image-served",
            Check::ImageContext => "image-context",
            Check::Cluster => "cluster",
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
    let doc = include_str!("../../../docs/modes/capm3-os-image-sources.md");
    crate::modes::check_docs::assert_documented(&names, doc, "## Checks");
}

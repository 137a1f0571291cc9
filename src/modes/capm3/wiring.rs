//! Checks (A) and (B) in the `cluster` HelmRelease's `spec.valuesFrom` and computes the list
//! sylva-units renders since the two sources were decoupled (charts/sylva-units/values.yaml, the
//! `cluster` unit): the cluster's own `os-images-info` (A), then the served-images ConfigMap (B).

use serde_yaml::Value;

use super::check::Check;
use super::config::Capm3OSImageSourcesSpec;
use super::resources::ValuesReference;
use super::{Context, Finding};

/// ConfigMaps a workload cluster read before the decoupling: the Kyverno clone of the
/// os-image-server output of that time, and that output itself. Both carry the management
/// cluster's `os_images`. (sylva-core before the merge of "capm3 decouple os-images-info and
/// os-image-server output ConfigMap": workload-cluster.values.yaml
/// `_internal.cluster_unit_os_images_info_configmap`, values.yaml `outputConfigMapName`.)
pub const LEGACY_SOURCES: [&str; 2] = [
    "kyverno-cloned-os-images-info-capm3",
    "capm3-os-image-server-os-images-info",
];

/// Role of one `valuesFrom` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// (A) the cluster's own os-images-info.
    OsImagesInfo,
    /// (B) the served-images ConfigMap this context reads.
    Served,
    /// The served-images ConfigMap of the other context.
    WrongServed,
    /// A pre-decoupling source of `os_images` from the management cluster.
    Legacy,
    /// Anything else (the cluster values Secret, capo's ConfigMaps, ...).
    Other,
}

/// The names the wiring of one cluster is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// (A).
    pub os_images_info: String,
    /// (B) in this context.
    pub served: String,
    /// (B) of the other context (wrong here).
    pub wrong_served: String,
}

impl Names {
    /// The names for a cluster in `context`.
    pub fn new(spec: &Capm3OSImageSourcesSpec, context: Context) -> Self {
        let (served, wrong_served) = match context {
            Context::Workload => (&spec.served_images, &spec.server_output.name),
            Context::Management => (&spec.server_output.name, &spec.served_images),
        };
        Names {
            os_images_info: spec.os_images_info.clone(),
            served: served.clone(),
            wrong_served: wrong_served.clone(),
        }
    }

    fn role(&self, r: &ValuesReference) -> Role {
        if r.kind != "ConfigMap" {
            Role::Other
        } else if r.name == self.os_images_info {
            Role::OsImagesInfo
        } else if r.name == self.served {
            Role::Served
        } else if r.name == self.wrong_served {
            Role::WrongServed
        } else if LEGACY_SOURCES.contains(&r.name.as_str()) {
            Role::Legacy
        } else {
            Role::Other
        }
    }
}

/// The outcome of the wiring check of one HelmRelease.
#[derive(Debug, Clone, PartialEq)]
pub struct Wiring {
    /// What was found (errors and warnings the fix resolves carry `fixable`).
    pub findings: Vec<Finding>,
    /// `spec.valuesFrom` as sylva-units wires it (equal to the input when nothing is wrong).
    pub desired: Vec<Value>,
    /// Typed view of `desired`.
    pub desired_refs: Vec<ValuesReference>,
    /// Position of (A) and (B) in `desired`.
    pub positions: (usize, usize),
    /// The input does not reference (B) and `desired` does: the fix would make the HelmRelease
    /// depend on a ConfigMap it did not read before.
    pub adds_served: bool,
}

/// Checks the entries (`raw` as written, `refs` typed) of one HelmRelease in `context`.
pub fn check(raw: &[Value], refs: &[ValuesReference], names: &Names, context: Context) -> Wiring {
    let mut list = DesiredList::new(raw, refs, names);
    for (i, r) in refs.iter().enumerate() {
        match names.role(r) {
            Role::Other => list.slots.push((Some(i), r.clone())),
            role @ (Role::OsImagesInfo | Role::Served) => list.chart_entry(i, r, role),
            Role::WrongServed => list.wrong_served(i, r, context),
            Role::Legacy => list.legacy(i, r),
        }
    }
    list.add_missing();
    let (a, b) = list.order();
    let adds_served = !refs.iter().any(|r| names.role(r) == Role::Served);
    let desired = list
        .slots
        .iter()
        .map(|(i, r)| match i {
            Some(i) => raw[*i].clone(),
            None => r.to_value(),
        })
        .collect();
    Wiring {
        findings: list.findings,
        desired,
        desired_refs: list.slots.into_iter().map(|(_, r)| r).collect(),
        positions: (a, b),
        adds_served,
    }
}

/// The desired `spec.valuesFrom` of one HelmRelease, built entry by entry from the input's.
struct DesiredList<'a> {
    raw: &'a [Value],
    refs: &'a [ValuesReference],
    names: &'a Names,
    findings: Vec<Finding>,
    /// An input entry kept as written, or a canonical new entry.
    slots: Vec<(Option<usize>, ValuesReference)>,
    /// (A) and (B) are in `slots`.
    have_a: bool,
    have_b: bool,
    canonical_a: ValuesReference,
    canonical_b: ValuesReference,
}

impl<'a> DesiredList<'a> {
    fn new(raw: &'a [Value], refs: &'a [ValuesReference], names: &'a Names) -> Self {
        DesiredList {
            raw,
            refs,
            names,
            findings: Vec::new(),
            slots: Vec::new(),
            have_a: false,
            have_b: false,
            canonical_a: ValuesReference::config_map(&names.os_images_info),
            canonical_b: ValuesReference::config_map(&names.served),
        }
    }

    /// Entry `i` names (A) or (B): kept the first time if it merges the whole document,
    /// replaced by the canonical entry if it does not, dropped when it comes twice.
    fn chart_entry(&mut self, i: usize, r: &ValuesReference, role: Role) {
        let field = format!("spec.valuesFrom[{i}]");
        let (have, canonical, what) = if role == Role::OsImagesInfo {
            (&mut self.have_a, &self.canonical_a, "(A) os-images-info")
        } else {
            (&mut self.have_b, &self.canonical_b, "(B) served-images")
        };
        if *have {
            self.findings.push(
                Finding::fixable_error(
                    Check::Duplicate,
                    format!(
                        "{what} ConfigMap {} is referenced twice; only the first is kept",
                        r.name
                    ),
                    field,
                    self.raw[i].clone(),
                    Value::Null,
                )
                .warning(),
            );
            return;
        }
        *have = true;
        if r.merges_document() {
            self.slots.push((Some(i), r.clone()));
            return;
        }
        self.findings.push(Finding::fixable_error(
            if role == Role::OsImagesInfo { Check::OsImagesInfo } else { Check::ServedImages },
            format!(
                "{what} entry reads key {:?}{}: the chart needs the whole `values.yaml` document merged at the root",
                r.key(),
                r.target_path.as_ref().map(|p| format!(" into {p}")).unwrap_or_default()
            ),
            field,
            self.raw[i].clone(),
            canonical.to_value(),
        ));
        self.slots.push((None, canonical.clone()));
    }

    /// Entry `i` reads (B) from the other cluster's ConfigMap: replaced by this cluster's.
    fn wrong_served(&mut self, i: usize, r: &ValuesReference, context: Context) {
        let names = self.names;
        let message = match context {
            Context::Workload => format!(
                "a workload cluster reads (B) from the management cluster's os-image-server output {} directly: Flux looks it up in the HelmRelease's own namespace, where only the Kyverno clone {} exists",
                r.name, names.served
            ),
            Context::Management => format!(
                "the management cluster reads (B) from {}, a Kyverno clone that exists only in workload-cluster namespaces; its (B) is the os-image-server output {}",
                r.name, names.served
            ),
        };
        self.findings.push(Finding::fixable_error(
            Check::ServedImages,
            message,
            format!("spec.valuesFrom[{i}]"),
            self.raw[i].clone(),
            if self.have_b {
                Value::Null
            } else {
                self.canonical_b.to_value()
            },
        ));
        if !self.have_b {
            self.have_b = true;
            self.slots.push((None, self.canonical_b.clone()));
        }
    }

    /// Entry `i` is the legacy os_images ConfigMap: replaced in place by (A) then (B), unless
    /// the list has them elsewhere; with (A) further down, a missing (B) goes after it
    /// ([`DesiredList::add_missing`]).
    fn legacy(&mut self, i: usize, r: &ValuesReference) {
        let names = self.names;
        let mut replacement = Vec::new();
        let a_elsewhere = self
            .refs
            .iter()
            .any(|r| names.role(r) == Role::OsImagesInfo);
        if !self.have_a && !a_elsewhere {
            replacement.push(self.canonical_a.clone());
            self.have_a = true;
        }
        let b_elsewhere = self.refs.iter().any(|r| names.role(r) == Role::Served);
        if !self.have_b && !b_elsewhere && !a_elsewhere {
            replacement.push(self.canonical_b.clone());
            self.have_b = true;
        }
        self.findings.push(Finding::fixable_error(
            Check::OsImagesInfo,
            format!(
                "{} carries the management cluster's os_images (the wiring from before os-images-info and the os-image-server output were decoupled): \
                 the images of this cluster must come from its own {} (A), and only the list of served images from {} (B)",
                r.name, names.os_images_info, names.served
            ),
            format!("spec.valuesFrom[{i}]"),
            self.raw[i].clone(),
            Value::Sequence(replacement.iter().map(ValuesReference::to_value).collect()),
        ));
        self.slots
            .extend(replacement.into_iter().map(|r| (None, r)));
    }

    /// Adds (A) before (B) (or last) and (B) right after (A) where the input has none.
    fn add_missing(&mut self) {
        let names = self.names;
        if !self.have_a {
            let at = self
                .slots
                .iter()
                .position(|(_, r)| names.role(r) == Role::Served)
                .unwrap_or(self.slots.len());
            self.findings.push(Finding::fixable_error(
                Check::OsImagesInfo,
                format!(
                    "spec.valuesFrom lacks (A), the cluster's own os-images-info ConfigMap {}: sylva-capi-cluster gets no os_images of this cluster",
                    names.os_images_info
                ),
                "spec.valuesFrom".into(),
                Value::Null,
                self.canonical_a.to_value(),
            ));
            self.slots.insert(at, (None, self.canonical_a.clone()));
        }
        if !self.have_b {
            let a = self.position(Role::OsImagesInfo);
            self.findings.push(Finding::fixable_error(
                Check::ServedImages,
                format!(
                    "spec.valuesFrom lacks (B), the served-images ConfigMap {}: sylva-capi-cluster cannot check that the os-image-server serves the selected images",
                    names.served
                ),
                "spec.valuesFrom".into(),
                Value::Null,
                self.canonical_b.to_value(),
            ));
            self.slots.insert(a + 1, (None, self.canonical_b.clone()));
        }
    }

    /// Moves (B) right after (A) if it comes first (a warning: the values the chart sees may
    /// differ); returns the positions of (A) and (B).
    fn order(&mut self) -> (usize, usize) {
        let (a, b) = (
            self.position(Role::OsImagesInfo),
            self.position(Role::Served),
        );
        if b > a {
            return (a, b);
        }
        let names = self.names;
        let at_input = self.slots[b].0.map(|i| format!("spec.valuesFrom[{i}]"));
        self.findings.push(Finding::fixable_error(
            Check::ValuesOrder,
            format!(
                "(B) {} comes before (A) {}; sylva-units renders (A) first and (B) after it, each later entry overriding the earlier ones",
                names.served, names.os_images_info
            ),
            at_input.unwrap_or_else(|| "spec.valuesFrom".into()),
            Value::Null,
            Value::Null,
        ).warning());
        let entry = self.slots.remove(b);
        self.slots.insert(a, entry);
        (a - 1, a)
    }

    /// Where the first entry of `role` is in the desired list ((A) and (B) always are, after
    /// [`DesiredList::add_missing`]).
    fn position(&self, role: Role) -> usize {
        self.slots
            .iter()
            .position(|(_, r)| self.names.role(r) == role)
            .unwrap_or_else(|| panic!("{role:?} is in the desired list"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(context: Context) -> Names {
        Names::new(&Capm3OSImageSourcesSpec::default(), context)
    }

    fn run(src: &str, context: Context) -> Wiring {
        let raw: Vec<Value> = serde_yaml::from_str(src).unwrap();
        let refs: Vec<ValuesReference> = serde_yaml::from_str(src).unwrap();
        check(&raw, &refs, &names(context), context)
    }

    fn desired_names(w: &Wiring) -> Vec<&str> {
        w.desired_refs.iter().map(|r| r.name.as_str()).collect()
    }

    const SECRET: &str =
        "{kind: Secret, name: helm-unit-values-cluster-abc1234, valuesKey: values}";

    #[test]
    fn the_sylva_units_wiring_passes_unchanged() {
        let src = format!(
            "[{SECRET}, {{kind: ConfigMap, name: os-images-info}}, {{kind: ConfigMap, name: kyverno-cloned-os-image-server-images}}]"
        );
        let w = run(&src, Context::Workload);
        assert!(w.findings.is_empty(), "{:?}", w.findings);
        assert_eq!(w.desired, serde_yaml::from_str::<Vec<Value>>(&src).unwrap());
        assert_eq!(w.positions, (1, 2));
        assert!(!w.adds_served);
        let src = format!(
            "[{SECRET}, {{kind: ConfigMap, name: os-images-info}}, {{kind: ConfigMap, name: capm3-os-image-server-os-images}}]"
        );
        assert!(run(&src, Context::Management).findings.is_empty());
    }

    #[test]
    fn legacy_clone_is_replaced_by_a_then_b_in_place() {
        let src = format!(
            "[{SECRET}, {{kind: ConfigMap, name: kyverno-cloned-os-images-info-capm3, valuesKey: values.yaml}}, {{kind: ConfigMap, name: other}}]"
        );
        let w = run(&src, Context::Workload);
        assert_eq!(
            desired_names(&w),
            [
                "helm-unit-values-cluster-abc1234",
                "os-images-info",
                "kyverno-cloned-os-image-server-images",
                "other"
            ]
        );
        assert_eq!(w.findings.len(), 1);
        assert!(w.findings[0].fixable && w.findings[0].is_error());
        assert!(
            w.adds_served,
            "the legacy entry is replaced by (A) and a new (B)"
        );
    }

    #[test]
    fn workload_pointing_at_the_management_configmap_is_rewired() {
        let src = "[{kind: ConfigMap, name: os-images-info}, {kind: ConfigMap, name: capm3-os-image-server-os-images}]";
        let w = run(src, Context::Workload);
        assert_eq!(
            desired_names(&w),
            ["os-images-info", "kyverno-cloned-os-image-server-images"]
        );
        assert_eq!(w.findings[0].field, "spec.valuesFrom[1]");
        // The same list is right for the management cluster...
        assert!(run(src, Context::Management).findings.is_empty());
        // ...and the clone is wrong there.
        let src = "[{kind: ConfigMap, name: os-images-info}, {kind: ConfigMap, name: kyverno-cloned-os-image-server-images}]";
        let w = run(src, Context::Management);
        assert_eq!(
            desired_names(&w),
            ["os-images-info", "capm3-os-image-server-os-images"]
        );
    }

    #[test]
    fn missing_entries_are_added_a_before_b() {
        let w = run(&format!("[{SECRET}]"), Context::Workload);
        assert_eq!(w.findings.len(), 2);
        assert_eq!(
            desired_names(&w)[1..],
            ["os-images-info", "kyverno-cloned-os-image-server-images"]
        );
        let w = run(
            "[{kind: ConfigMap, name: kyverno-cloned-os-image-server-images}]",
            Context::Workload,
        );
        assert_eq!(
            desired_names(&w),
            ["os-images-info", "kyverno-cloned-os-image-server-images"]
        );
    }

    #[test]
    fn b_before_a_is_a_warning_and_reordered() {
        let src = "[{kind: ConfigMap, name: kyverno-cloned-os-image-server-images}, {kind: Secret, name: s}, {kind: ConfigMap, name: os-images-info}]";
        let w = run(src, Context::Workload);
        assert_eq!(w.findings.len(), 1);
        assert!(!w.findings[0].is_error());
        assert_eq!(w.findings[0].check, Check::ValuesOrder);
        assert_eq!(
            desired_names(&w),
            [
                "s",
                "os-images-info",
                "kyverno-cloned-os-image-server-images"
            ]
        );
        assert_eq!(w.positions, (1, 2));
        assert!(!w.adds_served, "(B) was there, only moved");
    }

    #[test]
    fn non_default_keys_are_corrected() {
        let src = "[{kind: ConfigMap, name: os-images-info, valuesKey: data}, {kind: ConfigMap, name: kyverno-cloned-os-image-server-images, targetPath: x}]";
        let w = run(src, Context::Workload);
        assert_eq!(w.findings.len(), 2);
        assert!(w.desired_refs.iter().all(ValuesReference::merges_document));
    }
}

//! capm3 OS-image sources mode (`Capm3OSImageSources`).
//!
//! A Sylva capm3 cluster's `cluster` unit (sylva-capi-cluster) needs two facts about OS images:
//! (A) which image each machine uses and its sha256, from the cluster's *own* `os-images-info`
//! ConfigMap, and (B) which images the management cluster's os-image-server serves, from its
//! output ConfigMap (cloned by Kyverno into every workload-cluster namespace). This mode checks
//! that the `cluster` HelmRelease reads both, in that order, that (B) does not override (A), that
//! the clone policy and the Namespace label are in place, and — when the exported ConfigMaps are
//! among the items — that every selected image resolves to one entry and is served. With
//! `fix: true` it rewires what it can.
//!
//! Flow: read config → index items → per `cluster` HelmRelease: context and provider → wiring
//! (A)/(B) → images → Namespace label; then the clone policy.

mod check;
mod config;
mod finding;
mod images;
mod inputs;
mod order;
mod policy;
mod resources;
mod selection;
mod values;
mod wiring;

pub use config::*;
pub use finding::Finding;

use serde_yaml::Value;

use crate::krm::outcome::PatchOp;
use crate::krm::{Edit, KrmObject, KrmResult, Outcome};
use crate::modes::prepull::{config_field, fc_error};
pub use check::Check;
use inputs::{CLUSTER_UNIT, Inputs, SYLVA_UNIT_LABEL};

/// The infrastructure provider this mode is about.
pub const CAPM3: &str = "capm3";

/// Which cluster a `cluster` unit belongs to, once decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// The management cluster (reads the os-image-server output itself).
    Management,
    /// A workload cluster (reads the Kyverno clone in its namespace).
    Workload,
}

impl Context {
    fn as_str(self) -> &'static str {
        match self {
            Context::Management => "management cluster",
            Context::Workload => "workload cluster",
        }
    }
}

/// Runs the mode: any error result leaves every item as it came in.
pub fn run(spec: &Capm3OSImageSourcesSpec, items: &[Value], fc: Option<&Value>) -> Outcome {
    let mut out = Outcome::default();
    if let Err(e) = plan(spec, items, fc, &mut out) {
        out.edits.clear();
        out.results.push(e);
    }
    if spec.fail_on_warnings {
        out.promote_warnings();
    }
    if out.has_errors() {
        // Nothing is written: say so on the corrections that would have been.
        for r in out
            .results
            .iter_mut()
            .filter(|r| r.tags.contains_key("fixed"))
        {
            r.message.push_str(
                " — not written: this run has errors, so every item is left as it came in",
            );
        }
    }
    out
}

/// Checks the configuration values serde cannot.
fn validate(spec: &Capm3OSImageSourcesSpec, fc: Option<&Value>) -> Result<(), KrmResult> {
    let names = [
        ("osImagesInfo", &spec.os_images_info),
        ("servedImages", &spec.served_images),
        ("serverOutput.name", &spec.server_output.name),
        ("serverOutput.namespace", &spec.server_output.namespace),
        ("clonePolicy", &spec.clone_policy),
    ];
    for (field, value) in names {
        if value.is_empty() {
            return Err(config_error(
                fc,
                format!("{field} must not be empty"),
                field,
            ));
        }
    }
    if spec.served_images == spec.server_output.name {
        return Err(config_error(
            fc,
            "servedImages must differ from serverOutput.name: the workload clusters' copy and the management cluster's original are told apart by name".into(),
            "servedImages",
        ));
    }
    if let Some(c) = &spec.cluster
        && c.name.is_empty()
    {
        return Err(config_error(
            fc,
            "cluster.name must not be empty".into(),
            "cluster.name",
        ));
    }
    Ok(())
}

/// An error about the function config's own values, tagged as every such result is.
fn config_error(fc: Option<&Value>, message: String, field: &str) -> KrmResult {
    fc_error(fc, message, field).tag("check", crate::config::CHECK)
}

/// The `cluster` HelmReleases to check.
fn clusters(
    spec: &Capm3OSImageSourcesSpec,
    items: &[Value],
    inputs: &Inputs,
    fc: Option<&Value>,
) -> Result<Vec<usize>, KrmResult> {
    let Some(wanted) = &spec.cluster else {
        return Ok(inputs
            .helm_releases
            .iter()
            .copied()
            .filter(|&i| items[i].label(SYLVA_UNIT_LABEL) == Some(CLUSTER_UNIT))
            .collect());
    };
    let found: Vec<usize> = inputs
        .helm_releases
        .iter()
        .copied()
        .filter(|&i| {
            items[i].name() == wanted.name
                && wanted
                    .namespace
                    .as_deref()
                    .is_none_or(|ns| items[i].namespace() == Some(ns))
        })
        .collect();
    match found.len() {
        0 => Err(fc_error(
            fc,
            format!(
                "cluster names HelmRelease {}{} but no such item is in the input",
                wanted
                    .namespace
                    .as_deref()
                    .map(|ns| format!("{ns}/"))
                    .unwrap_or_default(),
                wanted.name
            ),
            "cluster",
        )
        .tag("check", Check::Cluster)),
        1 => Ok(found),
        n => Err(fc_error(
            fc,
            format!(
                "{n} HelmReleases are named {}: set cluster.namespace",
                wanted.name
            ),
            "cluster.namespace",
        )
        .tag("check", Check::Cluster)),
    }
}

fn plan(
    spec: &Capm3OSImageSourcesSpec,
    items: &[Value],
    fc: Option<&Value>,
    out: &mut Outcome,
) -> Result<(), KrmResult> {
    validate(spec, fc)?;
    let inputs = Inputs::scan(items);
    let clusters = clusters(spec, items, &inputs, fc)?;
    if clusters.is_empty() {
        out.push(
            KrmResult::warning(format!(
                "no HelmRelease labelled {SYLVA_UNIT_LABEL}: {CLUSTER_UNIT} is among the items: the valuesFrom wiring and the image selection were not checked"
            ))
            .tag("check", Check::Cluster),
        );
    }
    let mut capm3 = Vec::new();
    for index in clusters {
        if let Some(context) = check_cluster(spec, items, &inputs, index, fc, out)? {
            capm3.push(context);
        }
    }
    check_policy(spec, items, &inputs, &capm3, out)
}

/// Decides the context of the HelmRelease at `index`.
fn context(
    spec: &Capm3OSImageSourcesSpec,
    item: &Value,
    fc: Option<&Value>,
) -> Result<(Context, String), KrmResult> {
    match (spec.context, item.namespace()) {
        (ClusterContext::Management, _) => Ok((Context::Management, format!("{} set in the function config", config_field(fc, "context")))),
        (ClusterContext::Workload, _) => Ok((Context::Workload, format!("{} set in the function config", config_field(fc, "context")))),
        (ClusterContext::Auto, Some(ns)) if ns == spec.server_output.namespace => {
            Ok((Context::Management, format!("its namespace is {ns}")))
        }
        (ClusterContext::Auto, Some(ns)) => Ok((Context::Workload, format!("its namespace {ns} is not {}", spec.server_output.namespace))),
        (ClusterContext::Auto, None) => Err(KrmResult::error(format!(
            "HelmRelease {} has no namespace, so it cannot tell the management cluster (namespace {}) from a workload cluster: set metadata.namespace, or {}",
            item.name(),
            spec.server_output.namespace,
            config_field(fc, "context")
        ))
        .about(item)
        .field("metadata.namespace")
        .tag("check", Check::Provider)),
    }
}

/// The infrastructure provider and where it was read.
fn provider(
    items: &[Value],
    inputs: &Inputs,
    item: &Value,
    chart: &values::ChartValues,
) -> Result<(String, String), KrmResult> {
    let namespace = item.namespace();
    let err = |message: String| {
        KrmResult::error(message)
            .about(item)
            .field("spec.valuesFrom")
            .tag("check", Check::Provider)
    };
    if let Some(v) = values::get(&chart.root, &["capi_providers", "infra_provider"]) {
        let Some(p) = v.as_str().filter(|p| !values::is_template(p)) else {
            return Err(err(format!(
                "capi_providers.infra_provider in the chart values is not a provider name: {v:?}"
            )));
        };
        return Ok((
            p.to_owned(),
            "capi_providers.infra_provider of the chart values its valuesFrom items give".into(),
        ));
    }
    match values::sylva_values(items, inputs, namespace)? {
        Some(values::SylvaValues {
            root: sylva,
            origin,
            ..
        }) => match values::get(&sylva, &["cluster", "capi_providers", "infra_provider"]) {
            None => Ok((
                values::SYLVA_DEFAULT_INFRA_PROVIDER.into(),
                format!(
                    "sylva-units' default: {origin} does not set cluster.capi_providers.infra_provider"
                ),
            )),
            Some(Value::String(p)) if !values::is_template(p) => Ok((
                p.clone(),
                format!("cluster.capi_providers.infra_provider in {origin}"),
            )),
            Some(v) => Err(err(format!(
                "cluster.capi_providers.infra_provider in {origin} is not a provider name: {v:?}"
            ))),
        },
        None => Err(err(format!(
            "cannot tell whether HelmRelease {} belongs to a capm3 cluster: neither its cluster values Secret nor the sylva-units values (Secret or ConfigMap sylva-units-values, HelmRelease sylva-units) of namespace {} are among the items",
            item.name(),
            namespace.unwrap_or("<none>")
        ))),
    }
}

/// Checks one `cluster` HelmRelease; returns its context when it is a capm3 cluster.
fn check_cluster(
    spec: &Capm3OSImageSourcesSpec,
    items: &[Value],
    inputs: &Inputs,
    index: usize,
    fc: Option<&Value>,
    out: &mut Outcome,
) -> Result<Option<Context>, KrmResult> {
    let item = &items[index];
    let namespace = item.namespace();
    let (context, why) = context(spec, item, fc)?;
    let release = resources::helm_release(item)?;
    let current = values::chart_values(
        items,
        inputs,
        namespace,
        &release.spec.values_from,
        release.spec.values.as_ref(),
    )?;
    let (provider, origin) = provider(items, inputs, item, &current)?;
    if provider != CAPM3 {
        out.push(
            KrmResult::info(format!(
                "{}: infra provider {provider} ({origin}), not capm3: no capm3 OS image sources to check",
                context.as_str()
            ))
            .about(item)
            .field("spec.valuesFrom")
            .tag("check", Check::Provider),
        );
        return Ok(None);
    }
    out.push(
        KrmResult::info(format!(
            "{} ({why}), infra provider capm3 ({origin}): (A) {}, (B) {}",
            context.as_str(),
            spec.os_images_info,
            wiring::Names::new(spec, context).served
        ))
        .about(item)
        .field("spec.valuesFrom")
        .tag("check", Check::Provider),
    );
    let raw: Vec<Value> = match item.get("spec").and_then(|s| s.get("valuesFrom")) {
        Some(Value::Sequence(entries)) => entries.clone(),
        _ => Vec::new(),
    };
    let names = wiring::Names::new(spec, context);
    let mut wiring = wiring::check(&raw, &release.spec.values_from, &names, context);
    let changed = wiring.desired != raw;
    // Management cluster first: adding (B) needs evidence that it exists.
    let refused = wiring.adds_served && !order::served_exists(spec, inputs, namespace, &names);
    if refused {
        for finding in &mut wiring.findings {
            finding.fixable = false;
        }
    }
    for finding in wiring.findings.iter().cloned() {
        out.push(finding.into_result(item, spec.fix));
    }
    if refused {
        out.push(order::refusal(spec, context, item, &names, fc));
    } else if spec.fix && changed {
        out.edits.push(Edit::Patch {
            index,
            ops: vec![PatchOp::Set {
                path: vec!["spec".into(), "valuesFrom".into()],
                value: Value::Sequence(wiring.desired.clone()),
            }],
        });
    }
    let cluster = images::Cluster {
        index,
        namespace,
        refs: &wiring.desired_refs,
        positions: wiring.positions,
        inline: release.spec.values.as_ref(),
        provider: CAPM3,
    };
    images::check(items, inputs, &cluster, &mut out.results)?;
    if context == Context::Workload {
        check_namespace(spec, items, inputs, item, out)?;
    }
    Ok(Some(context))
}

/// The workload Namespace's label, when the Namespace is among the items.
fn check_namespace(
    spec: &Capm3OSImageSourcesSpec,
    items: &[Value],
    inputs: &Inputs,
    release: &Value,
    out: &mut Outcome,
) -> Result<(), KrmResult> {
    let Some(ns) = release.namespace() else {
        return Ok(());
    };
    let Some(&index) = inputs.namespaces.get(ns) else {
        out.push(
            KrmResult::warning(format!(
                "Namespace {ns} is not among the items: its {} label (which the Kyverno policy matches to copy {} into it) was not checked",
                policy::WORKLOAD_CLUSTER_LABEL,
                spec.served_images
            ))
            .about(release)
            .field("metadata.namespace")
            .tag("check", Check::NamespaceLabel),
        );
        return Ok(());
    };
    if let Some(finding) = policy::namespace_label(&items[index])? {
        out.push(finding.into_result(&items[index], spec.fix));
        if spec.fix {
            out.edits.push(Edit::Patch {
                index,
                ops: vec![PatchOp::set_label(policy::WORKLOAD_CLUSTER_LABEL, "")],
            });
        }
    }
    Ok(())
}

/// Check 4: the clone policy, when it is among the items or a capm3 cluster needs it.
fn check_policy(
    spec: &Capm3OSImageSourcesSpec,
    items: &[Value],
    inputs: &Inputs,
    capm3: &[Context],
    out: &mut Outcome,
) -> Result<(), KrmResult> {
    let found = policy::find(items, inputs, spec)?;
    if found.is_empty() {
        if capm3.is_empty() {
            return Ok(());
        }
        if capm3.contains(&Context::Management)
            && let Some(error) = order::policy_unit_disabled(spec, items, inputs)?
        {
            out.push(error);
        }
        let what = format!(
            "the Kyverno ClusterPolicy that clones {}/{} as {} into every workload-cluster namespace",
            spec.server_output.namespace, spec.server_output.name, spec.served_images
        );
        out.push(
            KrmResult::warning(format!(
                "{what} is not among the items: not checked; {}",
                order::policy_owner_hint(spec, capm3.contains(&Context::Management))
            ))
            .about_ref(crate::krm::ResourceRef {
                api_version: "kyverno.io/v1".into(),
                kind: "ClusterPolicy".into(),
                name: spec.clone_policy.clone(),
                namespace: None,
            })
            .field("spec.rules")
            .tag("check", Check::ClonePolicy),
        );
        return Ok(());
    }
    for (index, policy_spec, rule) in found {
        let item = &items[index];
        let (findings, fixed) = policy::check(item, &policy_spec, rule, spec);
        if findings.is_empty() {
            out.push(
                KrmResult::info(format!(
                    "ClusterPolicy {} clones {}/{} as {} into Namespaces labelled {}",
                    item.name(),
                    spec.server_output.namespace,
                    spec.server_output.name,
                    spec.served_images,
                    policy::WORKLOAD_CLUSTER_LABEL
                ))
                .about(item)
                .tag("check", Check::ClonePolicy),
            );
        }
        let owner = order::flux_owner(item);
        for mut finding in findings {
            if let Some(owner) = &owner {
                finding.message.push_str(owner);
            }
            out.push(finding.into_result(item, spec.fix));
        }
        if let (true, Some(fixed)) = (spec.fix, fixed) {
            out.edits.push(Edit::Replace { index, item: fixed });
        }
    }
    Ok(())
}

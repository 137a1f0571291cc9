//! Helm values edits: stopping the MetalLB speaker (phase `stop-speaker`) and enabling Cilium's L2
//! announcements with a client rate limit sized for one lease per Service.

use serde_yaml::{Mapping, Value};

use super::helm::{self, get_path, mapping_at, path};
use super::inputs::at;
use super::install::COZYSTACK_KUBEOVN_DEVICES;
use super::inventory::{CiliumRelease, Install, InstallKind, SPEAKER_OFF};
use super::sharing::PROTOCOL_DIFFERENTIATION_VALUE;
use super::version::CiliumVersion;
use crate::krm::KrmResult;

/// Cilium's default `l2announcements.leaseRenewDeadline`.
pub const DEFAULT_RENEW_SECS: u64 = 5;

/// A Flux Kustomization `patches` entry: `patch` applied to the objects of `kind` whose name
/// matches `name` (a regex, as Flux's target selector reads it).
fn kustomization_patch(kind: &str, name: &str, patch: String) -> Value {
    let mut target = Mapping::new();
    target.insert("kind".into(), kind.into());
    target.insert("name".into(), name.into());
    let mut entry = Mapping::new();
    entry.insert("patch".into(), Value::from(patch));
    entry.insert("target".into(), Value::Mapping(target));
    Value::Mapping(entry)
}

/// The patch cutover adds to a Flux Kustomization that installs MetalLB from manifests: the
/// speaker DaemonSet gets a node selector no node has, so no speaker pod runs.
fn speaker_patch() -> Value {
    kustomization_patch(
        "DaemonSet",
        ".*speaker",
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: speaker\nspec:\n  template:\n    spec:\n      nodeSelector:\n        {}: {}\n",
            SPEAKER_OFF.0, SPEAKER_OFF.1
        ),
    )
}

/// The patch that goes with [`speaker_patch`]: MetalLB's controller Deployment scaled to 0, so
/// deleting the IPAddressPools in phase cutover cannot make it clear or re-allocate a Service's
/// status (`clearServiceState`, metallb/metallb controller/service.go v0.16.1).
fn controller_patch() -> Value {
    kustomization_patch(
        "Deployment",
        ".*controller",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: controller\nspec:\n  replicas: 0\n"
            .to_owned(),
    )
}

/// A MetalLB controller Deployment among plain manifests, scaled to 0 (phase stop-speaker), with
/// the field and what was done; `None` for any other item or one already at 0.
pub fn stop_controller_manifest(item: &Value) -> Option<(Value, String, String)> {
    use crate::krm::KrmObject;
    let component = item
        .label("app.kubernetes.io/component")
        .or_else(|| item.label("component"));
    let controller = item.kind() == "Deployment"
        && (component == Some("controller") || item.name().ends_with("controller"));
    if !controller || at(item, &["spec", "replicas"]) == Some(&Value::from(0)) {
        return None;
    }
    let mut out = item.clone();
    mapping_at(&mut out, &["spec".to_owned()])?.insert("replicas".into(), 0.into());
    Some((
        out,
        "spec.replicas".to_owned(),
        "controller Deployment scaled to 0: no IPAddressPool deletion can move a Service's IP"
            .to_owned(),
    ))
}

/// Whether this installation item leaves the speaker stopped: `Some(true/false)`, or `None` for
/// items that have nothing to do with the speaker (CRDs, the controller, RBAC, a HelmRelease
/// rendered from a Package among the items …).
pub fn speaker_stopped(item: &Value, install: &Install) -> Option<bool> {
    match &install.kind {
        // Helm renders the speaker unless `speaker.enabled` is false (a string "false" is true
        // to the chart's `if`).
        InstallKind::Helm { values, .. } => Some(
            get_path(
                &helm::read(item, &values.at),
                &path(&values.prefix, &["speaker", "enabled"]),
            ) == Some(&Value::Bool(false)),
        ),
        InstallKind::Rendered { .. } => None,
        InstallKind::FluxKustomization => Some(
            at(item, &["spec", "patches"])
                .and_then(Value::as_sequence)
                .is_some_and(|ps| {
                    ps.iter().any(|p| {
                        p.get("patch")
                            .and_then(Value::as_str)
                            .is_some_and(|t| t.contains(SPEAKER_OFF.0))
                    })
                }),
        ),
        InstallKind::Manifest { speaker: true } => Some(
            at(
                item,
                &["spec", "template", "spec", "nodeSelector", SPEAKER_OFF.0],
            )
            .and_then(Value::as_str)
                == Some(SPEAKER_OFF.1),
        ),
        InstallKind::Manifest { speaker: false } => None,
    }
}

/// Stops the speaker of one installation item. Returns the edited item, the field and a
/// description, or `None` when it is already stopped or not a speaker-bearing item.
pub fn stop_speaker(item: &Value, install: &Install) -> Option<(Value, String, String)> {
    if speaker_stopped(item, install) != Some(false) {
        return None;
    }
    let mut out = item.clone();
    let (field, what) = match &install.kind {
        InstallKind::Helm { values, .. } => {
            helm::set(
                &mut out,
                values,
                &["speaker", "enabled"],
                Value::Bool(false),
            );
            // The controller goes with it: deleting IPAddressPools (phase cutover) while it runs
            // makes it clear or re-allocate the Services' status (`clearServiceState`,
            // metallb/metallb controller/service.go v0.16.1). Its webhook validates only CREATE
            // and UPDATE of pools (charts/metallb/templates/webhooks.yaml), so the prune still
            // works without it.
            helm::set(
                &mut out,
                values,
                &["controller", "enabled"],
                Value::Bool(false),
            );
            (
                values.field("speaker.enabled"),
                "speaker and controller disabled in the Helm values (the chart then removes the speaker DaemonSet \
                 and the controller Deployment, so no IPAddressPool deletion can move a Service's IP)",
            )
        }
        InstallKind::FluxKustomization => {
            let spec = mapping_at(&mut out, &["spec".to_owned()])?;
            let patches = spec
                .entry("patches".into())
                .or_insert_with(|| Value::Sequence(Vec::new()));
            let patches = patches.as_sequence_mut()?;
            patches.push(speaker_patch());
            patches.push(controller_patch());
            (
                "spec.patches".to_owned(),
                "patches added that keep the speaker DaemonSet off every node and scale the controller to 0",
            )
        }
        InstallKind::Manifest { speaker: true } => {
            let keys: Vec<String> = ["spec", "template", "spec", "nodeSelector"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            mapping_at(&mut out, &keys)?.insert(SPEAKER_OFF.0.into(), SPEAKER_OFF.1.into());
            (
                format!("spec.template.spec.nodeSelector.{}", SPEAKER_OFF.0),
                "node selector no node carries added: no speaker pod runs",
            )
        }
        InstallKind::Rendered { .. } | InstallKind::Manifest { speaker: false } => return None,
    };
    Some((out, field, what.to_owned()))
}

/// The Cilium values as the chart sees them: the release's own values over the defaults of the
/// cozystack umbrella chart (packages/system/cilium/values.yaml sets `kubeProxyReplacement:
/// true`; `values-kubeovn.yaml` sets `devices`), which its values never repeat.
pub fn effective_cilium_values(item: &Value, release: &CiliumRelease) -> Value {
    let own = helm::scoped(item, &release.values);
    if !release.chart.cozystack {
        return own;
    }
    let mut merged = Mapping::new();
    merged.insert("kubeProxyReplacement".into(), Value::Bool(true));
    if release.kubeovn {
        merged.insert("devices".into(), COZYSTACK_KUBEOVN_DEVICES.into());
    }
    if let Some(m) = own.as_mapping() {
        for (k, v) in m {
            merged.insert(k.clone(), v.clone());
        }
    }
    Value::Mapping(merged)
}

/// The Cilium Helm value [`PROTOCOL_DIFFERENTIATION_VALUE`], when set.
pub fn protocol_differentiation(item: &Value, release: &CiliumRelease) -> Option<bool> {
    let keys: Vec<String> = PROTOCOL_DIFFERENTIATION_VALUE
        .split('.')
        .map(str::to_owned)
        .collect();
    helm::as_bool(get_path(&effective_cilium_values(item, release), &keys))
}

/// What was decided about the Cilium release values.
#[derive(Debug, Default)]
pub struct CiliumValues {
    /// The edited release item, when anything changed.
    pub edited: Option<Value>,
    /// Results.
    pub results: Vec<KrmResult>,
    /// Interfaces Cilium uses (`devices`), when restricted.
    pub devices: Option<Vec<String>>,
}

/// A number in the values, read as go-yaml (and so Helm) reads it: `0644` is 420, `1_000` is
/// 1000 (`krm::yaml::resolve::go_yaml_u64`).
fn as_u64(v: Option<&Value>) -> Option<u64> {
    crate::krm::yaml::resolve::go_yaml_u64(v?)
}

/// Renew deadline in seconds from a values string such as `5s`.
fn renew_from_values(v: Option<&Value>) -> Option<u64> {
    let text = v?.as_str()?;
    crate::config::types::Duration::parse(text)
        .ok()
        .map(|d| d.as_secs_ceil().max(1))
}

/// The `k8sClientRateLimit` Cilium's L2 announcements need for `services` leases renewed every
/// `renew_secs`, as values a person can set: `qps` is the chart default plus one renewal per
/// Service per renew deadline (the agent's own traffic taken as the chart default), `burst`
/// twice that, so never below `qps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// `k8sClientRateLimit.qps`.
    pub qps: u64,
    /// `k8sClientRateLimit.burst`.
    pub burst: u64,
}

impl RateLimit {
    /// What `services` leases renewed every `renew_secs` need on `version`.
    pub fn needed(version: &CiliumVersion, services: usize, renew_secs: u64) -> RateLimit {
        let qps = version.default_rate_limit().0 + (services as u64).div_ceil(renew_secs.max(1));
        RateLimit {
            qps,
            burst: 2 * qps,
        }
    }
}

impl std::fmt::Display for RateLimit {
    /// `k8sClientRateLimit.qps: 11, k8sClientRateLimit.burst: 22`: the Helm values to set.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "k8sClientRateLimit.qps: {}, k8sClientRateLimit.burst: {}",
            self.qps, self.burst
        )
    }
}

/// Checks and edits the Cilium release: KPR required, L2 announcements on, rate limit sized for
/// `services` leases.
pub fn cilium(
    item: &Value,
    release: &CiliumRelease,
    version: &CiliumVersion,
    services: usize,
    renew_override: Option<u64>,
) -> CiliumValues {
    let scoped = effective_cilium_values(item, release);
    let mut out = CiliumValues {
        results: cilium_prerequisites(item, release, &scoped),
        devices: cilium_devices(&scoped),
        ..CiliumValues::default()
    };
    // Copied only when something changes: the release may be large, and in most phases its
    // values already carry what they need.
    let mut edited = None;
    enable_l2_announcements(item, release, &scoped, &mut edited, &mut out.results);
    let rate = RateLimitInputs {
        version,
        services,
        renew_override,
    };
    raise_rate_limit(item, release, &scoped, rate, &mut edited, &mut out.results);
    out.edited = edited;
    out
}

/// The copy of `item` being edited, made at the first change.
fn copy_on_write<'a>(edited: &'a mut Option<Value>, item: &Value) -> &'a mut Value {
    edited.get_or_insert_with(|| item.clone())
}

/// What L2 announcements need of the release's values and the function cannot set: kube-proxy
/// replacement, LB-IPAM on and owning Services without a class; and a warning when values
/// come from `spec.valuesFrom`, which is not read.
fn cilium_prerequisites(item: &Value, release: &CiliumRelease, scoped: &Value) -> Vec<KrmResult> {
    let mut results = Vec::new();
    let field = |rest: &str| release.values.field(rest);
    let own_values_from = matches!(
        release.carrier,
        super::inventory::Carrier::HelmRelease { generated_by: None }
    );
    // cozystack's `cozystack-values` Secret holds cluster-wide settings, no chart values.
    let inspected_elsewhere = at(item, &["spec", "valuesFrom"])
        .and_then(Value::as_sequence)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r.get("name").and_then(Value::as_str) != Some("cozystack-values"))
        });
    if own_values_from && inspected_elsewhere {
        results.push(
            KrmResult::warning(
                "spec.valuesFrom is not inspected: kubeProxyReplacement, l2announcements and k8sClientRateLimit \
                 are checked against spec.values only",
            )
            .about(item)
            .field("spec.valuesFrom"),
        );
    }
    let kpr = scoped.get("kubeProxyReplacement");
    let kpr_ok = matches!(kpr, Some(Value::Bool(true)))
        || matches!(kpr.and_then(Value::as_str), Some("true" | "strict"));
    if !kpr_ok {
        results.push(
            KrmResult::error(
                "Cilium L2 announcements require kubeProxyReplacement: true (it is the chart default false here)",
            )
            .about(item)
            .field(field("kubeProxyReplacement"))
            .proposed(true),
        );
    }
    // LB-IPAM must own Services without a loadBalancerClass, or their IPs are neither imported
    // nor announced (cozystack's 1.19 workaround sets defaultLBServiceIPAM: none).
    if let Some(v) = scoped.get("defaultLBServiceIPAM")
        && v.as_str() != Some("lbipam")
    {
        results.push(
            KrmResult::error(
                "defaultLBServiceIPAM is not lbipam: Cilium LB-IPAM would ignore Services without a \
                 loadBalancerClass, which is every Service MetalLB serves",
            )
            .about(item)
            .field(field("defaultLBServiceIPAM"))
            .current(v.clone())
            .proposed("lbipam"),
        );
    }
    if helm::as_bool(scoped.get("enableLBIPAM")) == Some(false) {
        results.push(
            KrmResult::error("enableLBIPAM is false: the Cilium pools would never allocate")
                .about(item)
                .field(field("enableLBIPAM"))
                .proposed(true),
        );
    }
    results
}

/// The interfaces Cilium uses (`devices`: a list, or a string of names separated by spaces or
/// commas), when the values restrict them.
fn cilium_devices(scoped: &Value) -> Option<Vec<String>> {
    match scoped.get("devices") {
        Some(Value::String(s)) => Some(
            s.split([' ', ','])
                .filter(|d| !d.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        Some(Value::Sequence(seq)) => Some(
            seq.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

/// Turns L2 announcements on in `edited` (a copy of `item`, made here if need be) unless the
/// values have them on.
fn enable_l2_announcements(
    item: &Value,
    release: &CiliumRelease,
    scoped: &Value,
    edited: &mut Option<Value>,
    results: &mut Vec<KrmResult>,
) {
    let hv = &release.values;
    let l2 = get_path(scoped, &["l2announcements".into(), "enabled".into()]);
    if helm::as_bool(l2) == Some(true) {
        return;
    }
    helm::set(
        copy_on_write(edited, item),
        hv,
        &["l2announcements", "enabled"],
        Value::Bool(true),
    );
    results.push(
        KrmResult::info(
            "L2 announcements enabled (Cilium agents restart; nothing is announced until a policy exists)",
        )
        .about(item)
        .field(hv.field("l2announcements.enabled"))
        .proposed(true),
    );
}

/// What the client rate limit must carry: one lease per LoadBalancer Service, renewed every
/// `leaseRenewDeadline`.
struct RateLimitInputs<'a> {
    version: &'a CiliumVersion,
    services: usize,
    /// The renew deadline the function config sets, over the values' own.
    renew_override: Option<u64>,
}

/// Raises `k8sClientRateLimit` in `edited` (a copy of `item`, made here if need be) when the
/// values' (or the chart's default) qps is below what the leases need.
fn raise_rate_limit(
    item: &Value,
    release: &CiliumRelease,
    scoped: &Value,
    rate: RateLimitInputs,
    edited: &mut Option<Value>,
    results: &mut Vec<KrmResult>,
) {
    let RateLimitInputs {
        version,
        services,
        renew_override,
    } = rate;
    let hv = &release.values;
    let renew = renew_override
        .or_else(|| {
            renew_from_values(get_path(
                scoped,
                &["l2announcements".into(), "leaseRenewDeadline".into()],
            ))
        })
        .unwrap_or(DEFAULT_RENEW_SECS);
    let (default_qps, default_burst) = version.default_rate_limit();
    let rl = scoped.get("k8sClientRateLimit");
    let qps = as_u64(rl.and_then(|r| r.get("qps"))).unwrap_or(default_qps);
    let burst = as_u64(rl.and_then(|r| r.get("burst"))).unwrap_or(default_burst);
    let needed = RateLimit::needed(version, services, renew);
    if qps >= needed.qps {
        return;
    }
    // A larger burst already set is kept.
    let set = RateLimit {
        qps: needed.qps,
        burst: burst.max(needed.burst),
    };
    let edited = copy_on_write(edited, item);
    helm::set(
        edited,
        hv,
        &["k8sClientRateLimit", "qps"],
        Value::from(set.qps),
    );
    helm::set(
        edited,
        hv,
        &["k8sClientRateLimit", "burst"],
        Value::from(set.burst),
    );
    results.push(
        KrmResult::info(format!(
            "k8sClientRateLimit raised ({set}): {services} LoadBalancer Service lease(s) renewed every \
             {renew}s need {} qps on top of the agent's {default_qps}",
            set.qps - default_qps
        ))
        .about(item)
        .field(hv.field("k8sClientRateLimit.qps"))
        .current(qps)
        .proposed(set.qps),
    );
}

/// True when a Cilium `devices` entry (exact name, or `prefix+` wildcard) covers `iface`.
pub fn device_covers(device: &str, iface: &str) -> bool {
    match device.strip_suffix('+') {
        Some(prefix) => iface.starts_with(prefix),
        None => device == iface,
    }
}

#[cfg(test)]
mod tests {
    use super::super::install::{Chart, HelmValues, ValuesAt};
    use super::super::inventory::Carrier;
    use super::*;

    #[test]
    fn values_content_keeps_yaml_1_1_strings_quoted() {
        let item: Value = serde_yaml::from_str(
            "apiVersion: helm.cattle.io/v1\nkind: HelmChart\nmetadata: {name: metallb}\nspec:\n  chart: metallb\n  valuesContent: |\n    mode: \"on\"\n",
        )
        .unwrap();
        let install = Install {
            index: 0,
            kind: InstallKind::Helm {
                values: HelmValues {
                    at: ValuesAt::Text,
                    prefix: Vec::new(),
                },
                carrier: Carrier::HelmChart,
            },
        };
        let (out, _, _) = stop_speaker(&item, &install).unwrap();
        let text = out["spec"]["valuesContent"].as_str().unwrap();
        assert!(text.contains("mode: \"on\""), "{text}");
        assert!(text.contains("enabled: false"), "{text}");
        assert_eq!(speaker_stopped(&out, &install), Some(true));
    }

    #[test]
    fn device_wildcards() {
        assert!(device_covers("eth+", "eth0"));
        assert!(device_covers("ovn0", "ovn0"));
        assert!(!device_covers("ovn0", "eth0"));
    }

    /// The upstream cilium chart installed by a Flux HelmRelease, values at `spec.values`.
    fn flux_cilium_release() -> CiliumRelease {
        CiliumRelease {
            index: 0,
            values: HelmValues {
                at: ValuesAt::Tree(vec!["spec".into(), "values".into()]),
                prefix: Vec::new(),
            },
            carrier: Carrier::HelmRelease { generated_by: None },
            chart: Chart {
                name: "cilium".into(),
                version: None,
                cozystack: false,
            },
            kubeovn: false,
        }
    }

    #[test]
    fn values_edit_keeps_existing_keys_and_is_idempotent() {
        let item: Value = serde_yaml::from_str(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: cilium}\nspec:\n  values:\n    kubeProxyReplacement: true\n    other: 1\n",
        )
        .unwrap();
        let rel = flux_cilium_release();
        let v = CiliumVersion::parse("1.18.4").unwrap();
        let out = cilium(&item, &rel, &v, 12, None);
        let edited = out.edited.unwrap();
        let values = &edited["spec"]["values"];
        assert_eq!(values["other"], Value::from(1));
        assert_eq!(values["l2announcements"]["enabled"], Value::Bool(true));
        assert_eq!(values["k8sClientRateLimit"]["qps"], Value::from(13));
        assert_eq!(values["k8sClientRateLimit"]["burst"], Value::from(26));
        assert!(
            out.results.iter().any(|r| r.message.starts_with(
                "k8sClientRateLimit raised (k8sClientRateLimit.qps: 13, k8sClientRateLimit.burst: 26):"
            )),
            "{:?}",
            out.results
        );
        let again = cilium(&edited, &rel, &v, 12, None);
        assert!(again.edited.is_none());
        assert!(again.results.is_empty());
    }

    /// The finding names values one can paste, and a burst kept from the values is never below
    /// the qps written beside it.
    #[test]
    fn rate_limit_values_are_concrete_and_burst_is_never_below_qps() {
        let v117 = CiliumVersion::parse("1.17.6").unwrap();
        let v116 = CiliumVersion::parse("1.16.3").unwrap();
        assert_eq!(
            RateLimit::needed(&v117, 1, 5),
            RateLimit { qps: 11, burst: 22 }
        );
        assert_eq!(
            RateLimit::needed(&v116, 2, 5).to_string(),
            "k8sClientRateLimit.qps: 6, k8sClientRateLimit.burst: 12"
        );
        for services in [0, 1, 7, 100, 10_000] {
            for renew in [0, 1, 5, 60] {
                let rl = RateLimit::needed(&v117, services, renew);
                assert!(rl.burst >= rl.qps, "{services} {renew}: {rl:?}");
            }
        }
        let item: Value = serde_yaml::from_str(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: cilium}\nspec:\n  values:\n    kubeProxyReplacement: true\n    l2announcements: {enabled: true}\n    k8sClientRateLimit: {qps: 3, burst: 2}\n",
        )
        .unwrap();
        let rel = flux_cilium_release();
        let out = cilium(&item, &rel, &v117, 40, None);
        let values = &out.edited.unwrap()["spec"]["values"]["k8sClientRateLimit"];
        assert_eq!(values["qps"], Value::from(18));
        assert_eq!(values["burst"], Value::from(36));
        assert_eq!(
            out.results[0].message,
            "k8sClientRateLimit raised (k8sClientRateLimit.qps: 18, k8sClientRateLimit.burst: 36): \
             40 LoadBalancer Service lease(s) renewed every 5s need 8 qps on top of the agent's 10"
        );
    }
}

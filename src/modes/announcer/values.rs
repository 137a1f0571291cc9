//! Helm values edits: stopping the MetalLB speaker (phase `stop-speaker`) and enabling Cilium's L2
//! announcements with a client rate limit sized for one lease per Service.

use serde_yaml::{Mapping, Value};

use super::inputs::{CiliumRelease, Install, InstallKind, SPEAKER_OFF, at};
use super::version::CiliumVersion;
use crate::krm::KrmResult;

/// Cilium's default `l2announcements.leaseRenewDeadline`.
pub const DEFAULT_RENEW_SECS: u64 = 5;

fn mapping_at<'a>(root: &'a mut Value, keys: &[String]) -> Option<&'a mut Mapping> {
    let mut cur = root.as_mapping_mut()?;
    for key in keys {
        let entry = cur
            .entry(Value::from(key.as_str()))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if !entry.is_mapping() {
            *entry = Value::Mapping(Mapping::new());
        }
        cur = entry.as_mapping_mut()?;
    }
    Some(cur)
}

fn path(prefix: &[String], rest: &[&str]) -> Vec<String> {
    prefix
        .iter()
        .cloned()
        .chain(rest.iter().map(|s| (*s).to_owned()))
        .collect()
}

fn get_path<'a>(v: &'a Value, keys: &[String]) -> Option<&'a Value> {
    keys.iter().try_fold(v, |cur, k| cur.get(k.as_str()))
}

/// Values of a `helm.cattle.io` HelmChart live in a YAML string.
fn parse_values_content(item: &Value) -> Value {
    at(item, &["spec", "valuesContent"])
        .and_then(Value::as_str)
        .and_then(|t| crate::krm::yaml::from_str(t).ok())
        .filter(Value::is_mapping)
        .unwrap_or_else(|| Value::Mapping(Mapping::new()))
}

/// Writes values back as YAML text with the engine's emitter, which quotes every string a YAML
/// 1.1 reader (Helm) could take for a boolean or number.
fn write_values_content(item: &mut Value, values: &Value) {
    let mut text = String::new();
    crate::krm::emit::emit_document(&mut text, values);
    if let Some(spec) = mapping_at(item, &["spec".to_owned()]) {
        spec.insert(Value::from("valuesContent"), Value::from(text));
    }
}

/// The patch cutover adds to a Flux Kustomization that installs MetalLB from manifests: the
/// speaker DaemonSet gets a node selector no node has, so no speaker pod runs.
fn speaker_patch() -> Value {
    let mut target = Mapping::new();
    target.insert("kind".into(), "DaemonSet".into());
    target.insert("name".into(), ".*speaker".into());
    let mut patch = Mapping::new();
    patch.insert(
        "patch".into(),
        Value::from(format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: speaker\nspec:\n  template:\n    spec:\n      nodeSelector:\n        {}: {}\n",
            SPEAKER_OFF.0, SPEAKER_OFF.1
        )),
    );
    patch.insert("target".into(), Value::Mapping(target));
    Value::Mapping(patch)
}

/// Whether this installation item leaves the speaker stopped: `Some(true/false)`, or `None` for
/// items that have nothing to do with the speaker (CRDs, the controller, RBAC …).
pub fn speaker_stopped(item: &Value, install: &Install) -> Option<bool> {
    match &install.kind {
        InstallKind::HelmRelease { prefix } => Some(
            at(item, &["spec", "values"])
                .and_then(|values| get_path(values, &path(prefix, &["speaker", "enabled"])))
                == Some(&Value::Bool(false)),
        ),
        InstallKind::HelmChart => Some(
            at(&parse_values_content(item), &["speaker", "enabled"]) == Some(&Value::Bool(false)),
        ),
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

/// Stops the speaker of one installation item. Returns the edited item and a description, or
/// `None` when it is already stopped or not a speaker-bearing item.
pub fn stop_speaker(item: &Value, install: &Install) -> Option<(Value, String, String)> {
    if speaker_stopped(item, install) != Some(false) {
        return None;
    }
    let mut out = item.clone();
    let (field, what) = match &install.kind {
        InstallKind::HelmRelease { prefix } => {
            let p = path(prefix, &["speaker"]);
            let full = path(&["spec".to_owned(), "values".to_owned()], &[]);
            let m = mapping_at(&mut out, &[full, p.clone()].concat())?;
            m.insert("enabled".into(), Value::Bool(false));
            (
                format!("spec.values.{}.enabled", p.join(".")),
                "speaker disabled in the Helm values (the chart then removes the speaker DaemonSet)",
            )
        }
        InstallKind::HelmChart => {
            let mut values = parse_values_content(item);
            mapping_at(&mut values, &["speaker".to_owned()])?
                .insert("enabled".into(), Value::Bool(false));
            write_values_content(&mut out, &values);
            (
                "spec.valuesContent".to_owned(),
                "speaker disabled in valuesContent (the chart then removes the speaker DaemonSet)",
            )
        }
        InstallKind::FluxKustomization => {
            let spec = mapping_at(&mut out, &["spec".to_owned()])?;
            let patches = spec
                .entry("patches".into())
                .or_insert_with(|| Value::Sequence(Vec::new()));
            patches.as_sequence_mut()?.push(speaker_patch());
            (
                "spec.patches".to_owned(),
                "patch added that keeps the speaker DaemonSet off every node",
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
        InstallKind::Manifest { speaker: false } => return None,
    };
    Some((out, field, what.to_owned()))
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

fn as_u64(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Renew deadline in seconds from a values string such as `5s`.
fn renew_from_values(v: Option<&Value>) -> Option<u64> {
    let text = v?.as_str()?;
    crate::config::types::Duration::parse(text)
        .ok()
        .map(|d| d.as_secs_ceil().max(1))
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
    let mut out = CiliumValues::default();
    let (values, base) = if release.flux {
        (
            at(item, &["spec", "values"])
                .cloned()
                .unwrap_or_else(|| Value::Mapping(Mapping::new())),
            "spec.values".to_owned(),
        )
    } else {
        (parse_values_content(item), "spec.valuesContent".to_owned())
    };
    let prefix = &release.prefix;
    let field = |rest: &str| {
        let mut parts = vec![base.clone()];
        parts.extend(prefix.iter().cloned());
        parts.push(rest.to_owned());
        parts.join(".")
    };
    let scoped = get_path(&values, prefix).cloned().unwrap_or(Value::Null);
    if release.flux && at(item, &["spec", "valuesFrom"]).is_some() {
        out.results.push(
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
        out.results.push(
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
        out.results.push(
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
    let lbipam_off = match scoped.get("enableLBIPAM") {
        Some(Value::Bool(b)) => !b,
        Some(Value::String(s)) => s == "false",
        _ => false,
    };
    if lbipam_off {
        out.results.push(
            KrmResult::error("enableLBIPAM is false: the Cilium pools would never allocate")
                .about(item)
                .field(field("enableLBIPAM"))
                .proposed(true),
        );
    }
    out.devices = match scoped.get("devices") {
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
    };
    let mut edited = values.clone();
    let mut changed = false;
    let l2 = get_path(&scoped, &["l2announcements".into(), "enabled".into()]);
    let l2_on = matches!(l2, Some(Value::Bool(true))) || l2.and_then(Value::as_str) == Some("true");
    if !l2_on {
        if let Some(m) = mapping_at(&mut edited, &path(prefix, &["l2announcements"])) {
            m.insert("enabled".into(), Value::Bool(true));
            changed = true;
        }
        out.results.push(
            KrmResult::info(
                "L2 announcements enabled (Cilium agents restart; nothing is announced until a policy exists)",
            )
            .about(item)
            .field(field("l2announcements.enabled"))
            .proposed(true),
        );
    }
    let renew = renew_override
        .or_else(|| {
            renew_from_values(get_path(
                &scoped,
                &["l2announcements".into(), "leaseRenewDeadline".into()],
            ))
        })
        .unwrap_or(DEFAULT_RENEW_SECS);
    let (default_qps, default_burst) = version.default_rate_limit();
    let rl = scoped.get("k8sClientRateLimit");
    let qps = as_u64(rl.and_then(|r| r.get("qps"))).unwrap_or(default_qps);
    let burst = as_u64(rl.and_then(|r| r.get("burst"))).unwrap_or(default_burst);
    // One lease per Service, renewed every leaseRenewDeadline, on top of the agent's own traffic
    // (taken as the chart default).
    let needed = default_qps + (services as u64).div_ceil(renew);
    if qps < needed {
        let new_burst = burst.max(needed * 2);
        if let Some(m) = mapping_at(&mut edited, &path(prefix, &["k8sClientRateLimit"])) {
            m.insert("qps".into(), Value::from(needed));
            m.insert("burst".into(), Value::from(new_burst));
            changed = true;
        }
        out.results.push(
            KrmResult::info(format!(
                "k8sClientRateLimit raised: {services} LoadBalancer Service lease(s) renewed every {renew}s need \
                 {} qps on top of the agent's {default_qps}",
                needed - default_qps
            ))
            .about(item)
            .field(field("k8sClientRateLimit.qps"))
            .current(qps)
            .proposed(needed),
        );
    }
    if changed {
        let mut new_item = item.clone();
        if release.flux {
            if let Some(spec) = mapping_at(&mut new_item, &["spec".to_owned()]) {
                spec.insert("values".into(), edited);
            }
        } else {
            write_values_content(&mut new_item, &edited);
        }
        out.edited = Some(new_item);
    }
    out
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
    use super::*;

    #[test]
    fn values_content_keeps_yaml_1_1_strings_quoted() {
        let item: Value = serde_yaml::from_str(
            "apiVersion: helm.cattle.io/v1\nkind: HelmChart\nmetadata: {name: metallb}\nspec:\n  chart: metallb\n  valuesContent: |\n    mode: \"on\"\n",
        )
        .unwrap();
        let install = Install {
            index: 0,
            kind: InstallKind::HelmChart,
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

    #[test]
    fn values_edit_keeps_existing_keys_and_is_idempotent() {
        let item: Value = serde_yaml::from_str(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: cilium}\nspec:\n  values:\n    kubeProxyReplacement: true\n    other: 1\n",
        )
        .unwrap();
        let rel = CiliumRelease {
            index: 0,
            flux: true,
            prefix: vec![],
            version: None,
        };
        let v = CiliumVersion::parse("1.18.4").unwrap();
        let out = cilium(&item, &rel, &v, 12, None);
        let edited = out.edited.unwrap();
        let values = &edited["spec"]["values"];
        assert_eq!(values["other"], Value::from(1));
        assert_eq!(values["l2announcements"]["enabled"], Value::Bool(true));
        assert_eq!(values["k8sClientRateLimit"]["qps"], Value::from(13));
        assert_eq!(values["k8sClientRateLimit"]["burst"], Value::from(26));
        let again = cilium(&edited, &rel, &v, 12, None);
        assert!(again.edited.is_none());
        assert!(again.results.is_empty());
    }
}

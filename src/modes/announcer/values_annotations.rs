//! MetalLB annotations inside chart values. A Service a HelmRelease renders in the cluster is not
//! among the items, so its annotations cannot be rewritten on the Service: they are found where
//! the chart takes them, under an `annotations` map (`service.annotations`,
//! `controller.service.annotations`, `serviceAnnotations` …) anywhere in a HelmRelease's
//! `spec.values` or a cozystack Package's `spec.components.<c>.values`, and translated there
//! with the rules used for Services, phase semantics included.

use serde_yaml::{Mapping, Value};

use super::Check;
use super::config::Phase;
use super::helm;
use super::install::ValuesAt;
use super::services::{CiliumKeys, METALLB_OLD_PREFIX, METALLB_PREFIX};
use crate::krm::{KrmObject, KrmResult};

/// What the step found and changed in one item.
#[derive(Debug, Default)]
pub struct Translated {
    /// The edited item, when anything changed.
    pub edited: Option<Value>,
    /// One result per key (translated, or a warning naming its path).
    pub results: Vec<KrmResult>,
    /// Annotation maps with MetalLB keys: Services rendered in the cluster.
    pub services: usize,
}

/// The values roots of a HelmRelease or a cozystack Package.
pub fn roots(item: &Value) -> Vec<ValuesAt> {
    let tree = |keys: &[&str]| ValuesAt::Tree(keys.iter().map(|k| (*k).to_owned()).collect());
    match (item.group(), item.kind()) {
        ("helm.toolkit.fluxcd.io", "HelmRelease") => vec![tree(&["spec", "values"])],
        (super::install::COZYSTACK_GROUP, "Package") => item
            .get("spec")
            .and_then(|s| s.get("components"))
            .and_then(Value::as_mapping)
            .into_iter()
            .flatten()
            .filter_map(|(k, _)| k.as_str())
            .map(|c| tree(&["spec", "components", c, "values"]))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether any string in `v`, key or value, contains `metallb`.
fn mentions_metallb(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("metallb"),
        Value::Mapping(m) => m
            .iter()
            .any(|(k, v)| mentions_metallb(k) || mentions_metallb(v)),
        Value::Sequence(seq) => seq.iter().any(mentions_metallb),
        Value::Tagged(t) => mentions_metallb(&t.value),
        _ => false,
    }
}

fn is_metallb(key: &str) -> bool {
    key.starts_with(METALLB_PREFIX) || key.starts_with(METALLB_OLD_PREFIX)
}

fn templated(text: &str) -> bool {
    text.contains("{{")
}

fn is_annotations_key(key: &str) -> bool {
    key.to_ascii_lowercase().ends_with("annotations")
}

/// Translates the MetalLB annotations in every values root of `item`.
pub fn translate(item: &Value, keys: &CiliumKeys, phase: Phase, pool_label: &str) -> Translated {
    let mut out = Translated::default();
    // Copied only when a root changes: most releases hold no MetalLB annotation.
    let mut edited: Option<Value> = None;
    for at in roots(item) {
        let ValuesAt::Tree(root_keys) = &at else {
            continue;
        };
        // Every key or value the walk acts on names MetalLB: values that do not are left
        // unread (not copied for the walk).
        if !helm::get_path(item, root_keys).is_some_and(mentions_metallb) {
            continue;
        }
        let mut values = helm::read(item, &at);
        let mut walk = Walk {
            item,
            keys,
            phase,
            pool_label,
            results: &mut out.results,
            services: 0,
            changed: false,
        };
        walk.value(&mut values, &mut vec![at.field()]);
        out.services += walk.services;
        if walk.changed {
            helm::write(edited.get_or_insert_with(|| item.clone()), &at, values);
        }
    }
    out.edited = edited;
    out
}

struct Walk<'a> {
    item: &'a Value,
    keys: &'a CiliumKeys,
    phase: Phase,
    pool_label: &'a str,
    results: &'a mut Vec<KrmResult>,
    services: usize,
    changed: bool,
}

impl Walk<'_> {
    fn value(&mut self, v: &mut Value, path: &mut Vec<String>) {
        match v {
            Value::Mapping(m) => {
                for (k, child) in m.iter_mut() {
                    let Some(key) = k.as_str() else { continue };
                    path.push(key.to_owned());
                    if is_annotations_key(key) {
                        self.annotations(child, path);
                    } else {
                        self.value(child, path);
                    }
                    path.pop();
                }
            }
            Value::Sequence(seq) => {
                for (i, child) in seq.iter_mut().enumerate() {
                    let Some(last) = path.pop() else { continue };
                    path.push(format!("{last}[{i}]"));
                    self.value(child, path);
                    path.pop();
                    path.push(last);
                }
            }
            _ => {}
        }
    }

    fn warn(&mut self, path: &[String], why: &str) {
        self.results.push(
            KrmResult::warning(format!(
                "MetalLB annotation in chart values not translated: {why}; the Service the chart renders keeps it \
                 and Cilium will not read it: translate it by hand"
            ))
            .about(self.item)
            .field(path.join("."))
            .tag("check", Check::ValuesAnnotations),
        );
    }

    fn annotations(&mut self, v: &mut Value, path: &mut Vec<String>) {
        let map = match v {
            Value::Mapping(m) => m,
            // A template string (`annotations: |` rendered by the chart's tpl).
            Value::String(s) if s.contains("metallb.") => {
                let why = "the annotations are a string the chart renders (a template), not a map";
                self.warn(path, why);
                return;
            }
            _ => return self.value(v, path),
        };
        let found: Vec<(String, Option<String>)> = map
            .iter()
            .filter_map(|(k, v)| {
                let k = k.as_str()?;
                (is_metallb(k) || (k.contains("metallb") && templated(k)))
                    .then(|| (k.to_owned(), v.as_str().map(str::to_owned)))
            })
            .collect();
        if found.is_empty() {
            return;
        }
        self.services += 1;
        let mut add = Mapping::new();
        let mut remove = Vec::new();
        for (key, value) in found {
            let mut field = path.clone();
            field.push(key.clone());
            if templated(&key) {
                self.warn(&field, "the key is built from values (a template)");
                continue;
            }
            let Some(value) = value else {
                self.warn(&field, "the value is not a string");
                continue;
            };
            if templated(&value) {
                self.warn(&field, "the value is a template");
                continue;
            }
            let suffix = key
                .strip_prefix(METALLB_PREFIX)
                .or_else(|| key.strip_prefix(METALLB_OLD_PREFIX))
                .unwrap_or(&key);
            let target = match suffix {
                "loadBalancerIPs" => Some(self.keys.ips),
                "allow-shared-ip" => Some(self.keys.sharing_key),
                "address-pool" => {
                    let why = format!(
                        "Cilium pools select Services by the label {} (here {value}), which cutover cannot set through \
                         this chart's values; keep it until then",
                        self.pool_label
                    );
                    self.warn(&field, &why);
                    continue;
                }
                _ => None,
            };
            if let Some(target) = target {
                let v = Value::from(value.as_str());
                if map.get(target) != Some(&v) {
                    add.insert(target.into(), v.clone());
                    let mut target_field = path.clone();
                    target_field.push(target.to_owned());
                    self.results.push(
                        KrmResult::info(format!(
                            "MetalLB annotation {key} in chart values translated to {target} (the chart renders the \
                             Service in the cluster)"
                        ))
                        .about(self.item)
                        .field(target_field.join("."))
                        .proposed(v)
                        .tag("check", Check::ValuesAnnotations)
                        .tag("phase", self.phase.as_str()),
                    );
                }
            }
            if self.phase == Phase::Cutover {
                remove.push(key.clone());
                self.results.push(
                    KrmResult::info(format!(
                        "MetalLB annotation {key} removed from chart values"
                    ))
                    .about(self.item)
                    .field(field.join("."))
                    .current(value)
                    .tag("check", Check::ValuesAnnotations)
                    .tag("phase", self.phase.as_str()),
                );
            }
        }
        for (k, v) in add {
            map.insert(k, v);
            self.changed = true;
        }
        for k in remove {
            map.shift_remove(k.as_str());
            self.changed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::announcer::version::CiliumVersion;

    const ITEM: &str = "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ingress, namespace: tenant-root}
spec:
  values:
    controller:
      service:
        annotations:
          metallb.universe.tf/loadBalancerIPs: 192.0.2.10
          metallb.io/allow-shared-ip: web
          metallb.io/address-pool: public
          external-dns.alpha.kubernetes.io/hostname: www.example.org
    extra:
    - service:
        annotations:
          metallb.io/loadBalancerIPs: '{{ .Values.ip }}'
";

    fn run(phase: Phase) -> Translated {
        let item: Value = serde_yaml::from_str(ITEM).unwrap();
        let keys = CiliumKeys::for_version(&CiliumVersion::parse("1.18.4").unwrap());
        translate(&item, &keys, phase, "cutover.dev/address-pool")
    }

    #[test]
    fn translates_in_prepare_and_removes_in_cutover() {
        let t = run(Phase::Prepare);
        assert_eq!(t.services, 2);
        let edited = t.edited.unwrap();
        let ann = &edited["spec"]["values"]["controller"]["service"]["annotations"];
        assert_eq!(ann["lbipam.cilium.io/ips"], Value::from("192.0.2.10"));
        assert_eq!(ann["lbipam.cilium.io/sharing-key"], Value::from("web"));
        assert_eq!(ann["metallb.io/allow-shared-ip"], Value::from("web"));
        let warnings: Vec<&str> = t
            .results
            .iter()
            .filter(|r| r.severity == crate::krm::Severity::Warning)
            .filter_map(|r| r.field.as_ref().map(|f| f.path.as_str()))
            .collect();
        assert_eq!(
            warnings,
            [
                "spec.values.controller.service.annotations.metallb.io/address-pool",
                "spec.values.extra[0].service.annotations.metallb.io/loadBalancerIPs"
            ]
        );
        let t = run(Phase::Cutover);
        let edited = t.edited.unwrap();
        let ann = &edited["spec"]["values"]["controller"]["service"]["annotations"];
        assert!(ann.get("metallb.universe.tf/loadBalancerIPs").is_none());
        assert!(
            ann.get("metallb.io/address-pool").is_some(),
            "untranslated keys stay"
        );
        assert_eq!(ann["lbipam.cilium.io/ips"], Value::from("192.0.2.10"));
        // Idempotent: the output of prepare changes nothing in prepare.
        let keys = CiliumKeys::for_version(&CiliumVersion::parse("1.18.4").unwrap());
        let once = run(Phase::Prepare).edited.unwrap();
        let again = translate(&once, &keys, Phase::Prepare, "cutover.dev/address-pool");
        assert!(again.edited.is_none());
    }
}

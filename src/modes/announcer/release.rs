//! The Cilium side of a cutover run: which Cilium version is targeted, and the checks and edits
//! of its Helm values.

use serde_yaml::Value;

use super::cutover::Cutover;
use super::helm::{self, get_path};
use super::inventory::{Carrier, CiliumRelease};
use super::metallb::generated_release;
use super::values;
use super::version::CiliumVersion;
use crate::krm::{KrmObject, KrmResult};

/// Where the targeted Cilium version was read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// `spec.ciliumVersion`.
    Config,
    /// A field of the Cilium release item.
    Release(usize, String),
}

/// Image repositories whose tags are Cilium releases: the upstream `quay.io/cilium/cilium` or a
/// mirror keeping its path, and RKE2's mirror. cozystack rebuilds the image as
/// `ghcr.io/cozystack/cozystack/cilium` and tags it with the cozystack release (its
/// packages/system/cilium/Makefile), which is not a Cilium version.
fn upstream_image(repository: &str) -> bool {
    let path = repository.split('@').next().unwrap_or(repository);
    path.ends_with("/cilium/cilium")
        || path == "cilium/cilium"
        || path.ends_with("/mirrored-cilium-cilium")
}

/// A release number that is a real Cilium version (1.x.y), not a placeholder such as `0.0.0`.
fn real_version(text: &str) -> Option<CiliumVersion> {
    CiliumVersion::parse(text).filter(|v| v.major >= 1 && v.patch.is_some())
}

/// The Cilium version the release item tells: the image tag of an upstream Cilium image in its
/// values, else the version of the upstream chart. `Err` says why neither counts.
fn from_release(item: &Value, release: &CiliumRelease) -> Result<(String, String), String> {
    let own = helm::scoped(item, &release.values);
    let image = |key: &str| {
        get_path(&own, &["image".into(), key.into()])
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let mut why = Vec::new();
    if let Some(tag) = image("tag") {
        let tag = tag.split('@').next().unwrap_or(&tag).to_owned();
        let repository = image("repository");
        let upstream = match &repository {
            Some(r) => upstream_image(r),
            None => !release.chart.cozystack,
        };
        match (upstream, real_version(&tag)) {
            (true, Some(_)) => return Ok((tag, release.values.field("image.tag"))),
            (true, None) => why.push(format!("image tag {tag:?} is not a Cilium release")),
            (false, _) => why.push(format!(
                "image {}:{tag} is not an upstream Cilium image (a rebuild tagged with its own release)",
                repository.as_deref().unwrap_or("(the chart's default)")
            )),
        }
    }
    let chart = &release.chart;
    let field = match release.carrier {
        Carrier::HelmChart => "spec.version",
        _ => "spec.chart.spec.version",
    };
    match &chart.version {
        Some(v) if chart.is_upstream() => match real_version(v) {
            Some(_) => return Ok((v.clone(), field.to_owned())),
            None => why.push(format!("chart version {v:?} is not a Cilium release")),
        },
        Some(v) => why.push(format!(
            "chart {} is {}, so its version {v:?} is not Cilium's",
            chart.name,
            if chart.cozystack {
                "cozystack's umbrella chart"
            } else {
                "not the upstream cilium chart"
            }
        )),
        None if chart.cozystack => why.push(format!(
            "chart {} is cozystack's umbrella chart (version 0.0.0 in its source, set to cozystack's release when built)",
            chart.name
        )),
        None => why.push(format!("chart {} has no version among the items", chart.name)),
    }
    Err(why.join("; "))
}

impl Cutover<'_> {
    /// The Cilium version, from the config or the Cilium release; reports errors for versions
    /// the cutover cannot target.
    pub(super) fn version(&mut self) -> Option<CiliumVersion> {
        if self.inv.cilium.len() > 1 {
            for r in &self.inv.cilium[1..] {
                self.results.push(
                    KrmResult::error("more than one Cilium release among the items")
                        .about(&self.items[r.index])
                        .field("spec.chart"),
                );
            }
        }
        let release = self.inv.cilium.first();
        let (text, source) = match (&self.spec.cilium_version, release) {
            (Some(v), _) => (v.clone(), Source::Config),
            (None, Some(r)) => match from_release(&self.items[r.index], r) {
                Ok((v, field)) => (v, Source::Release(r.index, field)),
                Err(why) => {
                    let r = self
                        .about_config(KrmResult::error(format!(
                            "cannot tell the Cilium version from {} {}: {why}; set ciliumVersion (it decides \
                             cilium.io/v2 vs v2alpha1 pools, annotation keys, LB-IPAM's sharing rules and known \
                             regressions)",
                            self.items[r.index].kind(),
                            self.items[r.index].name()
                        )))
                        .field("spec.ciliumVersion");
                    self.results.push(r);
                    return None;
                }
            },
            (None, None) => (String::new(), Source::Config),
        };
        let about = |r: KrmResult, this: &Self| match &source {
            Source::Release(i, field) => r.about(&this.items[*i]).field(field.clone()),
            Source::Config => this.about_config(r).field("spec.ciliumVersion"),
        };
        let Some(version) = CiliumVersion::parse(&text) else {
            let r = KrmResult::error(format!(
                "cannot tell the Cilium version{}: set ciliumVersion (it decides cilium.io/v2 vs v2alpha1 pools, \
                 annotation keys, LB-IPAM's sharing rules and known regressions)",
                if text.is_empty() {
                    String::new()
                } else {
                    format!(" from {text:?}")
                }
            ));
            let r = about(r, self);
            self.results.push(r);
            return None;
        };
        if !version.supports_cutover() {
            let r = about(
                KrmResult::error(format!(
                    "Cilium {version} cannot take over: L2 announcements arrived in 1.14, and its \
                     CiliumLoadBalancerIPPool has only spec.cidrs (no blocks, which cutover emits) \
                     until 1.15; upgrade Cilium to 1.15 or later first"
                )),
                self,
            );
            self.results.push(r);
            return None;
        }
        match version.is_broken_for_l2() {
            Some(true) => {
                let r = about(
                    KrmResult::error(format!(
                        "Cilium {version} has L2 announcement/LB-IPAM regressions on the upgrade path \
                         (cilium/cilium#44222, #44221, #44430): use 1.18.x or 1.19.2+"
                    ))
                    .current(text.as_str()),
                    self,
                );
                self.results.push(r);
            }
            None => {
                let r = about(
                    KrmResult::warning(format!(
                        "Cilium {version} without a patch number: 1.19.0 and 1.19.1 carry L2/LB-IPAM regressions; make sure it is 1.19.2+"
                    )),
                    self,
                );
                self.results.push(r);
            }
            Some(false) => {}
        }
        Some(version)
    }

    /// The Cilium Helm value that decides LB-IPAM's port comparison in 1.17 and 1.18.
    pub(super) fn protocol_value(&self) -> Option<bool> {
        let release = self.inv.cilium.first()?;
        values::protocol_differentiation(&self.items[release.index], release)
    }

    pub(super) fn cilium_values(&mut self, version: &CiliumVersion, services: usize) {
        let interfaces: Vec<(usize, Option<Vec<String>>)> = self
            .inv
            .adverts
            .iter()
            .map(|a| {
                (
                    a.index,
                    (!a.spec.interfaces.is_empty()).then(|| a.spec.interfaces.clone()),
                )
            })
            .collect();
        let Some(release) = self.inv.cilium.first() else {
            // No resourceRef: the same warning must read the same whichever config form is used.
            let renew = self.renew_secs();
            self.results.push(KrmResult::warning(format!(
                "no Cilium HelmRelease, cozystack Package or HelmChart among the items: set these Cilium values \
                 yourself before phase cutover: kubeProxyReplacement: true, l2announcements.enabled: true, \
                 {} (higher is fine: {services} LoadBalancer Service lease(s) renewed every {renew}s, on top of \
                 the agent's {} qps), and devices covering the announced interfaces",
                values::RateLimit::needed(version, services, renew),
                version.default_rate_limit().0
            )));
            return;
        };
        let Some(item) = self.current(release.index).cloned() else {
            return;
        };
        let out = values::cilium(
            &item,
            release,
            version,
            services,
            self.spec
                .lease_renew_deadline
                .as_ref()
                .map(|d| d.as_secs_ceil().max(1)),
        );
        self.results.extend(out.results);
        if let Some(new) = out.edited {
            match &release.carrier {
                Carrier::HelmRelease {
                    generated_by: Some(package),
                } => self.results.push(generated_release(
                    &item,
                    package,
                    "change the Cilium values",
                )),
                _ => self.replace(release.index, new),
            }
        }
        if let Some(devices) = out.devices {
            for (index, ifs) in interfaces {
                let missing: Vec<String> = match &ifs {
                    None => vec!["(all interfaces)".into()],
                    Some(list) => list
                        .iter()
                        .filter(|i| !devices.iter().any(|d| values::device_covers(d, i)))
                        .cloned()
                        .collect(),
                };
                if !missing.is_empty() {
                    self.results.push(
                        KrmResult::warning(format!(
                            "Cilium answers ARP only on its devices ({}), but this advertisement announces on {}: \
                             add the uplink interfaces to Cilium's devices (kube-ovn variant) or nothing will be announced there",
                            devices.join(" "),
                            missing.join(", ")
                        ))
                        .about(&self.items[index])
                        .field("spec.interfaces"),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_upstream_images_and_real_versions_count() {
        assert!(upstream_image("quay.io/cilium/cilium"));
        assert!(upstream_image("registry.local:5000/cilium/cilium"));
        assert!(upstream_image("rancher/mirrored-cilium-cilium"));
        assert!(!upstream_image("ghcr.io/cozystack/cozystack/cilium"));
        assert!(real_version("v1.19.5").is_some());
        assert!(real_version("0.0.0").is_none());
        assert!(real_version(">= 0.0.0-0").is_none());
        assert!(real_version("1.19").is_none());
    }
}

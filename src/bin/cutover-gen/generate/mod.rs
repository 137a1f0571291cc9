//! Deterministic ResourceList generator for benchmarks and load tests.
//!
//! The output looks like what `kpt fn eval`/`kpt fn render` feeds a function from a platform repo:
//! kpt's path/index annotations on every item, the `Kptfile`, the function config as an item and as
//! `functionConfig`. Content follows the mode inputs:
//!
//! - LoadBalancer Services spread over tenant namespaces with MetalLB annotations (explicit IPs,
//!   sharing keys with compatible ports, pool requests, some on the deprecated
//!   `metallb.universe.tf/` prefix, some `externalTrafficPolicy: Local`);
//! - MetalLB `IPAddressPool`s (CIDRs and ranges, `autoAssign: false`, namespace-restricted pools)
//!   and `L2Advertisement`s that together announce every pool;
//! - Sylva-style unit Kustomizations (`sylva-units.unit` labels, `root-dependency-<rev>`,
//!   `dependsOn` chains, Helm units carrying their HelmRelease spec and values in `patches`), the
//!   `sylva-units-status` Kustomization and the `sylva-units-values` Secret with base64 values
//!   (upgrade state and MetalLB BGP peers included, so the prepull gate opens).
//!
//! Every explicit IP lies inside a pool the Service may use, no two Services outside a sharing
//! group get the same IP, and sharing groups follow MetalLB's rules (same namespace, same sharing
//! key, distinct port/protocol pairs, `Cluster` traffic policy), so a mode sees a valid platform
//! and does all its work instead of stopping at the first error.
//!
//! The same [`Spec`] always gives the same bytes: the only randomness is a seeded SplitMix64.
//!
//! Layout: this module holds the [`Spec`], the item framing (kpt's annotations, the Kptfile and
//! the function config) and the seeded generator; [`metallb`] writes the MetalLB configuration and
//! the MetalLB and Cilium installations, [`services`] the LoadBalancer Services, [`sylva`] the
//! Sylva unit Kustomizations and values.

mod metallb;
mod passthrough;
mod services;
mod sylva;

use std::fmt::Write;

use metallb::{make_pools, write_l2_advertisements, write_pools, write_releases};
use passthrough::write_pass_through;
use services::write_services;
use sylva::{FIXED_UNITS, write_units};

/// Which function config the generated ResourceList carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Config {
    /// No function config (the engine reports that as an error; useful for parse/emit only).
    None,
    /// `LoadBalancerAnnouncer` with `announcer: cilium`, phase `prepare` (the default): MetalLB
    /// speaker running, as on a platform that has not started the cutover.
    Announcer,
    /// `LoadBalancerAnnouncer` with `announcer: cilium`, `phase: cutover`: the MetalLB speaker is
    /// already disabled in its HelmRelease values (what phase `prepare` left).
    AnnouncerCutover,
    /// `MetalLBImagePrepull` with default settings (values discovered from the items).
    Prepull,
}

impl Config {
    /// Parses `none`, `announcer` (= `announcer-prepare`), `announcer-cutover` or `prepull`.
    pub fn parse(s: &str) -> Option<Config> {
        match s {
            "none" => Some(Config::None),
            "announcer" | "announcer-prepare" => Some(Config::Announcer),
            "announcer-cutover" => Some(Config::AnnouncerCutover),
            "prepull" | "metallb-image-prepull" => Some(Config::Prepull),
            _ => None,
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// LoadBalancer Services.
    pub services: usize,
    /// Tenant namespaces the Services are spread over (at least 1).
    pub namespaces: usize,
    /// MetalLB IPAddressPools (1..=150).
    pub pools: usize,
    /// MetalLB L2Advertisements (1..=pools).
    pub l2_advertisements: usize,
    /// Sylva unit Kustomizations (0 = no Sylva bundle, else at least 8 for the fixed units).
    pub units: usize,
    /// Function config to attach.
    pub config: Config,
    /// PRNG seed.
    pub seed: u64,
    /// Services as they are in git (no status) plus an `ObservedState` item holding what the
    /// cluster shows for each: the input of a proof that names the IPs it keeps.
    pub observed: bool,
    /// Items no mode reads (Deployments, ConfigMaps, HelmReleases of other charts, CRDs), as
    /// the bulk of a real platform repository.
    pub pass_through: usize,
}

/// Named sizes used by the benchmarks and documented in `docs/benchmarks.md`.
pub const PRESETS: &[&str] = &[
    "lb-1k",
    "lb-10k",
    "lb-100k",
    "lb-1k-cutover",
    "lb-10k-cutover",
    "lb-100k-cutover",
    "lb-1k-observed",
    "lb-10k-observed",
    "lb-100k-observed",
    "sylva",
    "platform-10k",
    "platform-100k",
    "sylva-platform",
];

impl Spec {
    /// LoadBalancer-heavy platform: `services` Services, 40 per namespace, 8 pools, 4 L2
    /// advertisements, `LoadBalancerAnnouncer` config.
    pub fn load_balancers(services: usize) -> Spec {
        Spec {
            services,
            namespaces: services.div_ceil(40).max(1),
            pools: 8,
            l2_advertisements: 4,
            units: 0,
            config: Config::Announcer,
            seed: 7,
            observed: false,
            pass_through: 0,
        }
    }

    /// A Sylva management-cluster bundle: 150 unit Kustomizations with values, a few MetalLB
    /// pools and Services, `MetalLBImagePrepull` config.
    pub fn sylva() -> Spec {
        Spec {
            services: 24,
            namespaces: 4,
            pools: 3,
            l2_advertisements: 2,
            units: 150,
            config: Config::Prepull,
            seed: 7,
            observed: false,
            pass_through: 0,
        }
    }

    /// One of [`PRESETS`].
    pub fn preset(name: &str) -> Option<Spec> {
        match name {
            "lb-1k" => Some(Spec::load_balancers(1_000)),
            "lb-10k" => Some(Spec::load_balancers(10_000)),
            "lb-100k" => Some(Spec::load_balancers(100_000)),
            "lb-1k-cutover" | "lb-10k-cutover" | "lb-100k-cutover" => {
                let base = Spec::preset(name.trim_end_matches("-cutover"))?;
                Some(Spec {
                    config: Config::AnnouncerCutover,
                    ..base
                })
            }
            "lb-1k-observed" | "lb-10k-observed" | "lb-100k-observed" => Some(Spec {
                observed: true,
                ..Spec::preset(name.trim_end_matches("-observed"))?
            }),
            "sylva" => Some(Spec::sylva()),
            // A platform repository: the Services of lb-N-cutover among as many items no mode
            // reads.
            "platform-10k" | "platform-100k" => Some(Spec {
                pass_through: if name == "platform-10k" {
                    10_000
                } else {
                    100_000
                },
                ..Spec::preset(&format!(
                    "lb-{}-cutover",
                    name.trim_start_matches("platform-")
                ))?
            }),
            // The Sylva bundle in a management cluster's repository: 2 000 items no mode reads.
            "sylva-platform" => Some(Spec {
                pass_through: 2_000,
                ..Spec::sylva()
            }),
            _ => None,
        }
    }

    /// Checks the bounds the generator relies on.
    pub fn validate(&self) -> Result<(), String> {
        if self.namespaces == 0 {
            return Err("namespaces must be at least 1".into());
        }
        if !(1..=150).contains(&self.pools) {
            return Err("pools must be between 1 and 150".into());
        }
        if !(1..=self.pools).contains(&self.l2_advertisements) {
            return Err("l2-advertisements must be between 1 and the number of pools".into());
        }
        if self.units != 0 && self.units < FIXED_UNITS.len() {
            return Err(format!("units must be 0 or at least {}", FIXED_UNITS.len()));
        }
        // Each pool holds ~65k addresses; explicit IPs take at most half the Services.
        if self.services > 2_000_000 {
            return Err("services must be at most 2000000".into());
        }
        Ok(())
    }
}

/// SplitMix64: tiny, fast, good enough for test data, identical on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform-enough integer in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `percent`/100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// kpt's annotations for an item read from `path` at `index`.
fn kpt_annotations(out: &mut String, indent: &str, path: &str, index: usize) {
    let _ = write!(
        out,
        "{indent}config.kubernetes.io/index: '{index}'\n\
         {indent}config.kubernetes.io/path: '{path}'\n\
         {indent}internal.config.kubernetes.io/index: '{index}'\n\
         {indent}internal.config.kubernetes.io/path: '{path}'\n\
         {indent}internal.config.kubernetes.io/seqindent: 'compact'\n"
    );
}

fn ns_name(j: usize) -> String {
    format!("tenant-{j:05}")
}

/// Generates the ResourceList as YAML text.
pub fn generate(spec: &Spec) -> String {
    let mut rng = Rng(spec.seed);
    let mut out = String::with_capacity(spec.services * 1200 + spec.units * 3000 + 16_384);
    out.push_str("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    kptfile(&mut out);
    let fc = function_config(spec.config);
    if let Some(fc) = &fc {
        push_item(&mut out, fc);
    }
    let mut pools = make_pools(spec);
    write_pools(&mut out, &pools);
    write_l2_advertisements(&mut out, &pools, spec.l2_advertisements);
    if spec.config == Config::AnnouncerCutover || spec.config == Config::Announcer {
        write_releases(&mut out, spec.config == Config::AnnouncerCutover);
    }
    let live = write_services(&mut out, spec, &mut pools, &mut rng);
    if spec.observed {
        write_observed(&mut out, &live);
    }
    if spec.units > 0 {
        write_units(&mut out, spec, &mut rng);
    }
    // Drawn from a PRNG of its own, so the presets without these items are unchanged.
    write_pass_through(
        &mut out,
        spec.pass_through,
        spec.namespaces,
        &mut Rng(spec.seed ^ 0x5A5A),
    );
    if let Some(fc) = &fc {
        out.push_str("functionConfig:\n");
        for line in fc.lines() {
            let keep = !line.contains("config.kubernetes.io/index")
                && !line.contains("config.kubernetes.io/path")
                && !line.contains("seqindent");
            if keep {
                out.push_str("  ");
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The `ObservedState` item `cutover observe` would write for these Services (no node, Cilium
/// object or MetalLB pod: the digest of a cluster where phase prepare has not been applied).
fn write_observed(out: &mut String, live: &[(String, String, String)]) {
    out.push_str(
        "- apiVersion: fn.cutover.dev/v1alpha1\n  kind: ObservedState\n  metadata:\n    name: live\n    annotations:\n      config.kubernetes.io/local-config: \"true\"\n",
    );
    kpt_annotations(out, "      ", "observed.yaml", 0);
    out.push_str("  services:\n");
    for (ns, name, ip) in live {
        let _ = writeln!(out, "    {ns}/{name}: {ip}");
    }
}

/// Appends one item given as an unindented YAML document.
fn push_item(out: &mut String, item: &str) {
    for (i, line) in item.lines().enumerate() {
        out.push_str(if i == 0 { "- " } else { "  " });
        out.push_str(line);
        out.push('\n');
    }
}

fn kptfile(out: &mut String) {
    out.push_str(
        "- apiVersion: kpt.dev/v1\n  kind: Kptfile\n  metadata:\n    name: platform\n    annotations:\n      config.kubernetes.io/local-config: \"true\"\n",
    );
    kpt_annotations(out, "      ", "Kptfile", 0);
    out.push_str(
        "  info:\n    description: generated platform package\n  pipeline:\n    mutators:\n    - exec: cutover\n      configPath: fn-config.yaml\n",
    );
}

fn function_config(config: Config) -> Option<String> {
    let (kind, spec) = match config {
        Config::None => return None,
        Config::Announcer => (
            "LoadBalancerAnnouncer",
            "spec:\n  announcer: cilium\n  phase: prepare\n  ciliumOperatorStopped: true\n  acceptLocalTrafficPolicyChange: true\n",
        ),
        Config::AnnouncerCutover => (
            "LoadBalancerAnnouncer",
            "spec:\n  announcer: cilium\n  phase: cutover\n  ciliumOperatorStopped: true\n  acceptLocalTrafficPolicyChange: true\n",
        ),
        Config::Prepull => (
            "MetalLBImagePrepull",
            "spec:\n  waitTimeout: 10m\n  source:\n    sourceRef: {kind: GitRepository, name: platform-config}\n    path: ./clusters/mgmt/metallb-image-prepull\n",
        ),
    };
    let mut fc = format!(
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: {kind}\nmetadata:\n  name: cutover\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
    );
    kpt_annotations(&mut fc, "    ", "fn-config.yaml", 0);
    fc.push_str(spec);
    Some(fc)
}

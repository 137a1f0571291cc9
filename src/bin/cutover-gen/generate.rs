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

use std::fmt::Write;

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
}

/// Named sizes used by the benchmarks and documented in `docs/benchmarks.md`.
pub const PRESETS: &[&str] = &[
    "lb-1k",
    "lb-10k",
    "lb-100k",
    "lb-1k-cutover",
    "lb-10k-cutover",
    "lb-100k-cutover",
    "sylva",
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
            "sylva" => Some(Spec::sylva()),
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

const APPS: &[&str] = &[
    "web", "api", "ingress", "grafana", "mqtt", "dns", "gateway", "ldap", "smtp", "vpn", "git",
    "registry", "postgres", "redis", "kafka", "minio", "keycloak", "vault", "harbor", "argocd",
];

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

/// Address pool `p`: second octet `100 + p`, so pools never overlap.
struct Pool {
    name: String,
    /// Next host offset inside the /16 (skips .0 and .255 so `avoidBuggyIPs` is honoured).
    next: u32,
    auto_assign: bool,
    /// Namespaces allowed by `serviceAllocation.namespaces`; `None` = all.
    namespaces: Option<Vec<usize>>,
}

impl Pool {
    fn octet(index: usize) -> usize {
        100 + index
    }
    /// The next free address, or `None` when the pool is exhausted.
    fn take(&mut self, index: usize) -> Option<String> {
        loop {
            if self.next >= 0xFF00 {
                return None;
            }
            let n = self.next;
            self.next += 1;
            let (hi, lo) = (n >> 8, n & 0xFF);
            if lo == 0 || lo == 255 || (hi == 0 && lo < 10) {
                continue;
            }
            return Some(format!("10.{}.{hi}.{lo}", Pool::octet(index)));
        }
    }
    fn allows(&self, ns: usize) -> bool {
        self.namespaces
            .as_ref()
            .is_none_or(|list| list.contains(&ns))
    }
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
    write_services(&mut out, spec, &mut pools, &mut rng);
    if spec.units > 0 {
        write_units(&mut out, spec, &mut rng);
    }
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
            "spec:\n  announcer: cilium\n  phase: prepare\n",
        ),
        Config::AnnouncerCutover => (
            "LoadBalancerAnnouncer",
            "spec:\n  announcer: cilium\n  phase: cutover\n",
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

fn make_pools(spec: &Spec) -> Vec<Pool> {
    (0..spec.pools)
        .map(|p| Pool {
            name: format!("pool-{p:03}"),
            next: 0,
            // Pool 0 is always an ordinary auto-assign pool, so every namespace has one; the last
            // pool is opt-in so every platform has one.
            auto_assign: p == 0 || (p % 4 != 3 && p + 1 != spec.pools),
            namespaces: (p % 4 == 2).then(|| {
                (0..spec.namespaces)
                    .filter(|j| j % spec.pools == p)
                    .collect()
            }),
        })
        .collect()
}

fn write_pools(out: &mut String, pools: &[Pool]) {
    for (p, pool) in pools.iter().enumerate() {
        let octet = Pool::octet(p);
        let _ = write!(
            out,
            "- apiVersion: metallb.io/v1beta1\n  kind: IPAddressPool\n  metadata:\n    name: {}\n    namespace: metallb-system\n    labels:\n      app.kubernetes.io/part-of: metallb-resources\n    annotations:\n",
            pool.name
        );
        kpt_annotations(out, "      ", "metallb-system/ipaddresspools.yaml", p);
        out.push_str("  spec:\n    addresses:\n");
        if p % 2 == 0 {
            let _ = writeln!(out, "    - 10.{octet}.0.0/16");
        } else {
            let _ = writeln!(out, "    - 10.{octet}.0.1-10.{octet}.255.254");
        }
        if !pool.auto_assign {
            out.push_str("    autoAssign: false\n");
        }
        if p % 5 == 4 {
            out.push_str("    avoidBuggyIPs: true\n");
        }
        if let Some(list) = &pool.namespaces {
            out.push_str("    serviceAllocation:\n      namespaces:\n");
            for j in list {
                let _ = writeln!(out, "      - {}", ns_name(*j));
            }
            if list.is_empty() {
                out.push_str("      - reserved\n");
            }
        }
    }
}

/// L2Advertisements. The first announces every pool a Service may get without asking
/// (auto-assign ones) from every node on `eth0`, as on real platforms: a Service without an
/// address yet must be announced the same way whichever pool MetalLB picks, and Cilium policies
/// select Services, not pools. The others announce the opt-in pools (`autoAssign: false`) from
/// worker nodes on all interfaces, round-robin.
fn write_l2_advertisements(out: &mut String, pools: &[Pool], count: usize) {
    let auto: Vec<usize> = (0..pools.len()).filter(|&p| pools[p].auto_assign).collect();
    let opt_in: Vec<usize> = (0..pools.len())
        .filter(|&p| !pools[p].auto_assign)
        .collect();
    for a in 0..count {
        let members: Vec<usize> = match a {
            0 => auto.clone(),
            _ if opt_in.is_empty() => auto.clone(),
            _ => {
                let m: Vec<usize> = opt_in
                    .iter()
                    .copied()
                    .skip(a - 1)
                    .step_by(count - 1)
                    .collect();
                if m.is_empty() { vec![opt_in[0]] } else { m }
            }
        };
        let _ = write!(
            out,
            "- apiVersion: metallb.io/v1beta1\n  kind: L2Advertisement\n  metadata:\n    name: l2-{a:02}\n    namespace: metallb-system\n    annotations:\n"
        );
        kpt_annotations(out, "      ", "metallb-system/l2advertisements.yaml", a);
        out.push_str("  spec:\n    ipAddressPools:\n");
        for p in &members {
            let _ = writeln!(out, "    - {}", pools[*p].name);
        }
        if members.iter().all(|&p| pools[p].auto_assign) {
            out.push_str("    interfaces:\n    - eth0\n");
        } else {
            out.push_str(
                "    nodeSelectors:\n    - matchLabels:\n        node-role.kubernetes.io/worker: \"\"\n",
            );
        }
    }
}

/// The MetalLB and Cilium installations as Flux HelmReleases. With `speaker_stopped` the
/// MetalLB values already have the speaker disabled (the state phase `prepare` leaves).
fn write_releases(out: &mut String, speaker_stopped: bool) {
    out.push_str("- apiVersion: helm.toolkit.fluxcd.io/v2\n  kind: HelmRelease\n  metadata:\n    name: metallb\n    namespace: metallb-system\n    annotations:\n");
    kpt_annotations(out, "      ", "releases/metallb.yaml", 0);
    out.push_str("  spec:\n    interval: 30m\n    releaseName: metallb\n    chart:\n      spec:\n        chart: metallb\n        version: 0.15.3\n        sourceRef:\n          kind: HelmRepository\n          name: metallb\n          namespace: flux-system\n    values:\n      controller:\n        logLevel: info\n      speaker:\n");
    if speaker_stopped {
        out.push_str("        enabled: false\n");
    } else {
        out.push_str("        logLevel: info\n        tolerateMaster: true\n");
    }
    out.push_str("- apiVersion: helm.toolkit.fluxcd.io/v2\n  kind: HelmRelease\n  metadata:\n    name: cilium\n    namespace: kube-system\n    annotations:\n");
    kpt_annotations(out, "      ", "releases/cilium.yaml", 0);
    out.push_str("  spec:\n    interval: 30m\n    releaseName: cilium\n    chart:\n      spec:\n        chart: cilium\n        version: 1.18.4\n        sourceRef:\n          kind: HelmRepository\n          name: cilium\n          namespace: flux-system\n    values:\n      kubeProxyReplacement: true\n      k8sServiceHost: api.platform.example.net\n      k8sServicePort: 6443\n      ipam:\n        mode: kubernetes\n      devices:\n      - eth0\n");
}

/// How a Service asks MetalLB for its address.
enum Request {
    /// Any pool.
    Auto,
    /// `address-pool: <pool>`.
    Pool(usize),
    /// `loadBalancerIPs: <ip>`, optionally with the pool named too.
    Ip(String, Option<usize>),
    /// Member of a sharing group: `allow-shared-ip: <key>` (+ the group's IP, if any).
    Shared {
        key: String,
        ip: Option<String>,
        member: usize,
        dns: bool,
    },
}

fn write_services(out: &mut String, spec: &Spec, pools: &mut [Pool], rng: &mut Rng) {
    let mut written = 0;
    for j in 0..spec.namespaces {
        // Contiguous blocks: namespace j gets Services [j*n/ns, (j+1)*n/ns).
        let end = (j + 1) * spec.services / spec.namespaces;
        let ns = ns_name(j);
        let path = format!("{ns}/services.yaml");
        let mut index = 0;
        let eligible: Vec<usize> = (0..pools.len()).filter(|&p| pools[p].allows(j)).collect();
        let auto: Vec<usize> = eligible
            .iter()
            .copied()
            .filter(|&p| pools[p].auto_assign)
            .collect();
        while written < end {
            let left = end - written;
            let roll = rng.below(100);
            if roll < 20 && left >= 2 {
                let size = (2 + rng.below(3)).min(left);
                let key = format!("share-{j}-{index}");
                let ip = if rng.chance(70) {
                    take_ip(pools, &eligible, rng)
                } else {
                    None
                };
                let dns = size == 2 && rng.chance(25);
                for member in 0..size {
                    let request = Request::Shared {
                        key: key.clone(),
                        ip: ip.clone(),
                        member,
                        dns,
                    };
                    write_service(out, &ns, &path, index, written, &request, pools, rng);
                    index += 1;
                    written += 1;
                }
                continue;
            }
            let request = if roll < 50 {
                let with_pool = rng.chance(40);
                let p = eligible[rng.below(eligible.len())];
                match pools[p].take(p) {
                    Some(ip) => Request::Ip(ip, with_pool.then_some(p)),
                    None => Request::Auto,
                }
            } else if roll < 75 {
                Request::Pool(eligible[rng.below(eligible.len())])
            } else if auto.is_empty() {
                Request::Pool(eligible[0])
            } else {
                Request::Auto
            };
            write_service(out, &ns, &path, index, written, &request, pools, rng);
            index += 1;
            written += 1;
        }
    }
}

fn take_ip(pools: &mut [Pool], eligible: &[usize], rng: &mut Rng) -> Option<String> {
    let start = rng.below(eligible.len());
    (0..eligible.len()).find_map(|k| {
        let p = eligible[(start + k) % eligible.len()];
        pools[p].take(p)
    })
}

#[allow(clippy::too_many_arguments)]
fn write_service(
    out: &mut String,
    ns: &str,
    path: &str,
    index: usize,
    serial: usize,
    request: &Request,
    pools: &[Pool],
    rng: &mut Rng,
) {
    let app = APPS[serial % APPS.len()];
    let name = format!("{app}-{serial:06}");
    let prefix = if rng.chance(5) {
        "metallb.universe.tf"
    } else {
        "metallb.io"
    };
    let _ = write!(
        out,
        "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: {name}\n    namespace: {ns}\n    labels:\n      app.kubernetes.io/name: {app}\n      app.kubernetes.io/instance: {name}\n      app.kubernetes.io/part-of: {ns}\n    annotations:\n"
    );
    match request {
        Request::Auto => {}
        Request::Pool(p) => {
            let _ = writeln!(out, "      {prefix}/address-pool: {}", pools[*p].name);
        }
        Request::Ip(ip, pool) => {
            if let Some(p) = pool {
                let _ = writeln!(out, "      {prefix}/address-pool: {}", pools[*p].name);
            }
            let _ = writeln!(out, "      {prefix}/loadBalancerIPs: {ip}");
        }
        Request::Shared { key, ip, .. } => {
            let _ = writeln!(out, "      {prefix}/allow-shared-ip: {key}");
            if let Some(ip) = ip {
                let _ = writeln!(out, "      {prefix}/loadBalancerIPs: {ip}");
            }
        }
    }
    if serial.is_multiple_of(7) {
        out.push_str("      external-dns.alpha.kubernetes.io/hostname: ");
        let _ = writeln!(out, "{name}.{ns}.example.net");
    }
    kpt_annotations(out, "      ", path, index);
    out.push_str("  spec:\n    type: LoadBalancer\n");
    let local = !matches!(request, Request::Shared { .. }) && rng.chance(15);
    let _ = writeln!(
        out,
        "    externalTrafficPolicy: {}",
        if local { "Local" } else { "Cluster" }
    );
    out.push_str("    ports:\n");
    match request {
        Request::Shared { member, dns, .. } if *dns => {
            let proto = if *member == 0 { "TCP" } else { "UDP" };
            let _ = write!(
                out,
                "    - name: dns-{}\n      port: 53\n      protocol: {proto}\n      targetPort: 5353\n",
                proto.to_lowercase()
            );
        }
        Request::Shared { member, .. } => {
            let port = 8000 + member;
            let _ = write!(
                out,
                "    - name: http-{member}\n      port: {port}\n      protocol: TCP\n      targetPort: http\n"
            );
        }
        _ => {
            for (k, (pname, port)) in [("https", 443), ("http", 80), ("metrics", 9100)]
                .iter()
                .take(1 + rng.below(3))
                .enumerate()
            {
                let _ = write!(
                    out,
                    "    - name: {pname}\n      port: {port}\n      protocol: TCP\n      targetPort: {}\n",
                    8080 + k
                );
            }
        }
    }
    let _ = write!(
        out,
        "    selector:\n      app.kubernetes.io/name: {app}\n      app.kubernetes.io/instance: {name}\n"
    );
}

/// Units every bundle has (MetalLB ones are what the prepull mode gates).
const FIXED_UNITS: &[&str] = &[
    "cluster",
    "calico",
    "cert-manager",
    "flux-system",
    "kyverno",
    "monitoring",
    "metallb",
    "metallb-resources",
];

const MORE_UNITS: &[&str] = &[
    "capi",
    "capm3",
    "metal3",
    "ingress-nginx",
    "keycloak",
    "vault",
    "vault-operator",
    "external-secrets-operator",
    "longhorn",
    "rancher",
    "harbor",
    "gitea",
    "minio-operator",
    "loki",
    "thanos",
    "os-image-server",
    "os-images-info",
    "kubevirt",
    "sriov",
    "multus",
    "trivy-operator",
    "neuvector",
    "sylva-units-operator",
    "cluster-vip",
    "kube-job",
    "snmp-exporter",
    "logging",
    "velero",
];

fn unit_names(count: usize) -> Vec<String> {
    let mut names: Vec<String> = FIXED_UNITS
        .iter()
        .chain(MORE_UNITS)
        .map(|s| (*s).to_owned())
        .collect();
    let mut k = 0;
    while names.len() < count {
        names.push(format!("{}-{k}", MORE_UNITS[k % MORE_UNITS.len()]));
        k += 1;
    }
    names.truncate(count);
    names
}

const REVISION: usize = 3;

fn write_units(out: &mut String, spec: &Spec, rng: &mut Rng) {
    let names = unit_names(spec.units);
    let root = format!("root-dependency-{REVISION}");
    let mut index = 0;
    unit_kustomization(out, &root, &[], false, index, rng);
    index += 1;
    let mut deps_of: Vec<Vec<usize>> = Vec::with_capacity(names.len());
    for (u, name) in names.iter().enumerate() {
        // A DAG: each unit depends on up to three earlier ones (metallb on cluster and calico,
        // metallb-resources on metallb, as in sylva-units).
        let deps: Vec<usize> = match name.as_str() {
            "metallb" => vec![0, 1],
            "metallb-resources" => vec![6],
            _ if u == 0 => vec![],
            _ => {
                let mut d: Vec<usize> = (0..rng.below(4)).map(|_| rng.below(u)).collect();
                d.sort_unstable();
                d.dedup();
                d
            }
        };
        let dep_names: Vec<&str> = deps.iter().map(|&d| names[d].as_str()).collect();
        let helm = name != "cluster" && u % 3 != 2;
        unit_kustomization(out, name, &dep_names, helm, index, rng);
        index += 1;
        deps_of.push(deps);
    }
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    unit_kustomization(out, "sylva-units-status", &all, false, index, rng);
    values_secret(out, &names, &deps_of, rng);
}

fn unit_kustomization(
    out: &mut String,
    name: &str,
    deps: &[&str],
    helm: bool,
    index: usize,
    rng: &mut Rng,
) {
    let _ = write!(
        out,
        "- apiVersion: kustomize.toolkit.fluxcd.io/v1\n  kind: Kustomization\n  metadata:\n    name: {name}\n    namespace: sylva-system\n    labels:\n      app.kubernetes.io/managed-by: Helm\n      helm.toolkit.fluxcd.io/name: sylva-units\n      helm.toolkit.fluxcd.io/namespace: sylva-system\n      sylva-units.unit: {name}\n      sylva-units/root-dependency-wait: \"\"\n    annotations:\n      sylva-units-helm-revision: \"{REVISION}\"\n"
    );
    kpt_annotations(out, "      ", "sylva-units/units.yaml", index);
    out.push_str("  spec:\n");
    let root = name.starts_with("root-dependency");
    if !root {
        let _ = write!(
            out,
            "    dependsOn:\n    - name: root-dependency-{REVISION}\n"
        );
        for d in deps {
            let _ = writeln!(out, "    - name: {d}");
        }
    }
    let path = if helm {
        "./kustomize-units/helmrelease-generic".to_owned()
    } else {
        format!("./kustomize-units/{name}")
    };
    let _ = write!(
        out,
        "    force: false\n    interval: 24h\n    path: {path}\n    prune: true\n    retryInterval: 1m\n    sourceRef:\n      kind: GitRepository\n      name: sylva-core\n    timeout: 30s\n    wait: {}\n",
        !helm
    );
    if helm {
        let _ = write!(
            out,
            "    healthChecks:\n    - apiVersion: helm.toolkit.fluxcd.io/v2\n      kind: HelmRelease\n      name: {name}\n      namespace: sylva-system\n"
        );
        let values = helm_values(name, rng);
        let _ = write!(
            out,
            "    postBuild:\n      substitute:\n        UNIT_NAME: {name}\n        VALUES_B64: {}\n",
            base64(values.as_bytes())
        );
        let _ = write!(
            out,
            "    patches:\n    - target:\n        kind: HelmRelease\n        name: helmrelease-generic\n      patch: |\n        - op: replace\n          path: /metadata/name\n          value: {name}\n        - op: replace\n          path: /spec\n          value:\n            releaseName: {name}\n            targetNamespace: {name}\n            interval: 24h\n            driftDetection:\n              mode: enabled\n            upgrade:\n              crds: CreateReplace\n            chart:\n              spec:\n                chart: {name}\n                version: {}.{}.{}\n                sourceRef:\n                  kind: HelmRepository\n                  name: unit-{name}\n            values:\n",
            1 + rng.below(3),
            rng.below(30),
            rng.below(10)
        );
        for line in values.lines() {
            let _ = writeln!(out, "              {line}");
        }
    } else if name != "sylva-units-status" && !root {
        let _ = write!(
            out,
            "    postBuild:\n      substitute:\n        NAMESPACE: sylva-system\n        JOB_CHECKSUM: \"{:016x}{:016x}\"\n",
            rng.next(),
            rng.next()
        );
    }
}

/// Helm values of one unit: a few nested blocks like real charts have.
fn helm_values(name: &str, rng: &mut Rng) -> String {
    let mut v = String::new();
    let _ = write!(
        v,
        "fullnameOverride: {name}\nreplicaCount: {}\nimage:\n  repository: registry.example.org/mirror/{name}\n  tag: v{}.{}.{}\n  pullPolicy: IfNotPresent\nresources:\n  requests:\n    cpu: {}m\n    memory: {}Mi\n  limits:\n    memory: {}Mi\ntolerations:\n- key: node-role.kubernetes.io/control-plane\n  operator: Exists\n  effect: NoSchedule\nnodeSelector:\n  kubernetes.io/os: linux\nserviceMonitor:\n  enabled: true\n  namespace: cattle-monitoring-system\n",
        1 + rng.below(3),
        rng.below(3),
        rng.below(40),
        rng.below(10),
        50 * (1 + rng.below(8)),
        64 * (1 + rng.below(16)),
        128 * (1 + rng.below(16)),
    );
    if name == "metallb" {
        v.push_str("loadBalancerClass: sylva.org/metallb-class\nspeaker:\n  frr:\n    enabled: false\n  tolerations:\n  - key: node-role.kubernetes.io/control-plane\n    operator: Exists\n    effect: NoSchedule\n  priorityClassName: system-cluster-critical\nfrrk8s:\n  enabled: true\nfrr-k8s:\n  prometheus:\n    rbacProxy:\n      repository: quay.io/brancz/kube-rbac-proxy\n      tag: v0.21.0\n");
    }
    v
}

/// The `sylva-units-values` Secret: the whole values tree, base64-encoded as sylva-units writes it.
fn values_secret(out: &mut String, names: &[String], deps_of: &[Vec<usize>], rng: &mut Rng) {
    let mut v = String::with_capacity(names.len() * 1500);
    v.push_str("units:\n");
    for (u, name) in names.iter().enumerate() {
        let _ = writeln!(v, "  {name}:");
        let _ = writeln!(v, "    enabled: true");
        if !deps_of[u].is_empty() {
            v.push_str("    depends_on:\n");
            for &d in &deps_of[u] {
                let _ = writeln!(v, "      {}: true", names[d]);
            }
        }
        v.push_str("    unit_templates:\n    - base-deps\n");
        if name != "cluster" && u % 3 != 2 {
            let _ = write!(
                v,
                "    helm_repo_url: https://charts.example.org/{name}\n    helmrelease_spec:\n      chart:\n        spec:\n          chart: {name}\n          version: 1.{}.0\n      targetNamespace: {name}\n      install:\n        createNamespace: true\n      values:\n",
                rng.below(30)
            );
            for line in helm_values(name, rng).lines() {
                let _ = writeln!(v, "        {line}");
            }
        } else {
            let _ = write!(
                v,
                "    kustomization_spec:\n      path: ./kustomize-units/{name}\n      wait: true\n"
            );
        }
    }
    v.push_str(
        "metallb:\n  l2_lbs:\n    address_pools:\n      lbpool:\n        addresses:\n        - 192.168.100.10-192.168.100.50\n    l2_options:\n      advertisements:\n        l2advertisement:\n          advertised_pools:\n          - lbpool\n          interfaces:\n          - bond0\n  bgp_lbs:\n    l3_options:\n      bfd_profiles:\n        bfd-fast:\n          receiveInterval: 300\n          transmitInterval: 300\n          detectMultiplier: 3\n      bgp_peers:\n        tor-a:\n          local_asn: 64512\n          peer_asn: 64601\n          peer_address: 192.168.10.1\n          bfd_profile: bfd-fast\n          advertised_pools:\n          - bgp-pool\n        tor-b:\n          local_asn: 64512\n          peer_asn: 64602\n          peer_address: 192.168.10.2\n          bfd_profile: bfd-fast\n          advertised_pools:\n          - bgp-pool\n    address_pools:\n      bgp-pool:\n        addresses:\n        - 10.250.0.0/24\n  cluster_virtual_ip: 192.168.100.2\n",
    );
    v.push_str("metallb_helm_values:\n");
    for line in helm_values("metallb", rng).lines() {
        let _ = writeln!(v, "  {line}");
    }
    v.push_str(
        "cluster:\n  capi_providers:\n    infra_provider: capm3\n    bootstrap_provider: cabpr\n  air_gapped: false\nproxies:\n  http_proxy: \"\"\n  https_proxy: \"\"\n  no_proxy: \"\"\nregistry_mirrors:\n  default_settings:\n    capabilities:\n    - pull\n    - resolve\n  hosts_config:\n    quay.io:\n    - mirror_url: https://registry.example.org/v2/quay.io\n      is_default_mirror: true\n_internal:\n  state:\n    is_upgrade: true\n  sylva_core_version: 1.7.6\n",
    );
    let _ = write!(
        out,
        "- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: sylva-units-values\n    namespace: sylva-system\n    labels:\n      app.kubernetes.io/managed-by: Helm\n    annotations:\n      values-checksum: \"{:016x}\"\n",
        rng.next()
    );
    kpt_annotations(out, "      ", "sylva-units/values.yaml", 0);
    let _ = writeln!(
        out,
        "  type: Opaque\n  data:\n    values: {}",
        base64(v.as_bytes())
    );
}

/// Standard base64 with padding (RFC 4648 §4).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

//! The benchmark input generator (`cutover-gen`): same arguments give the same bytes, and what it
//! writes is a valid platform that the function accepts (CRD-valid MetalLB and Flux objects,
//! lossless k8s-openapi Services, explicit IPs inside usable pools, MetalLB-compatible sharing
//! groups), so benchmark numbers measure real mode work, not an early error.

mod common;

#[path = "../src/bin/cutover-gen/generate/mod.rs"]
#[allow(dead_code)]
mod generate;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::process::Command;

use cutover::krm::{KrmObject, io};
use generate::{Config, Spec};
use k8s_openapi::api::core::v1::{Secret, Service};
use serde_yaml::Value;

fn small_lb() -> Spec {
    Spec {
        services: 400,
        namespaces: 12,
        pools: 8,
        l2_advertisements: 4,
        units: 0,
        config: Config::Announcer,
        seed: 11,
        observed: false,
        pass_through: 0,
    }
}

/// Runs `cutover-gen` with `args`.
fn run_gen(args: &[&str]) -> common::Run {
    common::run_cmd(Command::new(env!("CARGO_BIN_EXE_cutover-gen")).args(args))
}

/// What `cutover-gen` writes for `args`, which it must accept.
fn gen_bin(args: &[&str]) -> Vec<u8> {
    let run = run_gen(args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
}

#[test]
fn same_arguments_give_the_same_bytes() {
    let args = ["--services", "300", "--units", "20", "--seed", "5"];
    let a = gen_bin(&args);
    assert_eq!(a, gen_bin(&args));
    assert_ne!(
        a,
        gen_bin(&["--services", "300", "--units", "20", "--seed", "6"])
    );
    // The binary and the module the benches include are the same generator.
    let spec = Spec {
        services: 300,
        units: 20,
        seed: 5,
        ..Spec::load_balancers(1_000)
    };
    assert_eq!(a, generate::generate(&spec).into_bytes());
    assert_eq!(
        gen_bin(&["sylva"]),
        generate::generate(&Spec::sylva()).into_bytes()
    );
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [
        &["--pools", "0"][..],
        &["--units", "3"],
        &["--l2-advertisements", "9"],
        &["--config", "nope"],
        &["no-such-preset"],
        &["--services"],
    ] {
        let run = run_gen(args);
        assert_eq!(run.code, 2, "{args:?}");
        assert!(run.stdout.is_empty(), "{args:?}");
    }
}

fn metallb(svc: &Value, key: &str) -> Option<String> {
    svc.annotation(&format!("metallb.io/{key}"))
        .or_else(|| svc.annotation(&format!("metallb.universe.tf/{key}")))
        .map(str::to_owned)
}

/// Address range of a generated pool entry (CIDR /16 or a-b range) as u32 bounds.
fn range(entry: &str) -> (u32, u32) {
    let ip = |s: &str| -> u32 {
        s.split('.')
            .map(|o| o.parse::<u32>().unwrap())
            .fold(0, |acc, o| acc << 8 | o)
    };
    match entry.split_once('-') {
        Some((a, b)) => (ip(a), ip(b)),
        None => {
            let (net, len) = entry.split_once('/').unwrap();
            let len: u32 = len.parse().unwrap();
            let base = ip(net);
            (base, base | ((1u32 << (32 - len)) - 1))
        }
    }
}

/// A pool's address ranges and its `serviceAllocation.namespaces` (None = every namespace).
type PoolFacts = (Vec<(u32, u32)>, Option<Vec<String>>);

/// Checks the generated platform is one a careful operator could have written.
fn check_platform(text: &str, spec: &Spec) {
    let list = io::parse(text.as_bytes()).expect("a ResourceList");
    check_config(&list, spec);
    let platform = Platform::read(&list, spec);
    platform.check_totals(spec);
    let groups = platform.check_requests(spec);
    check_sharing_groups(&groups);
}

/// The function config is the one the preset says.
fn check_config(list: &io::ResourceList, spec: &Spec) {
    let cfg = cutover::config::parse(list.function_config.as_ref());
    match spec.config {
        Config::None => assert!(cfg.is_err()),
        Config::Announcer | Config::AnnouncerCutover => assert_eq!(
            cfg.expect("valid config").kind(),
            cutover::config::Kind::LoadBalancerAnnouncer
        ),
        Config::Prepull => assert_eq!(
            cfg.expect("valid config").kind(),
            cutover::config::Kind::MetalLBImagePrepull
        ),
    }
}

/// What the checks compare across items.
struct Platform<'a> {
    services: Vec<&'a Value>,
    pools: BTreeMap<String, PoolFacts>,
    advertised: BTreeSet<String>,
    units: usize,
}

impl<'a> Platform<'a> {
    /// Reads every item, checking each one on its own: a file slot of its own, CRD-valid,
    /// lossless as its Kubernetes type, the Sylva values as generated.
    fn read(list: &'a io::ResourceList, spec: &Spec) -> Platform<'a> {
        let mut slots = HashSet::new();
        let mut pools: BTreeMap<String, PoolFacts> = BTreeMap::new();
        let mut advertised = BTreeSet::new();
        let mut services = Vec::new();
        let mut units = 0;
        for item in &list.items {
            let file = item.file_ref().expect("kpt path annotation");
            assert!(
                slots.insert((file.path, file.index)),
                "two items in one file slot"
            );
            if common::crd::has_schema(item)
                && let Err(e) = common::crd::validate(item)
            {
                panic!("{} is not CRD-valid: {e:?}", item.object_ref());
            }
            match (item.api_version(), item.kind()) {
                ("v1", "Service") => {
                    common::k8s::roundtrip::<Service>(item).expect("lossless Service");
                    services.push(item);
                }
                ("v1", "Secret") => {
                    let secret: Secret = common::k8s::roundtrip(item).expect("lossless Secret");
                    let values = &secret.data.expect("data")["values"].0;
                    let values: Value = serde_yaml::from_slice(values).expect("values are YAML");
                    assert_eq!(
                        values["_internal"]["state"]["is_upgrade"],
                        Value::Bool(true)
                    );
                    assert!(values["metallb"]["bgp_lbs"]["l3_options"]["bgp_peers"].is_mapping());
                    assert_eq!(
                        values["units"].as_mapping().unwrap().len(),
                        spec.units,
                        "one values entry per unit"
                    );
                }
                ("metallb.io/v1beta1", "IPAddressPool") => {
                    let addrs = item["spec"]["addresses"].as_sequence().unwrap();
                    let ns = item["spec"]["serviceAllocation"]["namespaces"]
                        .as_sequence()
                        .map(|s| s.iter().map(|n| n.as_str().unwrap().to_owned()).collect());
                    pools.insert(
                        item.name().to_owned(),
                        (
                            addrs.iter().map(|a| range(a.as_str().unwrap())).collect(),
                            ns,
                        ),
                    );
                }
                ("metallb.io/v1beta1", "L2Advertisement") => {
                    for p in item["spec"]["ipAddressPools"].as_sequence().unwrap() {
                        advertised.insert(p.as_str().unwrap().to_owned());
                    }
                }
                ("kustomize.toolkit.fluxcd.io/v1", "Kustomization") => units += 1,
                _ => {}
            }
        }
        Platform {
            services,
            pools,
            advertised,
            units,
        }
    }

    /// As many of each as the preset says; pools announced and disjoint.
    fn check_totals(&self, spec: &Spec) {
        assert_eq!(self.services.len(), spec.services);
        assert_eq!(self.pools.len(), spec.pools);
        // Units + root-dependency-<rev> + sylva-units-status.
        assert_eq!(self.units, if spec.units == 0 { 0 } else { spec.units + 2 });
        assert_eq!(
            self.advertised,
            self.pools.keys().cloned().collect(),
            "every pool is announced by an L2Advertisement"
        );
        let mut ranges: Vec<(u32, u32)> = self.pools.values().flat_map(|p| p.0.clone()).collect();
        ranges.sort_unstable();
        assert!(ranges.windows(2).all(|w| w[0].1 < w[1].0), "pools overlap");
    }

    /// Explicit IPs: inside a pool the Service may use, unique unless shared under one key;
    /// returns the Services of each sharing key.
    fn check_requests(&self, spec: &Spec) -> BTreeMap<String, Vec<&'a Value>> {
        let pools = &self.pools;
        let mut owner_of_ip: BTreeMap<String, (String, Option<String>)> = BTreeMap::new();
        let mut groups: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
        let mut kinds = BTreeSet::new();
        for &svc in &self.services {
            let ns = svc.namespace().unwrap().to_owned();
            let usable = |pool: &str| {
                pools[pool]
                    .1
                    .as_ref()
                    .is_none_or(|allowed| allowed.contains(&ns))
            };
            let key = metallb(svc, "allow-shared-ip");
            if let Some(pool) = metallb(svc, "address-pool") {
                assert!(
                    pools.contains_key(&pool) && usable(&pool),
                    "{pool} for {ns}"
                );
                kinds.insert("pool");
            }
            if let Some(ip) = metallb(svc, "loadBalancerIPs") {
                kinds.insert("ip");
                let n = range(&format!("{ip}/32")).0;
                let (pool, _) = pools
                    .iter()
                    .find(|(_, (r, _))| r.iter().any(|(lo, hi)| (*lo..=*hi).contains(&n)))
                    .unwrap_or_else(|| panic!("{ip} is in no pool"));
                assert!(usable(pool), "{ip} from {pool} in {ns}");
                if let Some(requested) = metallb(svc, "address-pool") {
                    assert_eq!(&requested, pool);
                }
                let me = (ns.clone(), key.clone());
                match owner_of_ip.get(&ip) {
                    None => {
                        owner_of_ip.insert(ip, me);
                    }
                    Some(first) => assert!(first == &me && key.is_some(), "{ip} reused"),
                }
            }
            if let Some(key) = key {
                kinds.insert("shared");
                groups.entry(key).or_default().push(svc);
            }
            if svc
                .annotation("metallb.universe.tf/allow-shared-ip")
                .is_some()
                || svc.annotation("metallb.universe.tf/address-pool").is_some()
                || svc
                    .annotation("metallb.universe.tf/loadBalancerIPs")
                    .is_some()
            {
                kinds.insert("deprecated-prefix");
            }
        }
        if spec.services >= 200 {
            assert_eq!(
                kinds,
                BTreeSet::from(["deprecated-prefix", "ip", "pool", "shared"]),
                "every kind of request appears"
            );
        }
        groups
    }
}

/// The Services of one sharing key can share: one namespace, one IP, no port twice.
fn check_sharing_groups(groups: &BTreeMap<String, Vec<&Value>>) {
    for (key, members) in groups {
        assert!(members.len() >= 2, "{key} has one member");
        let mut ports = HashSet::new();
        for svc in members {
            assert_eq!(svc.namespace(), members[0].namespace(), "{key}");
            assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster", "{key}");
            assert_eq!(
                metallb(svc, "loadBalancerIPs"),
                metallb(members[0], "loadBalancerIPs"),
                "{key}"
            );
            for port in svc["spec"]["ports"].as_sequence().unwrap() {
                let pp = (port["port"].as_u64(), port["protocol"].as_str());
                assert!(ports.insert(pp), "{key}: port {pp:?} twice");
            }
        }
    }
}

#[test]
fn load_balancer_platform_is_valid() {
    let spec = small_lb();
    check_platform(&generate::generate(&spec), &spec);
}

#[test]
fn sylva_bundle_is_valid() {
    let spec = Spec::sylva();
    check_platform(&generate::generate(&spec), &spec);
}

#[test]
fn presets_exist_and_validate() {
    for name in generate::PRESETS {
        let spec = Spec::preset(name).unwrap();
        spec.validate().unwrap();
    }
    assert!(Spec::preset("lb-100k").unwrap().services == 100_000);
}

/// The items no mode reads are valid objects of their kinds (k8s-openapi types without loss, the
/// Flux CRD for HelmReleases), and a cutover run writes each of them back as it read it.
#[test]
fn pass_through_items_are_valid_and_come_out_unchanged() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let spec = Spec {
        pass_through: 60,
        config: Config::AnnouncerCutover,
        ..small_lb()
    };
    let input = generate::generate(&spec);
    let items = io::parse(input.as_bytes()).unwrap().items;
    let passing: Vec<&Value> = items
        .iter()
        .filter(|i| i["metadata"]["labels"]["app.kubernetes.io/part-of"] == "platform")
        .collect();
    assert_eq!(passing.len(), 60);
    let mut kinds = BTreeMap::new();
    for item in &passing {
        let kind = item["kind"].as_str().unwrap();
        *kinds.entry(kind).or_insert(0) += 1;
        let checked = match kind {
            "Deployment" => common::k8s::roundtrip::<Deployment>(item).map(drop),
            "ConfigMap" => common::k8s::roundtrip::<ConfigMap>(item).map(drop),
            "CustomResourceDefinition" => {
                common::k8s::roundtrip::<CustomResourceDefinition>(item).map(drop)
            }
            _ => common::crd::validate(item).map_err(|e| e.join("; ")),
        };
        checked.unwrap_or_else(|e| panic!("{kind} {:?}: {e}", item["metadata"]["name"]));
    }
    assert_eq!(
        kinds,
        BTreeMap::from([
            ("ConfigMap", 15),
            ("CustomResourceDefinition", 3),
            ("Deployment", 36),
            ("HelmRelease", 6)
        ])
    );
    let run = common::run_fn(input.as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.resource_list();
    for item in passing {
        let id = item.object_ref();
        let written = out["items"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|o| o.object_ref() == id)
            .unwrap_or_else(|| panic!("{id} dropped"));
        assert_eq!(written, item, "{id}");
    }
}

/// The function reads the generated list, accepts its config and never drops an item. (While a
/// mode is not implemented its run ends in an error result, which echoes the items; once it is,
/// the output has every input item plus what the mode adds.)
#[test]
fn the_function_accepts_generated_input() {
    for spec in [small_lb(), Spec::sylva()] {
        let input = generate::generate(&spec);
        let run = common::run_fn(input.as_bytes());
        let out = run.resource_list();
        assert_eq!(out["kind"], "ResourceList", "{}", run.stderr);
        let input_items = io::parse(input.as_bytes()).unwrap().items;
        let output_items = out["items"].as_sequence().expect("items");
        let ids: HashSet<_> = output_items.iter().map(KrmObject::object_ref).collect();
        for item in &input_items {
            assert!(
                ids.contains(&item.object_ref()),
                "{} dropped",
                item.object_ref()
            );
        }
        for r in run.results() {
            let field = r["field"]["path"].as_str().unwrap_or("");
            assert!(
                !(r["severity"] == "error"
                    && (field.starts_with("spec") || field.starts_with("functionConfig"))),
                "the generated function config was rejected: {r:?}"
            );
        }
    }
}

/// The prepull mode runs to the end on the generated Sylva bundle: the gate opens (upgrade,
/// BGP peers, MetalLB enabled), the prepull unit is added and `metallb` waits for it. So the
/// benchmark measures a full prepull run, not an error path.
#[test]
fn prepull_runs_to_the_end_on_the_sylva_bundle() {
    let run = common::run_fn(generate::generate(&Spec::sylva()).as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.resource_list();
    let items = out["items"].as_sequence().unwrap();
    let metallb = items
        .iter()
        .find(|i| i.is("kustomize.toolkit.fluxcd.io", "Kustomization") && i.name() == "metallb")
        .expect("metallb unit");
    let deps: Vec<&str> = metallb["spec"]["dependsOn"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(deps.contains(&"metallb-image-prepull"), "{deps:?}");
    assert!(items.iter().any(|i| i.is("apps", "DaemonSet")));
}

/// The announcer runs to the end (exit 0) on the generated load-balancer platforms, both phases
/// (this caught finding F1 of docs/benchmarks.md: Services that request a pool and have no IP yet).
#[test]
fn announcer_runs_to_the_end_on_generated_platforms() {
    for config in [Config::Announcer, Config::AnnouncerCutover] {
        let spec = Spec {
            config,
            ..small_lb()
        };
        let run = common::run_fn(generate::generate(&spec).as_bytes());
        assert_eq!(run.code, 0, "{config:?}: {}", run.stderr);
        let out = run.resource_list();
        let pools = out["items"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter(|i| i.kind() == "CiliumLoadBalancerIPPool")
            .count();
        assert_eq!(
            pools, spec.pools,
            "{config:?}: one Cilium pool per MetalLB pool"
        );
    }
}

/// The observed presets: every Service of the platform appears in one `ObservedState` item with
/// an IP inside a pool the Service may use, and the function names them: no unknown IP.
#[test]
fn observed_platform_names_every_ip() {
    let spec = Spec {
        observed: true,
        ..small_lb()
    };
    let text = generate::generate(&spec);
    check_platform(&text, &spec);
    let list = io::parse(text.as_bytes()).unwrap();
    let observed: Vec<&Value> = list
        .items
        .iter()
        .filter(|i| i.kind() == "ObservedState")
        .collect();
    assert_eq!(observed.len(), 1);
    let live = observed[0]["services"].as_mapping().unwrap();
    assert_eq!(live.len(), spec.services);
    let run = common::run_fn(text.as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary = run
        .results()
        .into_iter()
        .find(|r| r["tags"]["check"] == "coverage" && r["tags"].get("checked").is_some())
        .unwrap();
    assert_eq!(summary["tags"]["unknown"], "0", "{summary:?}");
    assert_eq!(summary["tags"]["failed"], "0", "{summary:?}");
}

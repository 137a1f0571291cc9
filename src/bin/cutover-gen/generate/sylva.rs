//! A Sylva bundle as sylva-units renders it: unit Kustomizations in a dependency DAG below
//! `root-dependency-<rev>`, Helm units carrying their HelmRelease spec and values, the
//! `sylva-units-status` Kustomization and the `sylva-units-values` Secret (base64 values with the
//! upgrade state and MetalLB BGP peers, so the prepull gate opens).

use std::fmt::Write;

use super::{Rng, Spec, kpt_annotations};

/// Units every bundle has (MetalLB ones are what the prepull mode gates).
pub(super) const FIXED_UNITS: &[&str] = &[
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

pub(super) fn write_units(out: &mut String, spec: &Spec, rng: &mut Rng) {
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
fn base64(bytes: &[u8]) -> String {
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

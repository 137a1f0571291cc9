//! LoadBalancer Services spread over tenant namespaces, asking MetalLB for their addresses the
//! ways real ones do: any pool, a named pool, an explicit IP (inside a pool the Service may use),
//! or a sharing group that follows MetalLB's rules.

use std::fmt::Write;

use super::metallb::Pool;
use super::{Rng, Spec, kpt_annotations, ns_name};

const APPS: &[&str] = &[
    "web", "api", "ingress", "grafana", "mqtt", "dns", "gateway", "ldap", "smtp", "vpn", "git",
    "registry", "postgres", "redis", "kafka", "minio", "keycloak", "vault", "harbor", "argocd",
];

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

/// Writes the Services; with `spec.observed`, returns what the cluster would show for each:
/// `(namespace, name, IP)`, the IP MetalLB gave it (requested, else the next free address of the
/// pool it asks for or of the first auto-assign pool that admits it). Taking those addresses
/// draws nothing from `rng`, so the other presets are unchanged.
pub(super) fn write_services(
    out: &mut String,
    spec: &Spec,
    pools: &mut [Pool],
    rng: &mut Rng,
) -> Vec<(String, String, String)> {
    let mut live = Vec::new();
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
                let group_ip = match (&ip, spec.observed) {
                    (Some(ip), true) => Some(ip.clone()),
                    (None, true) => {
                        first_free(pools, if auto.is_empty() { &eligible } else { &auto })
                    }
                    _ => None,
                };
                for member in 0..size {
                    let request = Request::Shared {
                        key: key.clone(),
                        ip: ip.clone(),
                        member,
                        dns,
                    };
                    write_service(out, &ns, &path, index, written, &request, pools, rng);
                    if let Some(ip) = &group_ip {
                        live.push((ns.clone(), service_name(written), ip.clone()));
                    }
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
            if spec.observed {
                let ip = match &request {
                    Request::Ip(ip, _) => Some(ip.clone()),
                    Request::Pool(p) => pools[*p].take(*p),
                    _ => first_free(pools, &auto),
                };
                if let Some(ip) = ip {
                    live.push((ns.clone(), service_name(written), ip));
                }
            }
            write_service(out, &ns, &path, index, written, &request, pools, rng);
            index += 1;
            written += 1;
        }
    }
    live
}

/// The next free address of the first of `candidates` that has one.
fn first_free(pools: &mut [Pool], candidates: &[usize]) -> Option<String> {
    candidates.iter().find_map(|&p| pools[p].take(p))
}

fn service_name(serial: usize) -> String {
    format!("{}-{serial:06}", APPS[serial % APPS.len()])
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
    let name = service_name(serial);
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

//! MetalLB's configuration as a platform repository holds it (IPAddressPools, L2Advertisements
//! that together announce every pool) and the MetalLB and Cilium installations as Flux
//! HelmReleases.

use std::fmt::Write;

use super::{Spec, kpt_annotations, ns_name};

/// Address pool `p`: second octet `100 + p`, so pools never overlap.
pub(super) struct Pool {
    pub(super) name: String,
    /// Next host offset inside the /16 (skips .0 and .255 so `avoidBuggyIPs` is honoured).
    next: u32,
    pub(super) auto_assign: bool,
    /// Namespaces allowed by `serviceAllocation.namespaces`; `None` = all.
    namespaces: Option<Vec<usize>>,
}

impl Pool {
    fn octet(index: usize) -> usize {
        100 + index
    }
    /// The next free address, or `None` when the pool is exhausted.
    pub(super) fn take(&mut self, index: usize) -> Option<String> {
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
    pub(super) fn allows(&self, ns: usize) -> bool {
        self.namespaces
            .as_ref()
            .is_none_or(|list| list.contains(&ns))
    }
}

pub(super) fn make_pools(spec: &Spec) -> Vec<Pool> {
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

pub(super) fn write_pools(out: &mut String, pools: &[Pool]) {
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
pub(super) fn write_l2_advertisements(out: &mut String, pools: &[Pool], count: usize) {
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
pub(super) fn write_releases(out: &mut String, speaker_stopped: bool) {
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

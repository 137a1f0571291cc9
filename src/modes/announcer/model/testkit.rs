//! Builders for the model's unit tests: small clusters written inline.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::super::ipam::{Family, Interval};
use super::super::version::CiliumVersion;
use super::lbipam::{Ctx, LbIpam, Quirks};
use super::state::{
    Advert, Block, CPool, Cluster, Flags, L2Policy, MlbPool, Node, Selector, Service, ServiceSpec,
    SvcKey, ip_value,
};

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub fn key(name: &str) -> SvcKey {
    SvcKey {
        namespace: "web".into(),
        name: name.into(),
    }
}

pub fn interval(from: &str, to: &str) -> Interval {
    Interval {
        family: Family::V4,
        start: ip_value(ip(from)).1,
        end: ip_value(ip(to)).1,
    }
}

pub fn empty() -> Cluster {
    Cluster {
        services: BTreeMap::new(),
        nodes: Vec::new(),
        mlb_pools: BTreeMap::new(),
        adverts: BTreeMap::new(),
        cilium_pools: BTreeMap::new(),
        conflicting: BTreeSet::new(),
        policies: BTreeMap::new(),
        flags: Flags {
            metallb_controller: true,
            metallb_speaker: true,
            l2_announcements: false,
        },
        protocol_diff: None,
        next_created: 0,
    }
}

/// A Service with annotations `k=v` pairs, one TCP port and a status.
pub fn service(c: &mut Cluster, name: &str, port: i32, ann: &[(&str, &str)], status: &[&str]) {
    let spec = ServiceSpec {
        annotations: ann
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ports: vec![(port, "TCP".into())],
        ..ServiceSpec::default()
    };
    let status = status.iter().map(|s| ip(s)).collect();
    c.services.insert(key(name), Service { spec, status });
}

pub fn cpool(c: &mut Cluster, name: &str, from: &str, to: &str, sel: Option<LabelSelector>) {
    let created = c.next_created;
    c.next_created += 1;
    let pool = CPool {
        blocks: vec![Block {
            interval: interval(from, to),
            ends_reserved: false,
        }],
        selector: Selector::new(sel),
        disabled: false,
        created,
    };
    c.cilium_pools.insert(name.into(), pool);
}

pub fn mpool(c: &mut Cluster, name: &str, from: &str, to: &str, auto: bool) {
    let pool = MlbPool {
        labels: BTreeMap::new(),
        ranges: vec![interval(from, to)],
        auto_assign: auto,
        avoid_buggy: false,
        namespaces: Vec::new(),
        service_selectors: Vec::new(),
        priority: None,
    };
    c.mlb_pools.insert(name.into(), pool);
}

pub fn advert_all(c: &mut Cluster) {
    let a = Advert {
        pools: Vec::new(),
        pool_selectors: Vec::new(),
        node_selectors: Vec::new(),
    };
    c.adverts.insert("l2".into(), a);
}

pub fn node(c: &mut Cluster, name: &str, labels: &[(&str, &str)]) {
    c.nodes.push(Node {
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        network_unavailable: false,
        speaker_pod: true,
    });
}

pub fn policy(c: &mut Cluster, name: &str, nodes: Option<LabelSelector>) {
    let p = L2Policy {
        service_selector: Selector::all(),
        node_selector: Selector::new(nodes),
        load_balancer_ips: true,
    };
    c.policies.insert(name.into(), p);
}

pub fn quirks(v: &str) -> Quirks {
    Quirks::for_version(&CiliumVersion::parse(v).unwrap(), None)
}

/// Wakes a dormant LB-IPAM with every pool of `c` (in name order) and revalidates the
/// Services in the given order, writing each patch to the cluster.
pub fn wake(c: &mut Cluster, q: &Quirks, order: &[&str]) -> LbIpam {
    let mut ipam = LbIpam::dormant();
    let names: Vec<String> = c.cilium_pools.keys().cloned().collect();
    for n in names {
        ipam.pool_queue.insert(n.clone());
        let cx = Ctx { cluster: c, q };
        let _ = ipam.pool_event(&cx, &n);
    }
    for name in order {
        let cx = Ctx { cluster: c, q };
        if let Some((k, st)) = ipam.init_service(&cx, &key(name), false) {
            c.services.get_mut(&k).unwrap().status = st;
        }
    }
    ipam
}

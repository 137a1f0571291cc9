//! The explorer: which changes a transition has, when they are enabled, and that a bounded
//! search is deterministic.

use serde_yaml::Value;

use super::super::super::version::CiliumVersion;
use super::*;

fn items(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

const POOL: &str = "apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata: {name: p, namespace: metallb-system}\nspec: {addresses: [10.0.0.0/28]}\n";
const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: web}\nspec: {type: LoadBalancer, ports: [{port: 80}]}\n";
const LIVE_SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: web}\nspec: {type: LoadBalancer, ports: [{port: 80}]}\nstatus: {loadBalancer: {ingress: [{ip: 10.0.0.5}]}}\n";
const CPOOL: &str = "apiVersion: cilium.io/v2\nkind: CiliumLoadBalancerIPPool\nmetadata: {name: p}\nspec: {blocks: [{cidr: 10.0.0.0/28}]}\n";

fn metallb(values: &str) -> String {
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: metallb, namespace: metallb-system}}\nspec:\n  chart: {{spec: {{chart: metallb}}}}\n  values: {values}\n"
    )
}

fn transition(live: &str, before: &str, after: &str) -> Transition {
    let o = Options::new(CiliumVersion::parse("1.19.2").unwrap());
    Transition::new(&items(live), &items(before), &items(after), o)
}

/// Helm values give the MetalLB process changes; removing the installation stops both at
/// prune time; a pool the next package lacks is pruned.
#[test]
fn changes_of_a_transition() {
    let live = format!("{}---\n{POOL}---\n{LIVE_SVC}", metallb("{}"));
    let before = format!("{}---\n{POOL}---\n{SVC}", metallb("{}"));
    let stop = format!(
        "{}---\n{POOL}---\n{SVC}",
        metallb("{speaker: {enabled: false}, controller: {enabled: false}}")
    );
    let t = transition(&live, &before, &stop);
    assert_eq!(
        t.changes(),
        vec![Change::SpeakerStops, Change::ControllerStops]
    );
    assert!(t.changes.iter().all(|(_, s)| *s == Stage::Apply));
    let t = transition(&live, &before, SVC);
    assert_eq!(
        t.changes(),
        vec![
            Change::Prune(ObjRef::MetalLbPool("p".into())),
            Change::SpeakerStops,
            Change::ControllerStops
        ]
    );
    assert!(t.changes.iter().all(|(_, s)| *s == Stage::Prune));
}

/// Prunes wait for every apply; with `services_first`, custom resources wait for Services.
#[test]
fn stages_gate_events() {
    let live = format!("{}---\n{POOL}---\n{LIVE_SVC}", metallb("{}"));
    let before = format!("{}---\n{POOL}---\n{SVC}", metallb("{}"));
    let labelled = SVC.replace("name: s,", "name: s, labels: {x: y},");
    let after = format!("{}---\n{CPOOL}---\n{labelled}", metallb("{}"));
    let mut t = transition(&live, &before, &after);
    let w = t.initial();
    let first = t.enabled(&w);
    assert!(
        first.contains(&Event::Change(Change::Apply(ObjRef::CiliumPool(
            "p".into()
        ))))
    );
    assert!(
        !first
            .iter()
            .any(|e| matches!(e, Event::Change(Change::Prune(_))))
    );
    t.options.services_first = true;
    let first = t.enabled(&w);
    assert_eq!(
        first,
        vec![Event::Change(Change::Apply(ObjRef::Service(SvcKey {
            namespace: "web".into(),
            name: "s".into()
        })))]
    );
}

/// Past the state bound the search samples; the same seed gives the same report.
#[test]
fn bounded_search_is_deterministic() {
    let live = format!("{}---\n{POOL}---\n{LIVE_SVC}", metallb("{}"));
    let before = format!("{}---\n{POOL}---\n{SVC}", metallb("{}"));
    let after = format!("{}---\n{CPOOL}---\n{SVC}", metallb("{}"));
    let mut t = transition(&live, &before, &after);
    t.options.max_states = 3;
    t.options.walks = 20;
    let (a, b) = (explore(&t), explore(&t));
    assert!(!a.exhaustive);
    assert_eq!(a.states, b.states);
    assert_eq!(a.violations, b.violations);
    t.options.max_states = 100_000;
    assert!(explore(&t).exhaustive);
}

//! The coverage proof must catch translation bugs: these tests run the real translation, then
//! tamper with the emitted objects the way a bug would, and expect the proof to fail.

use serde_yaml::Value;

use super::cilium::{IpPool, L2Policy};
use super::selector::key_in;
use super::services::{self, ServicePlan};
use super::version::CiliumVersion;
use super::{Phase, coverage, inputs, inventory, policies, translate};
use crate::krm::{KrmResult, Severity};

const ITEMS: &str = "
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: {name: public, namespace: metallb-system}
  spec: {addresses: [10.0.0.0/24]}
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: {name: opt-in, namespace: metallb-system}
  spec: {addresses: [10.0.1.0/28], autoAssign: false}
- apiVersion: metallb.io/v1beta1
  kind: L2Advertisement
  metadata: {name: workers, namespace: metallb-system}
  spec:
    nodeSelectors: [{matchLabels: {role: worker}}]
    interfaces: [eth0]
- apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: shop}
  spec: {type: LoadBalancer, ports: [{port: 80}]}
  status: {loadBalancer: {ingress: [{ip: 10.0.0.7}]}}
- apiVersion: v1
  kind: Service
  metadata: {name: opt, namespace: shop}
  spec: {type: LoadBalancer, ports: [{port: 80}]}
  status: {loadBalancer: {ingress: [{ip: 10.0.1.3}]}}
";

const LABEL: &str = "cutover.dev/address-pool";

struct Fixture {
    items: Vec<Value>,
    inv: inventory::Inventory,
    plans: Vec<ServicePlan>,
    pools: Vec<IpPool>,
    policies: Vec<L2Policy>,
}

fn fixture() -> Fixture {
    let items: Vec<Value> = serde_yaml::from_str(ITEMS).unwrap();
    let (inv, errors) = inputs::read(&items);
    assert!(errors.is_empty(), "{errors:?}");
    let version = CiliumVersion::parse("1.18.4").unwrap();
    let mut tr = translate::Translated::default();
    let mut results = Vec::new();
    translate::pools(&inv, &items, &version, LABEL, &mut tr, &mut results);
    policies::policies(&inv, &items, LABEL, &mut tr, &mut results);
    let plans = services::plan(&inv, &version, None, false, &mut results);
    assert!(!results.iter().any(KrmResult::is_error), "{results:?}");
    Fixture {
        pools: tr.pools.into_iter().map(|g| g.object).collect(),
        policies: tr.policies.into_iter().map(|g| g.object).collect(),
        items,
        inv,
        plans,
    }
}

fn prove(f: &Fixture) -> Vec<KrmResult> {
    let after = |plan: &ServicePlan| {
        super::selector::labels_of(
            &services::rewrite(&f.items[plan.index], plan, Phase::Cutover, LABEL)
                .unwrap_or_else(|| f.items[plan.index].clone()),
        )
    };
    coverage::prove(&f.inv, &f.items, &f.plans, &f.pools, &f.policies, &after)
}

fn errors(results: &[KrmResult]) -> Vec<String> {
    results
        .iter()
        .filter(|r| r.severity == Severity::Error)
        .map(|r| r.message.clone())
        .collect()
}

#[test]
fn untampered_translation_proves_clean() {
    let f = fixture();
    let results = prove(&f);
    assert!(errors(&results).is_empty(), "{results:?}");
    assert!(results.iter().any(|r| r.message.contains("2 of 2")));
    // The opt-in Service must carry the pool label, or the proof could not pass.
    assert_eq!(f.plans[1].label.as_deref(), Some("opt-in"));
}

#[test]
fn proof_catches_changed_interfaces() {
    let mut f = fixture();
    f.policies[0].spec.interfaces = Some(vec!["^eth1$".into()]);
    let e = errors(&prove(&f));
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e[0].contains("announcement changes"));
}

#[test]
fn proof_catches_changed_node_selector() {
    let mut f = fixture();
    f.policies[0].spec.node_selector = None;
    assert_eq!(errors(&prove(&f)).len(), 2);
}

#[test]
fn proof_catches_a_policy_that_misses_a_service() {
    let mut f = fixture();
    f.policies[0].spec.service_selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_expressions: Some(vec![key_in(LABEL, vec!["opt-in".into()])]),
            match_labels: None,
        },
    );
    let e = errors(&prove(&f));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("shop/web"));
}

#[test]
fn proof_catches_a_pool_selector_that_drops_a_service() {
    let mut f = fixture();
    // As if the translation forgot the pool label for opt-in Services.
    f.plans[1].label = None;
    let e = errors(&prove(&f));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("shop/opt") && e[0].contains("does not select"));
}

#[test]
fn proof_catches_shrunk_blocks() {
    let mut f = fixture();
    f.pools[0].spec.blocks[0].cidr = Some("10.0.0.0/30".into());
    let e = errors(&prove(&f));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("10.0.0.7"));
}

//! Transition model regressions: one live snapshot and the packages before and after one Flux
//! apply per situation (under `tests/transitions/<case>/`), explored in every order. For each
//! situation, the plan the function emits today shows a violation in some order, and the fixed
//! plan shows none in any explored order (or, where no plan is safe, the fix is shown to fail
//! too). Each test names the upstream rule it rests on.

use cutover::modes::announcer::model::explore::Change;
use cutover::modes::announcer::model::{Invariant, Options, Report, Transition, explore};
use cutover::modes::announcer::model::state::SvcKey;
use cutover::modes::announcer::model::CiliumVersion;
use serde_yaml::Value;

fn load(case: &str, file: &str) -> Vec<Value> {
    let path = format!("{}/tests/transitions/{case}/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

use serde::Deserialize;

fn opts(version: &str) -> Options {
    Options::new(CiliumVersion::parse(version).unwrap())
}

fn run(case: &str, live: &str, before: &str, after: &str, o: Options) -> Report {
    let t = Transition::new(&load(case, live), &load(case, before), &load(case, after), o);
    let r = explore(&t);
    eprintln!("{case} {live} {before} -> {after}:\n{r}");
    assert!(r.exhaustive, "{case}: the search was not exhaustive ({} states)", r.states);
    r
}

fn svc(ns: &str, name: &str) -> SvcKey {
    SvcKey {
        namespace: ns.into(),
        name: name.into(),
    }
}

fn broken(r: &Report, inv: Invariant, s: &SvcKey) -> bool {
    r.of(inv).iter().any(|v| v.finding.service == *s)
}

/// cilium/cilium#34783 (`stripOrImportIngresses` does not register the imported IP under the
/// sharing key; fixed in 1.16.3): on 1.16.2 the second member of an auto-assigned shared IP is
/// stripped and gets a new IP. `satisfySpecificIPRequests` joins the holders without the
/// key index, so pinning each member's IP keeps it — once LB-IPAM sees the pins before it
/// wakes.
#[test]
fn sharing_auto_assigned_on_1_16_2() {
    let c = "sharing-auto";
    let naive = run(c, "live.yaml", "before.yaml", "naive.yaml", opts("1.16.2"));
    assert!(broken(&naive, Invariant::IpKept, &svc("web", "a")) || broken(&naive, Invariant::IpKept, &svc("web", "b")));
    let mut o = opts("1.16.2");
    o.services_first = true;
    let fixed = run(c, "live.yaml", "before.yaml", "fixed.yaml", o.clone());
    assert!(fixed.violations.is_empty(), "{fixed}");
    // The naive plan breaks even when the Services go first: the bug is the import's.
    let naive = run(c, "live.yaml", "before.yaml", "naive.yaml", o);
    assert!(!naive.of(Invariant::IpKept).is_empty());
    assert!(naive.changes.contains(&Change::L2On));
}

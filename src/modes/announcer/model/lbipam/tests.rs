//! LB-IPAM rules, one test per rule of cilium/cilium `operator/pkg/lbipam/lbipam.go`.

use super::super::testkit::*;
use super::{Ctx, LbIpam, Mode};

const KEY: &str = "lbipam.cilium.io/sharing-key";
const IPS: &str = "lbipam.cilium.io/ips";

fn status(c: &super::super::state::Cluster, name: &str) -> Vec<std::net::IpAddr> {
    c.services[&key(name)].status.clone()
}

/// `stripOrImportIngresses`: an IP inside an enabled range of a pool that selects the Service
/// is imported; one outside every range is stripped and a generic request allocates anew.
#[test]
fn import_or_strip() {
    let mut c = empty();
    cpool(&mut c, "p", "10.0.0.0", "10.0.0.15", None);
    service(&mut c, "in", 80, &[], &["10.0.0.5"]);
    service(&mut c, "out", 81, &[], &["10.0.9.9"]);
    let ipam = wake(&mut c, &quirks("1.19.2"), &["in", "out"]);
    assert_eq!(status(&c, "in"), vec![ip("10.0.0.5")]);
    assert_eq!(status(&c, "out"), vec![ip("10.0.0.0")]);
    assert_eq!(ipam.mode, Mode::Active);
}

/// `initialize`: the first pool wakes a dormant LB-IPAM, which lists the Services and waits
/// for them to be revalidated before handling the next pool.
#[test]
fn wakes_on_the_first_pool() {
    let mut c = empty();
    cpool(&mut c, "a", "10.0.0.0", "10.0.0.15", None);
    cpool(&mut c, "b", "10.0.1.0", "10.0.1.15", None);
    service(&mut c, "s", 80, &[], &["10.0.1.3"]);
    let q = quirks("1.19.2");
    let mut ipam = LbIpam::dormant();
    let cx = Ctx { cluster: &c, q: &q };
    assert!(ipam.pool_event(&cx, "a").is_empty());
    assert!(
        matches!(&ipam.mode, Mode::Initializing { pending, .. } if pending.contains(&key("s")))
    );
    // Only pool `a` is known: the IP of pool `b` is stripped, one of `a` allocated.
    let patch = ipam.init_service(&cx, &key("s"), false);
    assert_eq!(patch, Some((key("s"), vec![ip("10.0.0.0")])));
    assert_eq!(ipam.mode, Mode::Active);
}

/// cilium/cilium#34783: on 1.16.2 an import does not register the sharing key, so the second
/// member of an auto-assigned shared IP gets a new one; on 1.16.3 it shares.
#[test]
fn import_skips_the_sharing_key_on_1_16_2() {
    for (v, b_ip) in [("1.16.2", "10.0.0.0"), ("1.16.3", "10.0.0.5")] {
        let mut c = empty();
        cpool(&mut c, "p", "10.0.0.0", "10.0.0.15", None);
        service(&mut c, "a", 80, &[(KEY, "k")], &["10.0.0.5"]);
        service(&mut c, "b", 443, &[(KEY, "k")], &["10.0.0.5"]);
        wake(&mut c, &quirks(v), &["a", "b"]);
        assert_eq!(status(&c, "a"), vec![ip("10.0.0.5")], "{v}");
        assert_eq!(status(&c, "b"), vec![ip(b_ip)], "{v}");
    }
}

/// `satisfySpecificIPRequests` joins the holders of a requested IP when the sharing key and
/// `isCompatible` allow, without the key index: pinned members share on 1.16.2.
#[test]
fn specific_request_shares_on_1_16_2() {
    let mut c = empty();
    cpool(&mut c, "p", "10.0.0.0", "10.0.0.15", None);
    service(
        &mut c,
        "a",
        80,
        &[(KEY, "k"), (IPS, "10.0.0.5")],
        &["10.0.0.5"],
    );
    service(
        &mut c,
        "b",
        443,
        &[(KEY, "k"), (IPS, "10.0.0.5")],
        &["10.0.0.5"],
    );
    let ipam = wake(&mut c, &quirks("1.16.2"), &["a", "b"]);
    assert_eq!(status(&c, "b"), vec![ip("10.0.0.5")]);
    assert_eq!(ipam.alloc[&ip("10.0.0.5")].1, vec![key("a"), key("b")]);
}

/// `isCompatible`: a clashing port keeps a pinned Service off the shared IP (it stays
/// unsatisfied, without the IP).
#[test]
fn incompatible_request_is_refused() {
    let mut c = empty();
    cpool(&mut c, "p", "10.0.0.0", "10.0.0.15", None);
    service(
        &mut c,
        "a",
        80,
        &[(KEY, "k"), (IPS, "10.0.0.5")],
        &["10.0.0.5"],
    );
    service(
        &mut c,
        "b",
        80,
        &[(KEY, "k"), (IPS, "10.0.0.5")],
        &["10.0.0.5"],
    );
    wake(&mut c, &quirks("1.19.2"), &["a", "b"]);
    assert!(status(&c, "b").is_empty());
}

/// Through 1.19.x a generic member whose import collided takes the FIRST compatible IP of its
/// key (fixed by cilium/cilium#46262, modelled from 1.20).
#[test]
fn generic_member_takes_the_first_ip_of_its_key() {
    for (v, d_ip) in [("1.19.2", "10.0.0.5"), ("1.20.0", "10.0.0.6")] {
        let mut c = empty();
        cpool(&mut c, "p", "10.0.0.0", "10.0.0.15", None);
        service(&mut c, "a", 80, &[(KEY, "k")], &["10.0.0.5"]);
        service(&mut c, "c", 8080, &[(KEY, "k")], &["10.0.0.6"]);
        service(&mut c, "d", 8443, &[(KEY, "k")], &["10.0.0.6"]);
        wake(&mut c, &quirks(v), &["a", "c", "d"]);
        assert_eq!(status(&c, "d"), vec![ip(d_ip)], "{v}");
    }
}

/// `settleConflicts`: the newer of two overlapping pools is Conflicting, and its ranges
/// neither import nor allocate.
#[test]
fn newer_overlapping_pool_conflicts() {
    let mut c = empty();
    let only_x = k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
        match_labels: Some([("app".to_owned(), "x".to_owned())].into()),
        ..Default::default()
    };
    cpool(&mut c, "old", "10.0.0.0", "10.0.0.15", Some(only_x));
    cpool(&mut c, "new", "10.0.0.0", "10.0.0.15", None);
    service(&mut c, "a", 80, &[(IPS, "10.0.0.5")], &["10.0.0.5"]);
    let ipam = wake(&mut c, &quirks("1.19.2"), &["a"]);
    assert!(ipam.conflicting.contains("new"));
    assert!(!ipam.conflicting.contains("old"));
    assert!(status(&c, "a").is_empty());
}

/// `handlePoolDeleted` reconciles the Services that lost an IP BEFORE `settleConflicts`
/// unmarks the pool the deleted one overlapped: the IP is stripped first, and the unmarked
/// pool then allocates the lowest free address.
#[test]
fn pool_delete_strips_before_conflicts_settle() {
    let mut c = empty();
    cpool(&mut c, "old", "10.0.0.0", "10.0.0.15", None);
    cpool(&mut c, "new", "10.0.0.0", "10.0.0.15", None);
    service(&mut c, "a", 80, &[], &["10.0.0.5"]);
    let q = quirks("1.19.2");
    let mut ipam = wake(&mut c, &q, &["a"]);
    assert_eq!(status(&c, "a"), vec![ip("10.0.0.5")]);
    c.cilium_pools.remove("old");
    let cx = Ctx { cluster: &c, q: &q };
    let patches = ipam.pool_event(&cx, "old");
    assert_eq!(
        patches,
        vec![(key("a"), vec![]), (key("a"), vec![ip("10.0.0.0")])]
    );
    assert!(ipam.conflicting.is_empty());
}

/// Releases below 1.18.2 may re-allocate unpinned Services at a restart (cilium/cilium#43131);
/// the stale revalidation is offered only there, and only for Services without a request.
#[test]
fn restart_race_below_1_18_2() {
    let mut c = empty();
    cpool(&mut c, "p", "10.0.0.0", "10.0.0.15", None);
    service(&mut c, "free", 80, &[], &["10.0.0.6"]);
    for (v, stale) in [("1.18.1", true), ("1.18.2", false)] {
        let q = quirks(v);
        let cx = Ctx { cluster: &c, q: &q };
        let mut ipam = LbIpam::from_live(&cx);
        ipam.start(&cx);
        assert!(
            matches!(ipam.mode, Mode::Initializing { stale: s, .. } if s == stale),
            "{v}"
        );
        let patch = ipam.init_service(&cx, &key("free"), stale);
        let expect = stale.then(|| (key("free"), vec![ip("10.0.0.0")]));
        assert_eq!(patch, expect, "{v}");
    }
}

/// 1.17.4–1.17.x: editing a pool re-assigns its Services that request no IP
/// (cilium/cilium#40358); pinned Services keep theirs (cilium/cilium#39033).
#[test]
fn pool_edit_reassigns_on_1_17_4() {
    for (v, moved) in [("1.17.4", true), ("1.18.0", false)] {
        let mut c = empty();
        cpool(&mut c, "p", "10.0.0.0", "10.0.0.15", None);
        service(&mut c, "free", 80, &[], &["10.0.0.6"]);
        service(&mut c, "pinned", 81, &[(IPS, "10.0.0.7")], &["10.0.0.7"]);
        let q = quirks(v);
        let mut ipam = wake(&mut c, &q, &["free", "pinned"]);
        c.cilium_pools.get_mut("p").unwrap().blocks[0].interval = interval("10.0.0.0", "10.0.0.31");
        let cx = Ctx { cluster: &c, q: &q };
        let patches = ipam.pool_event(&cx, "p");
        let free_moved = patches
            .iter()
            .any(|(k, st)| *k == key("free") && *st != vec![ip("10.0.0.6")]);
        assert_eq!(free_moved, moved, "{v}: {patches:?}");
        assert!(patches.iter().all(|(k, _)| *k != key("pinned")), "{v}");
    }
}

/// The version table of the quirks.
#[test]
fn quirks_per_release() {
    assert!(quirks("1.15.9").import_skips_key);
    assert!(!quirks("1.15.10").import_skips_key);
    assert!(quirks("1.16").import_skips_key);
    assert!(!quirks("1.16.3").import_skips_key);
    assert!(!quirks("1.19.9").import_shares);
    assert!(quirks("1.20.0").import_shares);
    assert!(quirks("1.18.1").restart_reallocates);
    assert!(!quirks("1.18.2").restart_reallocates);
    assert!(quirks("1.17.9").edit_reassigns);
    assert!(!quirks("1.17.3").edit_reassigns);
    assert!(!quirks("1.15.5").new_keys);
}

//! Error paths on the Cilium side: the targeted release (version, known-bad releases, one release
//! only, L2 announcements available), kube-proxy replacement, LB-IPAM owning the Services, and
//! IPv6 pools.

use super::*;

/// A Flux HelmRelease `name` (in kube-system) of the cilium chart at `version`, with `values`
/// (YAML lines indented by four).
fn cilium_release(name: &str, version: &str, values: &str) -> String {
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\n  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: cilium\n      version: {version}\n  values:\n{values}"
    )
}

#[test]
fn cilium_1_19_1_is_an_error_on_the_release() {
    let cilium = cilium_release("cilium", "1.19.1", "    kubeProxyReplacement: true\n");
    let items = [POOL, ADV, METALLB_STOPPED, cilium.as_str()];
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n";
    assert_error(
        &run(&items, config),
        &items,
        "HelmRelease",
        "cilium",
        "spec.chart.spec.version",
    );
    // Same version from the config: the error names the config.
    let items = [POOL, ADV, METALLB_STOPPED];
    let out = run(&items, &fc("").replace("1.18.4", "1.19.0"));
    assert_error(
        &out,
        &items,
        "LoadBalancerAnnouncer",
        "announcer",
        "spec.ciliumVersion",
    );
}

#[test]
fn unknown_cilium_version_is_an_error() {
    let items = [POOL, ADV, METALLB_STOPPED];
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n";
    assert_error(
        &run(&items, config),
        &items,
        "LoadBalancerAnnouncer",
        "a",
        "spec.ciliumVersion",
    );
}

#[test]
fn kube_proxy_replacement_off_is_an_error() {
    let cilium = cilium_release("cilium", "1.18.4", "    kubeProxyReplacement: false\n");
    let items = [POOL, ADV, METALLB_STOPPED, cilium.as_str()];
    assert_cutover_error(
        &items,
        "HelmRelease",
        "cilium",
        "spec.values.kubeProxyReplacement",
    );
}

#[test]
fn two_cilium_releases_or_a_pre_l2_cilium_are_errors() {
    let rel = |name: &str, version: &str| {
        cilium_release(name, version, "    kubeProxyReplacement: true\n")
    };
    let config = "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: a\nspec:\n  announcer: cilium\n  phase: cutover\n";
    let (a, b) = (rel("cilium", "1.18.4"), rel("cilium-2", "1.18.4"));
    let items = [POOL, ADV, METALLB_STOPPED, a.as_str(), b.as_str()];
    assert_error(
        &run(&items, config),
        &items,
        "HelmRelease",
        "cilium-2",
        "spec.chart",
    );
    let old = rel("cilium", "1.13.9");
    let items = [POOL, ADV, METALLB_STOPPED, old.as_str()];
    assert_error(
        &run(&items, config),
        &items,
        "HelmRelease",
        "cilium",
        "spec.chart.spec.version",
    );
}

#[test]
fn advertised_ipv6_pools_need_cilium_1_19() {
    let v6 = POOL.replace(
        "    - 10.0.0.0/24\n",
        "    - 10.0.0.0/24\n    - fd00::/120\n",
    );
    let items = [v6.as_str(), ADV, METALLB_STOPPED];
    assert_cutover_error(&items, "IPAddressPool", "pool-a", "spec.addresses[1]");
    let out = run(&items, &fc(CUTOVER).replace("1.18.4", "1.19.5"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(messages(&out, "warning").iter().any(|m| m.contains("NDP")));
}

#[test]
fn cilium_lb_ipam_not_owning_classless_services_is_an_error() {
    let cilium = cilium_release(
        "cilium",
        "1.19.2",
        "    kubeProxyReplacement: true\n    defaultLBServiceIPAM: none\n",
    );
    let items = [POOL, ADV, METALLB_STOPPED, cilium.as_str()];
    assert_cutover_error(
        &items,
        "HelmRelease",
        "cilium",
        "spec.values.defaultLBServiceIPAM",
    );
}

/// Cilium 1.14's pool CRD has only `spec.cidrs`: the emitted `blocks` would be invalid there, so
/// the cutover needs 1.15.
#[test]
fn cilium_1_14_is_refused() {
    let config = fc_strict("").replace("1.18.4", "1.14.19");
    let out = run(&[POOL, ADV], &config);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        messages(&out, "error")
            .iter()
            .any(|m| m.contains("Cilium 1.14.19 cannot take over") && m.contains("1.15")),
        "{}",
        out.stderr
    );
}

/// The Cilium release whose values the announcer edits is written from its tree: the values it
/// does not touch keep their spelling, so go-yaml (Flux, Helm) reads the same types as before
/// (`0644` is the integer 420, `1_048_576` a number, `!!binary` bytes), not strings.
#[test]
fn untouched_values_of_the_edited_release_keep_their_spelling() {
    let cilium = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: cilium\n  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: cilium\n      version: 1.18.4\n  values:\n    kubeProxyReplacement: true\n    extraVolumes:\n      - name: bpf\n        configMap:\n          name: bpf\n          defaultMode: 0644\n    bufferSize: 1_048_576\n    octal: 012\n    notOctal: 08\n    yaml12: 0o644\n    blob: !!binary aGVsbG8=\n    since: !!timestamp 2001-12-14\n    quoted: '0644'\n";
    let items = [POOL, ADV, METALLB_STOPPED, cilium];
    let out = run(&items, &fc(""));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = out.stdout_str();
    let release = &text[text.find("name: cilium").expect("the release")..];
    assert!(
        release.contains("l2announcements"),
        "the values were not edited:\n{release}"
    );
    for kept in [
        "defaultMode: 0644\n",
        "bufferSize: 1_048_576\n",
        "octal: 012\n",
        "notOctal: 08\n",
        "yaml12: 0o644\n",
        "blob: !!binary aGVsbG8=\n",
        "since: !!timestamp 2001-12-14\n",
        "quoted: '0644'\n",
    ] {
        assert!(release.contains(kept), "{kept:?} not kept:\n{release}");
    }
}

//! The `bgp` gate condition and the backend case: BGP peers in the sylva values
//! (`metallb.bgp_lbs.l3_options.bgp_peers`, a mapping of peer name to peer; a list before Sylva
//! 1.4) or MetalLB BGPPeer objects among the items. A peer with `bfd_profile` or `receive_routes`
//! (or BGPPeer objects with a `bfdProfile`, or FRRConfiguration objects) means 1.6 already runs
//! frr-k8s (case (2) -> (4)); otherwise the upgrade moves the native speaker to frr-k8s
//! (case (1) -> (3)).

use serde_yaml::Value;

use super::super::config_field;
use super::super::inputs::Inputs;
use super::super::values::{Origin, SylvaValues, type_name};
use super::{Case, Condition, as_text};
use crate::krm::KrmResult;

/// The condition, with the backend case it implies. Errors are malformed peers.
pub(super) fn condition(
    items: &[Value],
    inputs: &Inputs,
    values: &SylvaValues,
    fc: Option<&Value>,
) -> Result<(Condition, (Case, String)), KrmResult> {
    const PATH: [&str; 4] = ["metallb", "bgp_lbs", "l3_options", "bgp_peers"];
    let dotted = PATH.join(".");
    let bad = |message: String| {
        let r = KrmResult::error(message);
        match &values.origin {
            Origin::Inline => {
                let r = r.field(config_field(fc, &format!("values.{dotted}")));
                match fc {
                    Some(fc) => r.about(fc),
                    None => r,
                }
            }
            Origin::Item { index, field } => r.about(&items[*index]).field(field.clone()),
        }
    };
    let peers = peers_in_values(values, &PATH).map_err(|m| bad(format!("{dotted}{m}")))?;
    let frr_peers = frr_peers(&peers).map_err(|m| bad(format!("{dotted}.{m}")))?;
    let met = !peers.is_empty() || !inputs.bgp_peers.is_empty();
    let evidence = if !peers.is_empty() {
        format!(
            "{} BGP peer(s) in {dotted} ({})",
            peers.len(),
            values_names(&peers)
        )
    } else if !inputs.bgp_peers.is_empty() {
        format!(
            "{} MetalLB BGPPeer object(s) among the items",
            inputs.bgp_peers.len()
        )
    } else {
        format!(
            "no BGP L3 configuration: {dotted} is empty and no BGPPeer is among the items (L2-only MetalLB is not affected)"
        )
    };
    let about = match (&values.origin, peers.is_empty()) {
        (Origin::Item { index, .. }, false) => Some(*index),
        (_, true) => inputs.bgp_peers.first().copied(),
        _ => None,
    };
    let case = case(items, inputs, &frr_peers);
    Ok((
        Condition {
            met,
            evidence,
            about,
        },
        case,
    ))
}

/// The BGP peers in the values at `path`, by name (`[i]` for the list form); the error names
/// what is wrong after the path.
fn peers_in_values<'a>(
    values: &'a SylvaValues,
    path: &[&str],
) -> Result<Vec<(String, &'a Value)>, String> {
    let mut peers: Vec<(String, &Value)> = Vec::new();
    match values.get(path) {
        None | Some(Value::Null) => {}
        Some(Value::Mapping(m)) => {
            for (k, v) in m {
                let name = as_text(k).unwrap_or_else(|| format!("{k:?}"));
                peers.push((name, v));
            }
        }
        // The list form predates Sylva 1.4; still read it.
        Some(Value::Sequence(s)) => {
            for (i, v) in s.iter().enumerate() {
                peers.push((format!("[{i}]"), v));
            }
        }
        Some(other) => {
            return Err(format!(
                " must be a mapping of peer name to peer, found {}",
                type_name(other)
            ));
        }
    }
    Ok(peers)
}

/// The peers that use frr-k8s-only settings (`bfd_profile`, `receive_routes`); the error
/// names a peer that is not a mapping.
fn frr_peers(peers: &[(String, &Value)]) -> Result<Vec<String>, String> {
    let mut frr_peers = Vec::new();
    for (name, peer) in peers {
        let Value::Mapping(p) = peer else {
            return Err(format!(
                "{name} must be a mapping (peer_address, peer_asn, ...), found {}",
                type_name(peer)
            ));
        };
        let set = |k: &str| {
            p.get(k)
                .is_some_and(|v| !matches!(v, Value::Null) && v.as_str() != Some(""))
        };
        if set("bfd_profile") || set("receive_routes") {
            frr_peers.push(name.clone());
        }
    }
    Ok(frr_peers)
}

/// Which upgrade this is: frr-k8s already runs (a peer or a BGPPeer uses its settings, or
/// FRRConfigurations exist) or the native speaker is replaced.
fn case(items: &[Value], inputs: &Inputs, frr_peers: &[String]) -> (Case, String) {
    let bfd_objects: Vec<&Value> = inputs
        .bgp_peers
        .iter()
        .map(|&i| &items[i])
        .filter(|p| {
            p.get("spec")
                .and_then(|s| s.get("bfdProfile"))
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        })
        .collect();
    if !frr_peers.is_empty() {
        (
            Case::FrrK8sVersionBump,
            format!(
                "frr-k8s version bump (case (2) -> (4)): peer(s) {} use bfd_profile or receive_routes, so 1.6 already runs frr-k8s",
                frr_peers.join(", ")
            ),
        )
    } else if !bfd_objects.is_empty() || !inputs.frr_configurations.is_empty() {
        (
            Case::FrrK8sVersionBump,
            "frr-k8s version bump (case (2) -> (4)): BGPPeer objects with bfdProfile or FRRConfiguration objects show frr-k8s already runs".to_string(),
        )
    } else {
        (
            Case::NativeToFrrK8s,
            "native BGP speaker -> frr-k8s (case (1) -> (3)): no peer uses bfd_profile or receive_routes".to_string(),
        )
    }
}

fn values_names(peers: &[(String, &Value)]) -> String {
    peers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

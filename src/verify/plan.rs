//! The plan: the IPs each Service must keep, and the nodes MetalLB never announced from.

use super::*;

/// The plan: the IPs to keep and the nodes MetalLB excluded.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// `(namespace, name)` → observed IPs (empty: the Service had none; nothing to keep).
    pub services: BTreeMap<(String, String), BTreeSet<IpAddr>>,
    /// Nodes MetalLB's speaker never announced from.
    pub excluded_nodes: BTreeSet<String>,
}

impl Plan {
    /// Reads the plan file: an `ObservedState` item (or a mapping with its fields).
    pub fn parse(text: &str) -> Result<Plan, String> {
        let item = crate::krm::yaml::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
        if !item.is_mapping() {
            return Err("expected an ObservedState item (a mapping)".into());
        }
        match item.get("kind").and_then(Value::as_str) {
            None | Some(observed::KIND) => {}
            Some(kind) => {
                return Err(format!(
                    "expected an ObservedState item (cutover observe), got kind {kind:?}"
                ));
            }
        }
        let mut results = Vec::new();
        let observed = Observed::read(0, &item, &mut results);
        if let Some(e) = results.first() {
            let field = e.field.as_ref().map(|f| f.path.as_str()).unwrap_or("");
            return Err(format!("{field}: {}", e.message));
        }
        let mut services = BTreeMap::new();
        for ((ns, name), ips) in &observed.services {
            let ips = ips
                .iter()
                .map(|ip| {
                    ip.parse::<IpAddr>()
                        .map_err(|_| format!("services.{ns}/{name}: {ip:?} is no IP address"))
                })
                .collect::<Result<BTreeSet<_>, _>>()?;
            services.insert((ns.clone(), name.clone()), ips);
        }
        let excluded_nodes = observed
            .excluded_nodes()
            .into_iter()
            .map(str::to_owned)
            .collect();
        Ok(Plan {
            services,
            excluded_nodes,
        })
    }
}

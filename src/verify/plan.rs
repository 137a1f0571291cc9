//! The plan: the IPs each Service must keep and the nodes MetalLB never announced from (the
//! observed state), and optionally what the cluster must show after cutover (the expected end
//! state).

use super::*;
use crate::modes::announcer::expected::{self, ExpectedState};

/// The plan: the IPs to keep, the nodes MetalLB excluded, the expected end state.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// `(namespace, name)` → observed IPs (empty: the Service had none; nothing to keep).
    pub services: BTreeMap<(String, String), BTreeSet<IpAddr>>,
    /// Nodes MetalLB's speaker never announced from.
    pub excluded_nodes: BTreeSet<String>,
    /// The `ExpectedState` the orchestrated chain writes after the `ObservedState` (`None`: a
    /// plan that is only an observed state, as `cutover observe` writes it).
    pub expected: Option<ExpectedState>,
}

/// The YAML documents of `text` (separated by `---` lines), empty ones left out.
fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        let separator = line == "---" || line.starts_with("--- ") || line.starts_with("---\t");
        if separator {
            docs.push(String::new());
        } else if let Some(doc) = docs.last_mut() {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs.retain(|d| {
        d.lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    });
    docs
}

impl Plan {
    /// Reads the plan file: an `ObservedState` item (or a mapping with its fields), optionally
    /// followed by an `ExpectedState` item in a second document.
    pub fn parse(text: &str) -> Result<Plan, String> {
        let docs = documents(text);
        if docs.len() > 2 {
            return Err(format!(
                "expected an ObservedState item, then at most an {} item; got {} documents",
                expected::KIND,
                docs.len()
            ));
        }
        let mut observed_item = None;
        let mut expected = None;
        for doc in &docs {
            let item = crate::krm::yaml::from_str(doc).map_err(|e| format!("not YAML: {e}"))?;
            if !item.is_mapping() {
                return Err("expected an ObservedState item (a mapping)".into());
            }
            match item.get("kind").and_then(Value::as_str) {
                Some(expected::KIND) if expected.is_none() => {
                    expected = Some(ExpectedState::read(&item)?);
                }
                None | Some(observed::KIND) if observed_item.is_none() => {
                    observed_item = Some(item);
                }
                Some(kind) => {
                    return Err(format!(
                        "expected an ObservedState item (cutover observe), then at most an {}, got kind {kind:?}",
                        expected::KIND
                    ));
                }
                None => return Err("two ObservedState items".into()),
            }
        }
        let item = observed_item.ok_or("expected an ObservedState item (cutover observe)")?;
        let mut plan = Plan::observed(&item)?;
        plan.expected = expected;
        Ok(plan)
    }

    fn observed(item: &Value) -> Result<Plan, String> {
        let mut results = Vec::new();
        let observed = Observed::read(0, item, &mut results);
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
            expected: None,
        })
    }
}

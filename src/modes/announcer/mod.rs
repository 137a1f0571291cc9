//! Load-balancer announcer cutover mode (`LoadBalancerAnnouncer`).

mod config;

pub use config::*;

use serde_yaml::Value;

use crate::krm::{KrmResult, Outcome};

/// Runs the mode. (The mode logic lands with its own issue.)
pub fn run(
    _spec: &LoadBalancerAnnouncerSpec,
    _items: &[Value],
    _function_config: Option<&Value>,
) -> Outcome {
    let mut outcome = Outcome::default();
    outcome.push(KrmResult::error(
        "load-balancer-announcer is not implemented yet",
    ));
    outcome
}

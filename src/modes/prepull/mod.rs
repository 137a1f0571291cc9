//! MetalLB image prepull mode (`MetalLBImagePrepull`).

mod config;

pub use config::*;

use serde_yaml::Value;

use crate::krm::{KrmResult, Outcome};

/// Runs the mode. (The mode logic lands with its own issue.)
pub fn run(
    _spec: &MetalLBImagePrepullSpec,
    _items: &[Value],
    _function_config: Option<&Value>,
) -> Outcome {
    let mut outcome = Outcome::default();
    outcome.push(KrmResult::error(
        "metallb-image-prepull is not implemented yet",
    ));
    outcome
}

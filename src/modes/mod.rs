//! The modes, one folder each. A mode reads the items and returns an [`Outcome`]; it never
//! writes I/O and never mutates its input (the engine applies the edits).

pub mod announcer;
pub mod prepull;

use serde_yaml::Value;

use crate::config::FunctionConfig;
use crate::krm::Outcome;

/// Runs the mode selected by the configuration.
pub fn run(config: &FunctionConfig, items: &[Value], function_config: Option<&Value>) -> Outcome {
    match config {
        FunctionConfig::MetalLBImagePrepull(spec) => prepull::run(spec, items, function_config),
        FunctionConfig::LoadBalancerAnnouncer(spec) => announcer::run(spec, items, function_config),
    }
}

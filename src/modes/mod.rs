//! The modes, one folder each. A mode reads the items and returns an [`Outcome`]; it never
//! writes I/O and never mutates its input (the engine applies the edits).

pub mod announcer;
pub mod capm3;
#[cfg(test)]
mod check_docs;
pub mod flux;
pub mod install;
pub mod prepull;

use serde_yaml::Value;

use crate::config::{self, FunctionConfig};
use crate::krm::{KrmResult, Outcome, io};

/// What a run knows before it reads the items: the typed function config (or the error about
/// it) and the observer its mode reads the items with while they are parsed.
#[derive(Debug)]
pub struct Prepared {
    /// The parsed function config.
    pub config: Result<FunctionConfig, KrmResult>,
    /// Sees every item as it is parsed (see [`io::Observer`]).
    pub observer: Observer,
    /// Build every item whole, whatever the mode reads of it: the reference path the lean read
    /// is tested against ([`crate::function::process_whole`]).
    pub whole: bool,
}

/// A mode's [`io::Observer`].
#[derive(Debug)]
pub enum Observer {
    /// Keeps every item whole (capm3 reads few, small items; no mode when the config is bad).
    KeepAll,
    /// The announcer's inventory, built item by item; Service trees are released.
    Announcer(Box<announcer::Reader>),
    /// Keeps every item, built only as far as the prepull mode reads it
    /// ([`prepull::reads`]).
    Prepull {
        /// The name of the Kustomization the mode gates (read whole).
        gated: String,
    },
}

impl io::Observer for Observer {
    fn observe(&mut self, index: usize, item: &Value) -> bool {
        match self {
            Observer::KeepAll | Observer::Prepull { .. } => true,
            Observer::Announcer(reader) => reader.observe(index, item),
        }
    }

    fn reads(&mut self, head: &Value) -> io::Reads {
        match self {
            Observer::KeepAll => io::Reads::Everything,
            Observer::Announcer(_) => announcer::reads(head),
            Observer::Prepull { gated } => prepull::reads(head, gated),
        }
    }
}

impl io::Observer for Prepared {
    fn observe(&mut self, index: usize, item: &Value) -> bool {
        self.observer.observe(index, item)
    }

    fn reads(&mut self, head: &Value) -> io::Reads {
        if self.whole {
            return io::Reads::Everything;
        }
        self.observer.reads(head)
    }
}

/// Parses the function config and picks the mode's observer.
pub fn prepare(function_config: Option<&Value>) -> Prepared {
    let config = config::parse(function_config);
    let observer = match &config {
        // The orchestrated announcer runs every phase on the whole items: keep them.
        Ok(FunctionConfig::LoadBalancerAnnouncer(spec)) if spec.orchestrate.is_none() => {
            Observer::Announcer(Box::default())
        }
        Ok(FunctionConfig::MetalLBImagePrepull(spec)) => Observer::Prepull {
            gated: spec.kustomization.clone(),
        },
        _ => Observer::KeepAll,
    };
    Prepared {
        config,
        observer,
        whole: false,
    }
}

/// What a mode gives the function: its outcome, lines for stderr (findings an orchestrator
/// that does not show results would otherwise hide), and what it built that the function frees
/// after writing the output.
#[derive(Debug, Default)]
pub struct Ran {
    /// Edits and results.
    pub outcome: Outcome,
    /// Lines for stderr, without newlines.
    pub stderr: Vec<String>,
    /// Freed with the run's trees once the output is written ([`crate::krm::Garbage`]).
    pub garbage: crate::krm::Garbage,
}

impl From<Outcome> for Ran {
    fn from(outcome: Outcome) -> Self {
        Ran {
            outcome,
            ..Ran::default()
        }
    }
}

/// The `check` tag of the result that says nothing was changed, in every mode.
pub const OUTCOME_CHECK: &str = "outcome";

/// What a mode reports when its outcome has an error (the engine then applies nothing): the
/// infos that describe edits are dropped, errors and warnings kept, and one info says so.
pub(crate) fn nothing_changed(outcome: &mut Outcome) {
    outcome
        .results
        .retain(|r| r.severity != crate::krm::Severity::Info);
    outcome.results.push(
        KrmResult::info("nothing was changed: fix the errors above and run again")
            .tag("check", OUTCOME_CHECK),
    );
}

/// Runs the mode selected by the configuration on items that are all in memory.
pub fn run(config: &FunctionConfig, items: &[Value], function_config: Option<&Value>) -> Outcome {
    run_observed(config, items, function_config, Observer::KeepAll).outcome
}

/// Runs the mode selected by the configuration. `observer` has seen every item (the
/// [`Prepared`] one from the parse); items it released are empty mappings in `items`, items it
/// read in part hold what it reads of them.
pub fn run_observed(
    config: &FunctionConfig,
    items: &[Value],
    function_config: Option<&Value>,
    observer: Observer,
) -> Ran {
    match config {
        FunctionConfig::MetalLBImagePrepull(spec) => prepull::run(spec, items, function_config),
        FunctionConfig::Capm3OSImageSources(spec) => {
            capm3::run(spec, items, function_config).into()
        }
        FunctionConfig::LoadBalancerAnnouncer(spec) => {
            let read = match observer {
                Observer::Announcer(reader) => reader.finish(),
                Observer::KeepAll | Observer::Prepull { .. } => announcer::read(items),
            };
            announcer::run_read(spec, items, function_config, read)
        }
    }
}

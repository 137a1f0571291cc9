//! Reading YAML the way Kubernetes tools read it, in one pass of libyaml's parser.
//!
//! [`events`] wraps the parser (go-yaml, which kpt, kustomize and kubectl use, is a port of the
//! same scanner and parser, so its event boundaries are the ones those tools see); [`resolve`]
//! gives scalars their meaning; [`load`] builds `serde_yaml::Value`s from the events and records,
//! for the items of a ResourceList, what the engine needs to copy or patch an item's text
//! ([`layout`]).

pub mod events;
pub mod layout;
pub mod load;
mod merge;
pub mod node;
mod record;
pub mod resolve;
pub mod spelling;

pub use load::{LoadError, Loader, MAX_DEPTH, expansion_limit};

use serde_yaml::Value;

use node::Kind;

/// Reads one YAML document (a Helm values file, an embedded manifest) with the same rules as the
/// ResourceList: serde_yaml's scalar meanings, core-schema tags, merge keys applied, aliases and
/// depth bounded, a byte order mark skipped. Empty text is null; a second document is an error.
pub fn from_str(text: &str) -> Result<Value, LoadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut loader = Loader::new(text, expansion_limit(text.len()));
    loader.next_node()?;
    let start = loader.next_node()?;
    if let Kind::StreamEnd = start.kind {
        return Ok(Value::Null);
    }
    let root = loader.next_node()?;
    let value = loader.value(root, 0)?;
    loader.next_node()?;
    match loader.next_node()? {
        node if matches!(node.kind, Kind::StreamEnd) => Ok(value),
        node => Err(LoadError::more_than_one_document(node.start)),
    }
}

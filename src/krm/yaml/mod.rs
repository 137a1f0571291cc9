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

pub use load::{LoadError, Loader, MAX_DEPTH, expansion_limit};

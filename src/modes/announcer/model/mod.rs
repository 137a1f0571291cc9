//! The transition model: a small deterministic model of the controllers that decide a
//! LoadBalancer Service's IP and who answers ARP for it, and an explorer of the orders in which
//! one Flux apply and the controllers' reactions can interleave.
//!
//! - [`state`]: the cluster as the controllers see it; [`read`] builds it from KRM items.
//! - [`lbipam`], [`metallb`], [`l2announcer`]: one module per controller, each rule citing the
//!   upstream file and ref it was read at.
//! - [`invariants`]: the safety properties checked in every intermediate state.
//! - [`mod@explore`]: a transition's atomic changes and the search over their interleavings.
//!
//! Use: `explore(&Transition::new(live, previous_package, next_package, options))` returns a
//! [`Report`] whose `violations` name the invariant, the Service and IP, and the shortest
//! event sequence found.

pub mod explore;
pub mod invariants;
pub mod l2announcer;
pub mod lbipam;
pub mod metallb;
pub mod read;
pub mod state;

/// The Cilium release number the model is run for.
pub use super::version::CiliumVersion;
pub use explore::{Event, Options, Report, Transition, Visited, explore, explore_visiting};
pub use invariants::{Finding, Invariant, Violation};
pub use read::{Snapshot, snapshot};

#[cfg(test)]
mod testkit;

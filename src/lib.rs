//! cutover: a KRM function for outage-free load-balancer cutovers on Kubernetes.
//!
//! - [`krm`]: the engine (ResourceList I/O, results, item identity, edits).
//! - [`config`]: the function configuration kinds, their validation and JSON schemas.
//! - [`modes`]: one folder per mode; each turns items into an [`krm::Outcome`].
//! - [`function`]: ties them together; the binaries only move bytes in and out.
//! - [`verify`]: `cutover verify`, the gates of the MetalLB → Cilium L2 cutover on live objects.

pub mod config;
pub mod function;
pub mod krm;
pub mod modes;
pub mod verify;

pub use function::{Output, process};

#[cfg(test)]
mod test_rng;

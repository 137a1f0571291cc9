//! The KRM engine: reading and writing `ResourceList`s, results, item identity and annotations.
//!
//! Nothing in here knows about a mode. Modes receive the input items read-only and return an
//! [`Outcome`] (edits plus results); the engine applies the edits only when no error result was
//! produced, so a failing run always writes its items out exactly as they came in.

pub mod annotations;
pub mod apply;
pub mod emit;
pub mod io;
pub mod object;
pub mod outcome;
pub mod result;
pub mod splice;

pub use io::{InputError, ResourceList};
pub use object::{KrmObject, ObjectRef};
pub use outcome::{Edit, Outcome, PatchOp};
pub use result::{FieldRef, FileRef, KrmResult, ResourceRef, Severity};

//! Shortening a random walk's event sequence, in proptest's order: drop events from the back
//! first, keep a shorter sequence whenever it still reaches the same violation. Only
//! sequences whose every event is enabled where it is replayed count.

use super::super::invariants::Finding;
use super::{Event, Transition, World};

/// Replays at most this many candidate sequences per violation.
const BUDGET: usize = 200;

/// Replays `trace` from `start`; the length of the prefix after which `same` holds and the
/// finding there, or `None` when an event is not enabled where it comes or the violation
/// never shows.
fn reaches(
    t: &Transition,
    start: &World,
    trace: &[Event],
    check: &dyn Fn(&World) -> Vec<Finding>,
    same: &dyn Fn(&Finding) -> bool,
) -> Option<(usize, Finding)> {
    let mut w = start.clone();
    for (i, e) in trace.iter().enumerate() {
        if !t.enabled(&w).contains(e) {
            return None;
        }
        w = t.step(&w, e);
        if let Some(f) = check(&w).into_iter().find(|f| same(f)) {
            return Some((i + 1, f));
        }
    }
    None
}

/// The shortest sequence found by dropping single events, within [`BUDGET`] replays, and the
/// finding it ends in.
pub(super) fn shrink(
    t: &Transition,
    start: &World,
    found: (Finding, Vec<Event>),
    check: &dyn Fn(&World) -> Vec<Finding>,
    same: &dyn Fn(&Finding) -> bool,
) -> (Finding, Vec<Event>) {
    let (mut finding, mut best) = found;
    let mut budget = BUDGET;
    let mut i = best.len();
    while i > 0 && budget > 0 {
        i -= 1;
        let mut candidate = best.clone();
        candidate.remove(i);
        budget -= 1;
        if let Some((n, f)) = reaches(t, start, &candidate, check, same) {
            candidate.truncate(n);
            (finding, best) = (f, candidate);
            i = best.len();
        }
    }
    (finding, best)
}

//! A mapping's entries gathered before the mapping is built, so that it is built at its final
//! size. A `Mapping` grown one insert at a time reallocates its entries and rehashes its table at
//! 3, 7, 14, 28 … entries, leaves the old blocks behind and keeps up to half of its room unused;
//! most mappings of a ResourceList are small (metadata, labels, ports, a unit's settings). Built
//! at their size, they take fewer pages: 125 fewer page faults of about 1 000 on the `sylva`
//! preset, and 6 MiB less peak memory on `platform-10k` (docs/benchmarks.md).
//!
//! The entries of the mappings being read wait on one stack (the loader's `pending`): a mapping
//! pushes its entries above those of the mappings that enclose it and takes them off when it
//! ends, so nested mappings never see each other's. A duplicate key is refused as soon as it is
//! read, as before: among at most [`SMALL_MAP`] entries by comparing keys (`Value`'s equality,
//! the one a `Mapping` looks keys up by), past that by moving the entries into a `Mapping` and
//! inserting the rest there. A mapping whose read fails leaves its entries on the stack: the
//! loader is not read from after an error.

use serde_yaml::{Mapping, Value};

use super::{Loader, shown_key};
use crate::krm::yaml::events::Mark;
use crate::krm::yaml::node::LoadError;

/// The most entries compared one by one; a larger mapping is built as it is read.
pub(super) const SMALL_MAP: usize = 16;

/// Where a mapping being read keeps its entries.
pub(super) enum Entries {
    /// On the loader's stack, from this index up.
    Pending(usize),
    /// In the mapping itself.
    Built(Mapping),
}

impl Loader<'_> {
    /// Entries for a mapping that starts now, kept on the stack.
    pub(super) fn pending_entries(&self) -> Entries {
        Entries::Pending(self.pending.len())
    }

    /// Adds an entry whose key was read at `at`, refusing a key the mapping already has.
    pub(super) fn add_entry(
        &mut self,
        entries: &mut Entries,
        key: Value,
        value: Value,
        at: Mark,
    ) -> Result<(), LoadError> {
        match entries {
            Entries::Pending(base) => {
                if let Some((earlier, _)) = self.pending[*base..].iter().find(|(k, _)| *k == key) {
                    return Err(duplicate(earlier, at));
                }
                self.pending.push((key, value));
                if self.pending.len() - *base > SMALL_MAP {
                    // Room for as many again, as a growing `Mapping` would have.
                    *entries = Entries::Built(self.take_pending(*base, 2 * SMALL_MAP));
                }
                Ok(())
            }
            Entries::Built(map) => match map.entry(key) {
                serde_yaml::mapping::Entry::Occupied(e) => Err(duplicate(e.key(), at)),
                serde_yaml::mapping::Entry::Vacant(e) => {
                    e.insert(value);
                    Ok(())
                }
            },
        }
    }

    /// The mapping itself, for a mapping the reader looks into while it is read (a lean item's,
    /// the root's). Those are built as read from the start; entries still on the stack would be
    /// moved into the mapping first.
    pub(super) fn built<'e>(&mut self, entries: &'e mut Entries) -> &'e mut Mapping {
        if let Entries::Pending(base) = *entries {
            let size = self.pending.len() - base;
            *entries = Entries::Built(self.take_pending(base, size));
        }
        match entries {
            Entries::Built(map) => map,
            Entries::Pending(_) => unreachable!("entries were just moved into the mapping"),
        }
    }

    /// The mapping of these entries, at its size; the stack holds them on top.
    pub(super) fn finish_entries(&mut self, entries: Entries) -> Mapping {
        match entries {
            Entries::Pending(base) => {
                let size = self.pending.len() - base;
                self.take_pending(base, size)
            }
            Entries::Built(map) => map,
        }
    }

    /// Moves the entries from `base` up off the stack into a mapping with room for `capacity`.
    fn take_pending(&mut self, base: usize, capacity: usize) -> Mapping {
        let mut map = Mapping::with_capacity(capacity);
        map.extend(self.pending.drain(base..));
        map
    }
}

fn duplicate(key: &Value, at: Mark) -> LoadError {
    LoadError::content(format!("duplicate entry with key {}", shown_key(key)), at)
}

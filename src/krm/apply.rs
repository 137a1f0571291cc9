//! Applying a mode's edits to the items, and the invariants kpt enforces on the output.

use std::collections::{HashMap, HashSet};

use serde_yaml::Value;

use super::io::ReleasedItems;
use super::object::{KrmObject, set_file};
use super::outcome::{Edit, PatchOp};
use super::result::{FileRef, KrmResult};

/// What happens to one input item.
enum Change {
    Replace(Value),
    Patch(Vec<PatchOp>),
    Remove,
}

/// Applies `edits` to `items`. Replaced items take the place of the original; patched ones are
/// changed in place; removed ones are
/// dropped; added ones are appended in order, with a default file (`<kind>_<name>.yaml`, as kpt
/// names them) when the mode gave none. Everything is checked before `items` is touched, so on an
/// error (an internal bug: conflicting edits, two output items in one file slot) the caller still
/// has the input items to echo unchanged.
///
/// Returns, for every output item, the index of the input item it is when it is unchanged
/// (`None` for replaced, patched and added items), so the writer can copy unchanged items verbatim.
pub fn apply(items: &mut Vec<Value>, edits: Vec<Edit>) -> Result<Vec<Option<usize>>, KrmResult> {
    apply_into(
        items,
        edits,
        &ReleasedItems::default(),
        &mut Vec::new(),
        &mut Vec::new(),
    )
}

/// [`apply`], moving the replaced and removed input items into `dropped` instead of freeing them,
/// so the caller decides when to pay for freeing (for 10k rewritten Services, freeing the old
/// trees takes longer than applying the edits). `released` are the items whose trees the parse
/// let go (empty mappings in `items`): edits must not patch them (the caller restores or
/// text-patches those first), and the file check takes their files from there. `from` gets, for
/// every output item, the index of the input item it is or replaces (`None` for added items):
/// the writer spells its unchanged scalars as that item did.
pub fn apply_into(
    items: &mut Vec<Value>,
    edits: Vec<Edit>,
    released: &ReleasedItems,
    dropped: &mut Vec<Value>,
    from: &mut Vec<Option<usize>>,
) -> Result<Vec<Option<usize>>, KrmResult> {
    let count = items.len();
    let (mut changes, added) = changes_by_item(items, edits, released)?;
    check_output_files(items, &changes, &added, released)?;
    let mut origins: Vec<Option<usize>> = Vec::with_capacity(count + added.len());
    from.clear();
    if changes.is_empty() {
        origins.extend((0..count).map(Some));
        from.extend((0..count).map(Some));
    } else {
        let old = std::mem::take(items);
        items.reserve(count + added.len());
        for (index, item) in old.into_iter().enumerate() {
            let (item, origin) = match changes.remove(&index) {
                None => (Some(item), Some(index)),
                Some(Change::Replace(replacement)) => {
                    dropped.push(item);
                    (Some(replacement), None)
                }
                Some(Change::Patch(ops)) => {
                    let mut item = item;
                    for op in &ops {
                        op.apply_to(&mut item);
                    }
                    (Some(item), None)
                }
                Some(Change::Remove) => {
                    dropped.push(item);
                    (None, None)
                }
            };
            if let Some(item) = item {
                items.push(item);
                origins.push(origin);
                from.push(Some(index));
            }
        }
    }
    origins.extend(added.iter().map(|_| None));
    from.extend(added.iter().map(|_| None));
    items.extend(added);
    Ok(origins)
}

/// The edits by input item, and the added items (with kpt's default file where the mode gave
/// none); an error for an edit of an item that is not there, a patch that cannot apply, or an
/// item edited twice.
fn changes_by_item(
    items: &[Value],
    edits: Vec<Edit>,
    released: &ReleasedItems,
) -> Result<(HashMap<usize, Change>, Vec<Value>), KrmResult> {
    let count = items.len();
    let mut changes: HashMap<usize, Change> = HashMap::new();
    let mut added = Vec::new();
    for edit in edits {
        let (index, change) = match edit {
            Edit::Add { mut item } => {
                if item.file_ref().is_none() {
                    let path = format!(
                        "{}_{}.yaml",
                        item.kind().to_lowercase(),
                        item.name().replace('/', "_")
                    );
                    set_file(&mut item, &path, 0);
                }
                added.push(item);
                continue;
            }
            Edit::Replace { index, item } => (index, Change::Replace(item)),
            Edit::Patch { index, ops } => (index, Change::Patch(ops)),
            Edit::Remove { index } => (index, Change::Remove),
        };
        if index >= count {
            return Err(KrmResult::error(format!(
                "internal error: edit of item {index} but only {count} items"
            )));
        }
        if let Change::Patch(ops) = &change
            && (!items[index].is_mapping()
                || released.get(index).is_some()
                || ops.iter().any(|op| op.path().is_empty()))
        {
            return Err(KrmResult::error(format!(
                "internal error: patch of item {index} with an empty path or on a non-mapping"
            )));
        }
        if changes.insert(index, change).is_some() {
            return Err(KrmResult::error(format!(
                "internal error: item {index} edited twice"
            )));
        }
    }
    Ok((changes, added))
}

/// Checks that no two output items share a file slot, before anything is changed.
fn check_output_files(
    items: &[Value],
    changes: &HashMap<usize, Change>,
    added: &[Value],
    released: &ReleasedItems,
) -> Result<(), KrmResult> {
    // A patch that may change the file annotations is tried on a copy for the check (rare: the
    // ones modes send touch other keys, and copying is what patches are there to avoid).
    let tried: HashMap<usize, Value> = changes
        .iter()
        .filter_map(|(&i, change)| match change {
            Change::Patch(ops) if ops.iter().any(may_move_file) => {
                let mut copy = items[i].clone();
                for op in ops {
                    op.apply_to(&mut copy);
                }
                Some((i, copy))
            }
            _ => None,
        })
        .collect();
    let output_view = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match changes.get(&i) {
            None => Some(match released.get(i) {
                Some(r) => Seen::Released(r.file()),
                None => Seen::Item(item),
            }),
            Some(Change::Replace(new)) => Some(Seen::Item(new)),
            Some(Change::Patch(_)) => Some(Seen::Item(tried.get(&i).unwrap_or(item))),
            Some(Change::Remove) => None,
        })
        .chain(added.iter().map(Seen::Item));
    check_unique_files(output_view)
}

/// Whether `op` may change where the item is written: its path is, or leads to, one of the file
/// annotations.
pub fn may_move_file(op: &PatchOp) -> bool {
    use super::annotations::{INDEX, INTERNAL_INDEX, INTERNAL_PATH, PATH};
    let file_keys = [PATH, INDEX, INTERNAL_PATH, INTERNAL_INDEX];
    match op.path() {
        [] => false,
        [m] => m == "metadata",
        [m, a] => m == "metadata" && a == "annotations",
        [m, a, k] => m == "metadata" && a == "annotations" && file_keys.contains(&&**k),
        _ => false,
    }
}

/// An output item as the file check sees it.
enum Seen<'a> {
    Item(&'a Value),
    /// A released item: its file, read at parse time (text patches never move files).
    Released(Option<FileRef>),
}

/// kpt rejects output where two items share a path and index; catch it here with a clear message.
fn check_unique_files<'a>(items: impl Iterator<Item = Seen<'a>>) -> Result<(), KrmResult> {
    let mut seen = HashSet::new();
    for item in items {
        let file = match &item {
            Seen::Item(v) => v.file_ref(),
            Seen::Released(file) => file.clone(),
        };
        if let Some(file) = file
            && !seen.insert((file.path.clone(), file.index))
        {
            let error = KrmResult::error(format!(
                "two output items would be written to {} index {}",
                file.path, file.index
            ));
            return Err(match item {
                Seen::Item(v) => error.about(v),
                Seen::Released(_) => error,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(src: &str) -> Value {
        serde_yaml::from_str(src).unwrap()
    }

    #[test]
    fn replaces_removes_and_appends_in_order() {
        let mut out = vec![v("name: a"), v("name: b"), v("name: c")];
        let origins = apply(
            &mut out,
            vec![
                Edit::Add {
                    item: v("kind: New\nmetadata: {name: n}"),
                },
                Edit::Remove { index: 1 },
                Edit::Replace {
                    index: 2,
                    item: v("name: c2"),
                },
            ],
        )
        .unwrap();
        assert_eq!(origins, vec![Some(0), None, None]);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], v("name: a"));
        assert_eq!(out[1], v("name: c2"));
        assert_eq!(out[2].file_ref().unwrap().path, "new_n.yaml");
    }

    #[test]
    fn patches_change_in_place_and_keep_key_order() {
        let mut out = vec![v(
            "kind: S\nmetadata:\n  name: a\n  labels: ~\n  annotations: {x: 1, metallb.io/p: q, y: 2}\nspec: {a: 1}\n",
        )];
        let origins = apply(
            &mut out,
            vec![Edit::Patch {
                index: 0,
                ops: vec![
                    PatchOp::set_label("pool", "p1"),
                    PatchOp::set_annotation("x", "3"),
                    PatchOp::set_annotation("z", "4"),
                    PatchOp::remove_annotation("metallb.io/p"),
                    PatchOp::Remove {
                        path: vec!["nope".into(), "deeper".into()],
                    },
                ],
            }],
        )
        .unwrap();
        assert_eq!(origins, vec![None]);
        assert_eq!(
            serde_yaml::to_string(&out[0]).unwrap(),
            "kind: S\nmetadata:\n  name: a\n  labels:\n    pool: p1\n  annotations:\n    x: '3'\n    y: 2\n    z: '4'\nspec:\n  a: 1\n"
        );
    }

    #[test]
    fn bad_patches_and_patches_moving_files_are_checked_first() {
        let a =
            "kind: A\nmetadata:\n  name: a\n  annotations: {config.kubernetes.io/path: x.yaml}\n";
        let b =
            "kind: B\nmetadata:\n  name: b\n  annotations: {config.kubernetes.io/path: y.yaml}\n";
        let mut items = vec![v(a), v(b)];
        let to_x = PatchOp::set_annotation("config.kubernetes.io/path", "x.yaml");
        let err = apply(
            &mut items,
            vec![Edit::Patch {
                index: 1,
                ops: vec![to_x],
            }],
        )
        .unwrap_err();
        assert!(err.message.contains("x.yaml index 0"), "{}", err.message);
        let err = apply(
            &mut items,
            vec![Edit::Patch {
                index: 0,
                ops: vec![PatchOp::Remove { path: Vec::new() }],
            }],
        )
        .unwrap_err();
        assert!(err.message.contains("empty path"), "{}", err.message);
        assert_eq!(items, vec![v(a), v(b)]);
    }

    #[test]
    fn conflicting_edits_are_errors() {
        let mut items = vec![v("a: 1")];
        let err = apply(
            &mut items,
            vec![Edit::Remove { index: 0 }, Edit::Remove { index: 0 }],
        );
        assert!(err.unwrap_err().message.contains("edited twice"));
        assert_eq!(items, vec![v("a: 1")]);
        let err = apply(&mut Vec::new(), vec![Edit::Remove { index: 3 }]);
        assert!(err.unwrap_err().message.contains("only 0 items"));
    }

    #[test]
    fn two_items_in_one_file_slot_are_an_error() {
        let a =
            "kind: A\nmetadata:\n  name: a\n  annotations: {config.kubernetes.io/path: x.yaml}\n";
        let mut items = vec![v(a)];
        let err = apply(&mut items, vec![Edit::Add { item: v(a) }]).unwrap_err();
        assert!(err.message.contains("x.yaml index 0"), "{}", err.message);
        assert_eq!(items, vec![v(a)]);
    }
}

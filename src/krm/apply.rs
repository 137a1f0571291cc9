//! Applying a mode's edits to the items, and the invariants kpt enforces on the output.

use std::collections::{HashMap, HashSet};

use serde_yaml::Value;

use super::object::{KrmObject, set_file};
use super::outcome::Edit;
use super::result::KrmResult;

/// Applies `edits` to `items`. Replaced items take the place of the original; removed ones are
/// dropped; added ones are appended in order, with a default file (`<kind>_<name>.yaml`, as kpt
/// names them) when the mode gave none. Everything is checked before `items` is touched, so on an
/// error (an internal bug: conflicting edits, two output items in one file slot) the caller still
/// has the input items to echo unchanged.
///
/// Returns, for every output item, the index of the input item it is when it is unchanged
/// (`None` for replaced and added items), so the writer can copy unchanged items verbatim.
pub fn apply(items: &mut Vec<Value>, edits: Vec<Edit>) -> Result<Vec<Option<usize>>, KrmResult> {
    apply_into(items, edits, &mut Vec::new())
}

/// [`apply`], moving the replaced and removed input items into `dropped` instead of freeing them,
/// so the caller decides when to pay for freeing (for 10k rewritten Services, freeing the old
/// trees takes longer than applying the edits).
pub fn apply_into(
    items: &mut Vec<Value>,
    edits: Vec<Edit>,
    dropped: &mut Vec<Value>,
) -> Result<Vec<Option<usize>>, KrmResult> {
    let count = items.len();
    let mut changes: HashMap<usize, Option<Value>> = HashMap::new();
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
            Edit::Replace { index, item } => (index, Some(item)),
            Edit::Remove { index } => (index, None),
        };
        if index >= count {
            return Err(KrmResult::error(format!(
                "internal error: edit of item {index} but only {count} items"
            )));
        }
        if changes.insert(index, change).is_some() {
            return Err(KrmResult::error(format!(
                "internal error: item {index} edited twice"
            )));
        }
    }
    let output_view = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match changes.get(&i) {
            None => Some(item),
            Some(change) => change.as_ref(),
        })
        .chain(added.iter());
    check_unique_files(output_view)?;
    let mut origins: Vec<Option<usize>> = Vec::with_capacity(count + added.len());
    if changes.is_empty() {
        origins.extend((0..count).map(Some));
    } else {
        let old = std::mem::take(items);
        items.reserve(count + added.len());
        for (index, item) in old.into_iter().enumerate() {
            match changes.remove(&index) {
                None => {
                    items.push(item);
                    origins.push(Some(index));
                }
                Some(Some(replacement)) => {
                    items.push(replacement);
                    origins.push(None);
                    dropped.push(item);
                }
                Some(None) => dropped.push(item),
            }
        }
    }
    origins.extend(added.iter().map(|_| None));
    items.extend(added);
    Ok(origins)
}

/// kpt rejects output where two items share a path and index; catch it here with a clear message.
fn check_unique_files<'a>(items: impl Iterator<Item = &'a Value>) -> Result<(), KrmResult> {
    let mut seen = HashSet::new();
    for item in items {
        if let Some(file) = item.file_ref()
            && !seen.insert((file.path.clone(), file.index))
        {
            return Err(KrmResult::error(format!(
                "two output items would be written to {} index {}",
                file.path, file.index
            ))
            .about(item));
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

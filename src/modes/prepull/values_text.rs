//! Writing an edited values tree back into the YAML text it came from (a ConfigMap data key, a
//! Secret's decoded data), keeping the operator's comments and layout.
//!
//! Only the entries the mode changed are touched: each is inserted, replaced or deleted as a
//! block of lines in the block-style mapping that holds it. The result is accepted only when it
//! parses to exactly the edited tree; anything else (flow style, anchors, odd indentation) falls
//! back to emitting the whole tree with the project's emitter. So the text edit is proven safe on
//! every run rather than assumed.

use serde_yaml::{Mapping, Value};

use crate::krm::emit::emit_document;

/// `new_root` as text: `old_text` with the entries at `paths` brought in line with `new_root`,
/// or, when that cannot be proven right, the whole tree emitted afresh. The flag says which.
pub fn write(old_text: &str, new_root: &Mapping, paths: &[&[&str]]) -> (String, bool) {
    if let Some(text) = patch(old_text, new_root, paths) {
        let parsed: Option<Value> = crate::krm::yaml::from_str(&text).ok();
        if parsed.as_ref().and_then(Value::as_mapping) == Some(new_root) {
            return (text, true);
        }
    }
    let mut text = String::new();
    emit_document(&mut text, &Value::Mapping(new_root.clone()));
    (text, false)
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The line opening `key:` at exactly `indent` in `lines[start..end]`, and whether its value
/// continues on the next lines (nothing but a comment after the colon).
fn find_key(
    lines: &[String],
    start: usize,
    end: usize,
    indent: usize,
    key: &str,
) -> Option<(usize, bool)> {
    (start..end).find_map(|i| {
        let line = &lines[i];
        if indent_of(line) != indent || !is_content(line) {
            return None;
        }
        let rest = line[indent..].strip_prefix(key)?.strip_prefix(':')?;
        let rest = rest.trim_end_matches(['\n', '\r']);
        if !(rest.is_empty() || rest.starts_with(' ')) {
            return None;
        }
        let opens_block = rest.trim().is_empty() || rest.trim_start().starts_with('#');
        Some((i, opens_block))
    })
}

/// End (exclusive) of the lines belonging to the entry opened at `line`, without the blank and
/// comment lines that trail it (they belong to what follows).
fn entry_end(lines: &[String], line: usize, indent: usize, limit: usize) -> usize {
    let mut end = line + 1;
    while end < limit && !(is_content(&lines[end]) && indent_of(&lines[end]) <= indent) {
        end += 1;
    }
    while end > line + 1 && !is_content(&lines[end - 1]) {
        end -= 1;
    }
    end
}

/// A block mapping in the text: its lines `start..end` and the indentation of its keys.
#[derive(Clone, Copy)]
struct Block {
    start: usize,
    end: usize,
    indent: usize,
}

/// The block of the mapping value of the entry at `line` (which opens a block).
fn child_block(lines: &[String], line: usize, indent: usize, limit: usize) -> Option<Block> {
    let end = entry_end(lines, line, indent, limit);
    let first = (line + 1..end).find(|&i| is_content(&lines[i]))?;
    let child = indent_of(&lines[first]);
    (child > indent && !lines[first][child..].starts_with("- ")).then_some(Block {
        start: line + 1,
        end,
        indent: child,
    })
}

/// Lines of `key: value` emitted at `indent`.
fn emitted(key: &str, value: &Value, indent: usize) -> Vec<String> {
    let mut text = String::new();
    let entry = Mapping::from_iter([(Value::from(key), value.clone())]);
    emit_document(&mut text, &Value::Mapping(entry));
    text.split_inclusive('\n')
        .map(|l| format!("{}{l}", " ".repeat(indent)))
        .collect()
}

fn lookup<'a>(root: &'a Mapping, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(root.get(*first)?, |v, k| v.as_mapping()?.get(*k))
}

fn patch(old_text: &str, new_root: &Mapping, paths: &[&[&str]]) -> Option<String> {
    let mut lines: Vec<String> = old_text.split_inclusive('\n').map(str::to_owned).collect();
    if lines.last().is_some_and(|l| !l.ends_with('\n')) {
        lines.last_mut()?.push('\n');
    }
    for path in paths {
        // Walk down as far as the text has the path.
        let mut block = Block {
            start: 0,
            end: lines.len(),
            indent: 0,
        };
        let mut depth = 0;
        let mut found: Option<(usize, bool)> = None;
        while depth < path.len() {
            let Some((line, opens)) =
                find_key(&lines, block.start, block.end, block.indent, path[depth])
            else {
                break;
            };
            found = Some((line, opens));
            depth += 1;
            if depth == path.len() {
                break;
            }
            block = match opens.then(|| child_block(&lines, line, block.indent, block.end)) {
                Some(Some(b)) => b,
                // A scalar, flow or empty value on the way: leave it to the emitter.
                _ => return None,
            };
            found = None;
        }
        let wanted = lookup(new_root, path);
        match (found, wanted) {
            // Present in both: replace the entry in place.
            (Some((line, _)), Some(value)) => {
                let end = entry_end(&lines, line, block.indent, block.end);
                let new = emitted(path[depth - 1], value, block.indent);
                lines.splice(line..end, new);
            }
            // Missing in the text: insert the first missing key (with everything below it) at
            // the end of the deepest block that exists.
            (None, Some(_)) => {
                let key = path[depth];
                let value = lookup(new_root, &path[..=depth])?;
                let at = if depth == 0 { lines.len() } else { block.end };
                let new = emitted(key, value, block.indent);
                lines.splice(at..at, new);
            }
            // Gone from the tree: delete the shortest prefix the tree no longer has.
            (_, None) => {
                let Some(gone) = (1..=path.len()).find(|&n| lookup(new_root, &path[..n]).is_none())
                else {
                    continue;
                };
                if gone > depth {
                    continue; // not in the text either
                }
                let mut b = Block {
                    start: 0,
                    end: lines.len(),
                    indent: 0,
                };
                let mut at = 0;
                for (i, key) in path[..gone].iter().enumerate() {
                    let (line, opens) = find_key(&lines, b.start, b.end, b.indent, key)?;
                    at = line;
                    if i + 1 < gone {
                        b = child_block(&lines, line, b.indent, b.end).filter(|_| opens)?;
                    }
                }
                let end = entry_end(&lines, at, b.indent, b.end);
                lines.drain(at..end);
            }
        }
    }
    Some(lines.concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# platform values\ncluster:\n  name: mgmt   # do not change\nunits:\n  # monitoring stays on\n  monitoring:\n    enabled: true\n\n# BGP\nmetallb:\n  bgp_lbs: {}\n";

    fn tree(text: &str) -> Mapping {
        serde_yaml::from_str(text).unwrap()
    }

    #[test]
    fn inserts_and_removes_keeping_comments() {
        let old = tree(DOC);
        let mut new = old.clone();
        let unit: Value =
            serde_yaml::from_str("{enabled: true, unit_templates: [base-deps]}").unwrap();
        new["units"]
            .as_mapping_mut()
            .unwrap()
            .insert("x".into(), unit);
        new["units"].as_mapping_mut().unwrap().insert(
            "metallb".into(),
            serde_yaml::from_str("{depends_on: {x: true}}").unwrap(),
        );
        let paths: [&[&str]; 2] = [&["units", "x"], &["units", "metallb", "depends_on", "x"]];
        let (text, kept) = write(DOC, &new, &paths);
        assert!(kept, "{text}");
        assert!(
            text.contains("# do not change") && text.contains("# BGP\n"),
            "{text}"
        );
        assert_eq!(tree(&text), new);
        // Removal restores the document byte for byte.
        let (back, kept) = write(&text, &old, &paths);
        assert!(kept);
        assert_eq!(back, DOC);
    }

    #[test]
    fn a_dependency_value_is_replaced_in_place() {
        // An earlier unconditional dependency becomes the conditional template.
        let doc = "units:\n  metallb:\n    # waits for the pre-pull\n    depends_on:\n      x: true  # old\n      y: true\n";
        let mut new = tree(doc);
        new["units"]["metallb"]["depends_on"]["x"] =
            "{{ tuple . \"x\" | include \"unit-enabled\" }}".into();
        let (text, kept) = write(doc, &new, &[&["units", "metallb", "depends_on", "x"]]);
        assert!(kept, "{text}");
        assert!(text.contains("# waits for the pre-pull\n"), "{text}");
        assert!(text.contains("      y: true\n"), "{text}");
        assert_eq!(tree(&text), new);
    }

    #[test]
    fn what_it_cannot_prove_is_emitted_afresh() {
        let doc = "units: {monitoring: {enabled: true}}  # flow\n";
        let mut new = tree(doc);
        new["units"]
            .as_mapping_mut()
            .unwrap()
            .insert("x".into(), true.into());
        let (text, kept) = write(doc, &new, &[&["units", "x"]]);
        assert!(!kept);
        assert_eq!(tree(&text), new);
    }

    #[test]
    fn a_document_without_the_parent_gets_it_appended() {
        let doc = "a: 1 # one\n";
        let mut new = tree(doc);
        new.insert("units".into(), serde_yaml::from_str("{x: {z: 1}}").unwrap());
        let (text, kept) = write(doc, &new, &[&["units", "x"]]);
        assert!(kept);
        assert_eq!(text, "a: 1 # one\nunits:\n  x:\n    z: 1\n");
    }
}

//! Minimising failing cases: a document (items, then mapping entries, then style choices) for
//! the style suite, bytes (lines, then bytes) for the mutation fuzzer.

use std::collections::HashSet;

use serde_yaml::Value;

use super::check::Finding;

/// Minimises a failing case: drops items, then mapping entries, then undoes style choices one
/// at a time, keeping each step while the same kind of failure remains.
pub fn document(
    doc: &Value,
    finding: Finding,
    still: &mut dyn FnMut(&Value, &HashSet<usize>) -> Option<Finding>,
    choices: &dyn Fn(&Value, &HashSet<usize>) -> Vec<usize>,
) -> (Value, HashSet<usize>, Finding) {
    const BUDGET: usize = 4_000;
    let mut attempts = 0;
    let mut best = (doc.clone(), HashSet::new(), finding);
    let mut still = |doc: &Value, forced: &HashSet<usize>, attempts: &mut usize| {
        *attempts += 1;
        still(doc, forced)
    };
    // Items, from the last.
    let n = best.0["items"].as_sequence().map_or(0, Vec::len);
    for i in (0..n).rev() {
        if attempts >= BUDGET {
            break;
        }
        let mut doc = best.0.clone();
        doc["items"].as_sequence_mut().unwrap().remove(i);
        if let Some(f) = still(&doc, &best.1, &mut attempts) {
            best = (doc, best.1, f);
        }
    }
    // Mapping entries inside the items, outermost first.
    let mut path_index = 0;
    loop {
        if attempts >= BUDGET {
            break;
        }
        let paths = entry_paths(&best.0["items"]);
        let Some(path) = paths.get(path_index) else {
            break;
        };
        let mut doc = best.0.clone();
        remove_path(&mut doc["items"], path);
        match still(&doc, &best.1, &mut attempts) {
            Some(f) => best = (doc, best.1, f),
            None => path_index += 1,
        }
    }
    // Style choices.
    loop {
        let mut progressed = false;
        for id in choices(&best.0, &best.1) {
            if attempts >= BUDGET {
                break;
            }
            let mut forced = best.1.clone();
            forced.insert(id);
            if let Some(f) = still(&best.0, &forced, &mut attempts) {
                best = (best.0, forced, f);
                progressed = true;
                break;
            }
        }
        if !progressed || attempts >= BUDGET {
            break;
        }
    }
    best
}

/// Paths (sequence indices and mapping keys) of every mapping entry under `v`, outermost first.
pub fn entry_paths(v: &Value) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    let mut queue = vec![(Vec::new(), v)];
    while !queue.is_empty() {
        let mut next = Vec::new();
        for (path, node) in queue {
            match node {
                Value::Mapping(m) => {
                    for (k, x) in m {
                        let mut p = path.clone();
                        p.push(k.clone());
                        out.push(p.clone());
                        next.push((p, x));
                    }
                }
                Value::Sequence(s) => {
                    for (i, x) in s.iter().enumerate() {
                        let mut p = path.clone();
                        p.push(Value::from(i as u64));
                        next.push((p, x));
                    }
                }
                _ => {}
            }
        }
        queue = next;
    }
    out
}

pub fn remove_path(v: &mut Value, path: &[Value]) {
    let (last, parents) = path.split_last().unwrap();
    let mut node = v;
    for step in parents {
        node = match (node, step) {
            (Value::Sequence(s), Value::Number(n)) => &mut s[n.as_u64().unwrap() as usize],
            (Value::Mapping(m), k) => m.get_mut(k).unwrap(),
            _ => unreachable!("paths come from entry_paths"),
        };
    }
    if let Value::Mapping(m) = node {
        m.shift_remove(last);
    }
}

/// Removes chunks of lines, then of bytes, from `input` while `fails` holds.
pub fn bytes(input: &[u8], fails: &mut dyn FnMut(&[u8]) -> bool) -> Vec<u8> {
    let mut best = input.to_vec();
    for unit_is_line in [true, false] {
        let mut chunk = best.len() / 2;
        while chunk >= 1 {
            let mut at = 0;
            while at < best.len() {
                let end = if unit_is_line {
                    // `chunk` lines from `at` (at a line start).
                    let mut e = at;
                    for _ in 0..chunk.max(1) {
                        match best[e..].iter().position(|&b| b == b'\n') {
                            Some(p) => e += p + 1,
                            None => {
                                e = best.len();
                                break;
                            }
                        }
                    }
                    e
                } else {
                    (at + chunk).min(best.len())
                };
                let mut candidate = best[..at].to_vec();
                candidate.extend_from_slice(&best[end..]);
                if candidate.len() < best.len() && fails(&candidate) {
                    best = candidate;
                } else if unit_is_line {
                    at = best[at..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(best.len(), |p| at + p + 1);
                } else {
                    at = end;
                }
            }
            chunk /= 2;
            if best.len() > 200_000 && !unit_is_line {
                break;
            }
        }
    }
    best
}

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

/// How long [`bytes`] may take.
pub const BYTES_BUDGET: std::time::Duration = std::time::Duration::from_secs(120);

/// Removes lines, then (for inputs left under 64 KiB) bytes, from `input` while `fails` holds
/// (delta debugging on complements); stops after [`BYTES_BUDGET`] with the smallest failing
/// input so far.
pub fn bytes(input: &[u8], fails: &mut dyn FnMut(&[u8]) -> bool) -> Vec<u8> {
    let started = std::time::Instant::now();
    let lines: Vec<&[u8]> = input.split_inclusive(|&b| b == b'\n').collect();
    let best = ddmin(lines, fails, started);
    if best.len() >= 64 << 10 {
        return best;
    }
    let units: Vec<&[u8]> = best.chunks(1).collect();
    ddmin(units, fails, started)
}

/// The smallest concatenation of a subset of `units` (in order) that still fails.
fn ddmin(
    mut units: Vec<&[u8]>,
    fails: &mut dyn FnMut(&[u8]) -> bool,
    started: std::time::Instant,
) -> Vec<u8> {
    let mut n = 2;
    while units.len() >= 2 && started.elapsed() < BYTES_BUDGET {
        let chunk = units.len().div_ceil(n);
        let mut reduced = None;
        for i in 0..n {
            let (from, to) = (i * chunk, ((i + 1) * chunk).min(units.len()));
            if from >= to || started.elapsed() >= BYTES_BUDGET {
                break;
            }
            let rest: Vec<&[u8]> = units[..from].iter().chain(&units[to..]).copied().collect();
            if fails(&rest.concat()) {
                reduced = Some(rest);
                break;
            }
        }
        if let Some(rest) = reduced {
            units = rest;
            n = (n - 1).max(2);
        } else {
            if n >= units.len() {
                break;
            }
            n = (n * 2).min(units.len());
        }
    }
    units.concat()
}

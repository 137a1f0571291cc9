//! Results repeat what they are about: a value from the input can be megabytes long (a mutated
//! `apiVersion`, a pasted certificate), and one error would name it in its message, its
//! `resourceRef`, its `field.currentValue` and on stderr — several times the input, for no reader.
//! Before results are written, every text they hold is bounded here; the items themselves (the
//! echoed `functionConfig` included) are never shortened.

use serde_yaml::Value;

use super::KrmResult;

/// Longest value a result shows (a reference, a field value, a tag): longer ones keep their
/// first bytes and say how long they were.
pub const SHOWN_VALUE_BYTES: usize = 512;

/// Longest message (or stderr line): longer ones keep their start and end, the middle is left
/// out with its length. Messages the modes write are well under it; a longer one carries a
/// value from the input.
pub const SHOWN_MESSAGE_BYTES: usize = 2048;

impl KrmResult {
    /// Bounds every text the result holds from the input ([`SHOWN_VALUE_BYTES`],
    /// [`SHOWN_MESSAGE_BYTES`]): the message, the references, the current value and the tags.
    pub fn bound(&mut self) {
        shorten_middle(&mut self.message, SHOWN_MESSAGE_BYTES);
        if let Some(r) = &mut self.resource_ref {
            for s in [&mut r.api_version, &mut r.kind, &mut r.name] {
                shorten(s, SHOWN_VALUE_BYTES);
            }
            if let Some(ns) = &mut r.namespace {
                shorten(ns, SHOWN_VALUE_BYTES);
            }
        }
        if let Some(f) = &mut self.field {
            shorten(&mut f.path, SHOWN_VALUE_BYTES);
            // The proposed value is the function's own (a plan), shown whole.
            if let Some(v) = &mut f.current_value {
                bound_value(v);
            }
        }
        if let Some(file) = &mut self.file {
            shorten(&mut file.path, SHOWN_VALUE_BYTES);
        }
        for v in self.tags.values_mut() {
            shorten(v, SHOWN_VALUE_BYTES);
        }
    }
}

/// `s` cut to about `max` bytes at a character boundary, with `… (N bytes)` (its length) after.
pub fn shorten(s: &mut String, max: usize) {
    if s.len() > max {
        let len = s.len();
        s.truncate(floor_boundary(s, max));
        s.push_str(&format!("… ({len} bytes)"));
    }
}

/// `s` with its middle left out when it is longer than `max` bytes: the first three quarters
/// and the last quarter are kept, `… (N bytes left out) …` in between.
pub fn shorten_middle(s: &mut String, max: usize) {
    if s.len() > max {
        let head = floor_boundary(s, max / 4 * 3);
        let mut tail = s.len() - max / 4;
        while !s.is_char_boundary(tail) {
            tail += 1;
        }
        let out = format!(
            "{}… ({} bytes left out) …{}",
            &s[..head],
            tail - head,
            &s[tail..]
        );
        *s = out;
    }
}

fn floor_boundary(s: &str, mut at: usize) -> usize {
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A found value bounded: long strings shortened; a mapping or sequence whose text would be
/// longer than [`SHOWN_MESSAGE_BYTES`] becomes its (shortened) YAML text.
fn bound_value(v: &mut Value) {
    match v {
        Value::String(s) => shorten(s, SHOWN_VALUE_BYTES),
        Value::Tagged(t) => bound_value(&mut t.value),
        Value::Mapping(_) | Value::Sequence(_) if size_past(v, SHOWN_MESSAGE_BYTES) => {
            let mut text = serde_yaml::to_string(v).unwrap_or_default();
            shorten(&mut text, SHOWN_VALUE_BYTES);
            *v = Value::String(text);
        }
        _ => {}
    }
}

/// Whether the text of `v` has more than about `budget` bytes (stops counting past it).
fn size_past(v: &Value, budget: usize) -> bool {
    fn walk(v: &Value, left: &mut usize) -> bool {
        let cost = match v {
            Value::String(s) => s.len() + 2,
            Value::Mapping(m) => {
                return m.iter().any(|(k, x)| walk(k, left) || walk(x, left));
            }
            Value::Sequence(s) => return s.iter().any(|x| walk(x, left)),
            Value::Tagged(t) => return walk(&t.value, left),
            _ => 8,
        };
        match left.checked_sub(cost) {
            Some(rest) => {
                *left = rest;
                false
            }
            None => true,
        }
    }
    walk(v, &mut budget.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krm::ResourceRef;

    #[test]
    fn a_huge_value_is_shown_shortened_everywhere() {
        let huge = "é".repeat(2 * 1024 * 1024); // 4 MiB, two bytes a character
        let mut r = KrmResult::error(format!("unsupported functionConfig {huge} (expected x)"))
            .about_ref(ResourceRef {
                api_version: huge.clone(),
                kind: "K".into(),
                name: "n".into(),
                namespace: None,
            })
            .field("apiVersion")
            .current(Value::Sequence(vec![Value::String(huge.clone()); 3]))
            .tag("check", huge.clone());
        r.bound();
        assert!(
            r.message.len() <= SHOWN_MESSAGE_BYTES + 40,
            "{}",
            r.message.len()
        );
        assert!(r.message.starts_with("unsupported functionConfig éé"));
        assert!(r.message.ends_with("éé (expected x)"), "the end is kept");
        assert!(r.message.contains("bytes left out) …"));
        let api = &r.resource_ref.as_ref().unwrap().api_version;
        assert!(api.len() <= SHOWN_VALUE_BYTES + 20);
        assert!(api.ends_with(&format!("… ({} bytes)", huge.len())));
        let current = r.field.as_ref().unwrap().current_value.as_ref().unwrap();
        let current = current
            .as_str()
            .expect("a long sequence is shown as its text");
        assert!(current.starts_with("- éé") && current.len() <= SHOWN_VALUE_BYTES + 20);
        let mut string = KrmResult::error("m").current(huge.clone());
        string.bound();
        let shown = string.field.unwrap().current_value.unwrap();
        assert_eq!(shown.as_str(), Some(&**api));
        assert!(r.tags["check"].len() <= SHOWN_VALUE_BYTES + 20);
        assert!(r.to_string().len() < 4 * 1024, "stderr line bounded too");
    }

    #[test]
    fn ordinary_results_are_left_alone() {
        let make = || {
            KrmResult::warning("m".repeat(SHOWN_MESSAGE_BYTES))
                .field("spec.x")
                .current(Value::Sequence(vec![Value::String("a".repeat(100)); 15]))
                // A plan is the function's own: shown whole, however long.
                .proposed(Value::Sequence(vec![Value::String("p".repeat(4096)); 15]))
                .tag("check", "coverage")
        };
        let mut r = make();
        r.bound();
        assert_eq!(r, make());
    }
}

//! Block mappings and sequences, keys, comments, and the merge keys a mapping may get.

use serde_yaml::{Mapping, Value};

use super::{Entry, Feature, Slot, Writer, has_long_key, join, pad, scalar};

impl Writer<'_> {
    /// Writes `v` in a block slot; leaves the output at the start of a new line.
    pub(super) fn node(&mut self, v: &Value, slot: Slot) {
        let mark = self.pending.len();
        self.node_inner(v, slot);
        self.anchor_written(mark);
    }

    pub(super) fn node_inner(&mut self, v: &Value, slot: Slot) {
        self.depth += 1;
        let props = match slot {
            Slot::Top => Ok(String::new()),
            _ => self.properties(v, true),
        };
        let props = match props {
            Ok(p) => p,
            Err(alias) => {
                self.inline(slot, &alias);
                self.depth -= 1;
                return;
            }
        };
        match v {
            Value::Mapping(m) if !m.is_empty() => {
                let flow = !matches!(slot, Slot::Top)
                    && self.choose(Feature::Flow, &[85, 15]) == 1
                    && !has_long_key(v);
                if flow {
                    let text = self.flow_with(v, &props, self.flow_indent(slot));
                    self.inline(slot, &text);
                } else {
                    self.block_mapping(m, slot, &props);
                }
            }
            Value::Sequence(s) if !s.is_empty() => {
                let flow = self.choose(Feature::Flow, &[85, 15]) == 1 && !has_long_key(v);
                if flow {
                    let text = self.flow_with(v, &props, self.flow_indent(slot));
                    self.inline(slot, &text);
                } else {
                    self.block_sequence(s, slot, &props);
                }
            }
            Value::Tagged(t) => {
                let inner = self.flow(&t.value, self.flow_indent(slot));
                self.inline(slot, &join(&[&props, &t.tag.to_string(), &inner]));
            }
            Value::String(s) => self.block_string(s, slot, &props),
            _ => {
                let text = self.scalar_text(v, false, true);
                if text.is_empty() && props.is_empty() {
                    // An empty node: nothing after `key:` or `-`.
                    self.out.push('\n');
                } else {
                    let text = if text.is_empty() {
                        "null".to_owned()
                    } else {
                        text
                    };
                    self.inline(slot, &join(&[&props, &text]));
                }
            }
        }
        self.depth -= 1;
    }

    /// One-line text after `key:` or `-`, then an optional comment and the line break.
    pub(super) fn inline(&mut self, slot: Slot, text: &str) {
        let tab = matches!(slot, Slot::MapValue { .. })
            && !self.on_explicit_value_line()
            && !text.starts_with(['|', '>'])
            && self.choose(Feature::Tabs, &[85, 15]) == 1;
        self.out.push(if tab { '\t' } else { ' ' });
        self.out.push_str(text);
        self.trailing_comment();
        self.out.push('\n');
    }

    /// The current line is an explicit entry's `: value` line (libyaml takes no tab there).
    pub(super) fn on_explicit_value_line(&self) -> bool {
        let line = &self.out[self.out.rfind('\n').map_or(0, |i| i + 1)..];
        line.trim_start().starts_with(':')
    }

    pub(super) fn trailing_comment(&mut self) {
        let tab_ok = !self.on_explicit_value_line();
        match self.choose(Feature::Comments, &[90, 6, 4]) {
            1 => self.out.push_str(" # trailing comment: items:"),
            2 if tab_ok => self.out.push_str("\t# - kind: Fake"),
            2 => self.out.push_str(" # - kind: Fake"),
            _ => {}
        }
    }

    pub(super) fn own_line_comment(&mut self, col: usize) {
        match self.choose(Feature::Comments, &[92, 4, 4]) {
            1 => {
                self.out.push_str(&pad(col));
                self.out.push_str("# - kind: Fake\n");
            }
            2 => self.out.push_str("# functionConfig: {}\n"),
            _ => {}
        }
    }

    /// Indentation step for the children of a block collection.
    pub(super) fn step(&mut self) -> usize {
        [2, 4, 1, 3][self.choose(Feature::Indent, &[80, 10, 5, 5])]
    }

    /// The entries to write for `m`: its own, possibly with some moved behind a merge key.
    pub(super) fn entries<'v>(&mut self, m: &'v Mapping) -> Vec<(&'v Value, Entry<'v>)> {
        let all: Vec<(&Value, &Value)> = m.iter().collect();
        let mut entries: Vec<(&Value, Entry)> =
            all.iter().map(|&(k, v)| (k, Entry::Doc(v))).collect();
        let eligible = self.depth >= 3
            && !self.in_merge_source
            && m.len() >= 2
            && m.keys().all(|k| k.as_str().is_some_and(|s| s != "<<"));
        let how = self.choose(Feature::MergeKeys, &[85, 9, 6]);
        if !eligible || how == 0 {
            return entries;
        }
        // Move a random subset behind `<<`; sometimes the merge also carries a different
        // value for a key that stays explicit (the explicit entry wins).
        let mut sub = self.sub();
        let picks: Vec<usize> = (0..m.len()).filter(|_| sub.chance(50)).collect();
        if picks.is_empty() {
            return entries;
        }
        let mut moved = Mapping::new();
        for &i in &picks {
            let (k, v) = all[i];
            moved.insert(k.clone(), v.clone());
        }
        let kept: Vec<usize> = (0..m.len()).filter(|i| !picks.contains(i)).collect();
        if let Some(&i) = kept.first()
            && sub.chance(30)
        {
            let (k, _) = all[i];
            moved.insert(
                k.clone(),
                Value::String("overridden by the explicit entry".into()),
            );
        }
        let merge = if how == 2 && moved.len() >= 2 {
            let cut = 1 + sub.below(moved.len() - 1);
            let mut first = Mapping::new();
            let mut second = Mapping::new();
            for (n, (k, v)) in moved.into_iter().enumerate() {
                if n < cut {
                    first.insert(k, v);
                } else {
                    second.insert(k, v);
                }
            }
            Value::Sequence(vec![Value::Mapping(first), Value::Mapping(second)])
        } else {
            Value::Mapping(moved)
        };
        let at = match sub.below(3) {
            0 => 0,
            1 => picks[0],
            _ => kept.len(),
        };
        entries.retain(|(k, _)| !picks.iter().any(|&i| all[i].0 == *k));
        static MERGE_KEY: std::sync::LazyLock<Value> =
            std::sync::LazyLock::new(|| Value::String("<<".into()));
        entries.insert(at.min(entries.len()), (&MERGE_KEY, Entry::Made(merge)));
        self.merges = true;
        self.merge_count += 1;
        entries
    }

    pub(super) fn block_mapping(&mut self, m: &Mapping, slot: Slot, props: &str) {
        // Column of the keys, and whether the first key goes on the current line.
        let (col, first_inline) = match slot {
            Slot::Top => (0, false),
            Slot::MapValue { col } => {
                let step = self.step();
                self.push_props(props);
                self.trailing_comment();
                self.out.push('\n');
                (col + step, false)
            }
            Slot::SeqItem { col } => {
                let newline = !props.is_empty() || self.choose(Feature::Indent, &[90, 10]) == 1;
                if newline {
                    self.push_props(props);
                    self.out.push('\n');
                    (col + self.step().max(2), false)
                } else {
                    self.out.push(' ');
                    (col + 2, true)
                }
            }
        };
        let entries = self.entries(m);
        for (n, (key, value)) in entries.iter().enumerate() {
            let inline_here = first_inline && n == 0;
            if !inline_here {
                self.own_line_comment(col);
                self.out.push_str(&pad(col));
            }
            let merge_source = key.as_str() == Some("<<");
            let explicit_ok = !merge_source && !matches!(value.value(), Value::Sequence(_));
            let explicit = self.key_needs_explicit(key)
                || (self.choose(Feature::ExplicitKeys, &[95, 5]) == 1 && explicit_ok);
            // A merge key is the plain `<<` (quoted, it is an ordinary key to go-yaml).
            let key_text = if merge_source {
                "<<".to_owned()
            } else {
                self.key_text(key, false, explicit)
            };
            if explicit {
                self.out.push_str("? ");
                self.out.push_str(&key_text);
                self.out.push('\n');
                self.out.push_str(&pad(col));
                self.out.push(':');
            } else {
                self.out.push_str(&key_text);
                self.out.push(':');
            }
            let was = self.in_merge_source;
            self.in_merge_source |= merge_source;
            self.node(value.value(), Slot::MapValue { col });
            self.in_merge_source = was;
        }
    }

    pub(super) fn block_sequence(&mut self, s: &[Value], slot: Slot, props: &str) {
        let (col, first_inline) = match slot {
            Slot::Top => (0, false),
            Slot::MapValue { col } => {
                let indented = self.choose(Feature::Indent, &[80, 20]) == 1;
                let step = if indented { self.step() } else { 0 };
                self.push_props(props);
                self.trailing_comment();
                self.out.push('\n');
                (col + step, false)
            }
            Slot::SeqItem { col } => {
                if props.is_empty() && self.choose(Feature::Indent, &[80, 20]) == 0 {
                    self.out.push(' ');
                    (col + 2, true)
                } else {
                    self.push_props(props);
                    self.out.push('\n');
                    (col + self.step().max(2), false)
                }
            }
        };
        let top_items = std::ptr::eq(s, self.items_slice());
        for (n, v) in s.iter().enumerate() {
            if !(first_inline && n == 0) {
                self.own_line_comment(col);
                self.out.push_str(&pad(col));
            }
            self.out.push('-');
            let was = self.item;
            if top_items {
                self.item = Some(n);
            }
            self.node(v, Slot::SeqItem { col });
            self.item = was;
        }
    }

    /// Whether `key` can only be written as an explicit `? ` key.
    pub(super) fn key_needs_explicit(&self, key: &Value) -> bool {
        key.as_str().is_some_and(|s| s.len() > 1000)
    }

    pub(super) fn key_text(&mut self, key: &Value, flow: bool, explicit: bool) -> String {
        match key {
            Value::String(s) => {
                let plain =
                    scalar::plain_ok(s, flow, &mut self.memo) && (explicit || s.len() < 1000);
                match self.choose(Feature::Quoting, &[80, 10, 10]) {
                    0 if plain => s.clone(),
                    1 if scalar::single_ok(s) => scalar::single(s),
                    _ => scalar::double(s),
                }
            }
            other => self.scalar_text(other, flow, false),
        }
    }
}

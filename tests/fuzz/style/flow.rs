//! Flow collections and scalars.

use serde_yaml::Value;

use super::{Feature, Writer, join, pad, scalar};

impl Writer<'_> {
    /// `v` in flow style on one line (breaks after commas at `indent`).
    pub(super) fn flow(&mut self, v: &Value, indent: usize) -> String {
        self.flow_with(v, "", indent)
    }

    pub(super) fn flow_with(&mut self, v: &Value, props: &str, indent: usize) -> String {
        let body = match v {
            Value::Mapping(m) => {
                let entries = self.entries(m);
                let mut parts = Vec::new();
                for (k, e) in &entries {
                    let merge_source = k.as_str() == Some("<<");
                    let key = if merge_source {
                        "<<".to_owned()
                    } else {
                        self.key_text(k, true, false)
                    };
                    let was = self.in_merge_source;
                    self.in_merge_source |= merge_source;
                    let value = self.flow_child(e.value(), indent);
                    self.in_merge_source = was;
                    parts.push(format!("{key}: {value}"));
                }
                format!("{{{}}}", self.join_flow(&parts, indent))
            }
            Value::Sequence(s) => {
                let top_items = std::ptr::eq(s.as_slice(), self.items_slice());
                let mut parts = Vec::new();
                for (n, x) in s.iter().enumerate() {
                    let was = self.item;
                    if top_items {
                        self.item = Some(n);
                    }
                    parts.push(self.flow_child(x, indent));
                    self.item = was;
                }
                format!("[{}]", self.join_flow(&parts, indent))
            }
            Value::String(s) => {
                let plain = scalar::plain_ok(s, true, &mut self.memo);
                match self.choose(Feature::Quoting, &[80, 10, 10]) {
                    0 if plain => s.clone(),
                    1 if scalar::single_ok(s) && !s.contains('\n') => scalar::single(s),
                    _ => scalar::double(s),
                }
            }
            Value::Tagged(t) => {
                let inner = self.flow(&t.value, indent);
                join(&[&t.tag.to_string(), &inner])
            }
            other => self.scalar_text(other, true, false),
        };
        join(&[props, &body])
    }

    /// A node inside a flow collection, with its own anchor/alias/tag decisions.
    pub(super) fn flow_child(&mut self, v: &Value, indent: usize) -> String {
        self.depth += 1;
        let mark = self.pending.len();
        let text = match self.properties(v, true) {
            Err(alias) => alias,
            Ok(props) => self.flow_with(v, &props, indent),
        };
        self.anchor_written(mark);
        self.depth -= 1;
        text
    }

    pub(super) fn join_flow(&mut self, parts: &[String], indent: usize) -> String {
        let mut out = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                out.push(',');
                if self.choose(Feature::Flow, &[85, 15]) == 1 {
                    out.push('\n');
                    out.push_str(&pad(indent));
                } else {
                    out.push(' ');
                }
            }
            out.push_str(p);
        }
        out
    }
}

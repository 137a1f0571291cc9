//! Kubernetes label selector evaluation (`matchLabels` AND `matchExpressions`), used to resolve
//! MetalLB's pool/service/namespace selectors and to prove which Cilium objects select a Service.

use std::collections::BTreeMap;

use std::collections::{HashMap, HashSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde_yaml::Value;

/// Labels of one object.
pub type Labels = BTreeMap<String, String>;

/// `metadata.labels` of an item as read by a selector.
pub fn labels_of(item: &Value) -> Labels {
    item.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_mapping)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())))
        .collect()
}

/// Checks that every expression uses a known operator and carries values exactly when it must.
pub fn validate(sel: &LabelSelector) -> Result<(), String> {
    for (i, req) in sel.match_expressions.iter().flatten().enumerate() {
        let has_values = req.values.as_ref().is_some_and(|v| !v.is_empty());
        match req.operator.as_str() {
            "In" | "NotIn" if !has_values => {
                return Err(format!(
                    "matchExpressions[{i}]: operator {} needs values",
                    req.operator
                ));
            }
            "Exists" | "DoesNotExist" if has_values => {
                return Err(format!(
                    "matchExpressions[{i}]: operator {} takes no values",
                    req.operator
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => return Err(format!("matchExpressions[{i}]: unknown operator {other:?}")),
        }
    }
    Ok(())
}

/// True when `sel` selects an object with `labels` (an empty selector selects everything).
/// Call [`validate`] first: an unknown operator never matches.
pub fn matches(sel: &LabelSelector, labels: &Labels) -> bool {
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    labels_ok
        && sel
            .match_expressions
            .iter()
            .flatten()
            .all(|req| requirement_matches(req, labels))
}

fn requirement_matches(req: &LabelSelectorRequirement, labels: &Labels) -> bool {
    let value = labels.get(&req.key);
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        _ => false,
    }
}

/// A label selector prepared for matching many objects: the values of `In`/`NotIn`
/// requirements in hash sets, so one match costs the same however many values a requirement
/// lists (a pool restricted to thousands of namespaces is `namespace In [...]`). Same answers as
/// [`matches`].
#[derive(Debug)]
pub struct Matcher<'a> {
    labels: Vec<(&'a str, &'a str)>,
    requirements: Vec<(&'a str, &'a str, HashSet<&'a str>)>,
}

impl<'a> Matcher<'a> {
    /// Prepares `sel`.
    pub fn new(sel: &'a LabelSelector) -> Self {
        Matcher {
            labels: sel
                .match_labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            requirements: sel
                .match_expressions
                .iter()
                .flatten()
                .map(|r| {
                    let values = r.values.iter().flatten().map(String::as_str).collect();
                    (r.key.as_str(), r.operator.as_str(), values)
                })
                .collect(),
        }
    }

    /// True when the selector selects an object with `labels`.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.labels
            .iter()
            .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
            && self.requirements.iter().all(|(key, op, values)| {
                let value = labels.get(*key).map(String::as_str);
                match *op {
                    "In" => value.is_some_and(|v| values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

impl<'a> Matcher<'a> {
    /// The labels one of which every object the selector selects carries: a `matchLabels`
    /// pair, else the values of an `In` requirement. `None` when the selector requires none.
    fn required(&self) -> Option<Vec<(&'a str, &'a str)>> {
        if let Some(&pair) = self.labels.first() {
            return Some(vec![pair]);
        }
        self.requirements
            .iter()
            .find(|(_, op, _)| *op == "In")
            .map(|(key, _, values)| values.iter().map(|v| (*key, *v)).collect())
    }
}

/// Many selectors indexed by a label each requires ([`Matcher::required`]), so that finding the
/// ones that select an object costs what the few candidates cost, not a match against every
/// selector: thousands of opt-in pools (`<poolLabel> In [<pool>]`) or namespace-restricted
/// pools against thousands of Services stay linear.
#[derive(Debug, Default)]
pub struct MatcherIndex<'a> {
    /// Selectors that require no particular label (absent selectors included): always tried.
    always: Vec<usize>,
    /// `(key, value)` → selectors requiring that label.
    by_label: HashMap<(&'a str, &'a str), Vec<usize>>,
}

impl<'a> MatcherIndex<'a> {
    /// Indexes the selectors, by position (`None` = no selector, which selects everything).
    pub fn new<'m>(matchers: impl IntoIterator<Item = Option<&'m Matcher<'a>>>) -> Self
    where
        'a: 'm,
    {
        let mut index = MatcherIndex::default();
        for (i, m) in matchers.into_iter().enumerate() {
            match m.and_then(Matcher::required) {
                Some(pairs) => {
                    for pair in pairs {
                        index.by_label.entry(pair).or_default().push(i);
                    }
                }
                None => index.always.push(i),
            }
        }
        index
    }

    /// Positions, ascending, of the selectors that may select an object with `labels`; each
    /// still has to be checked with [`Matcher::matches`].
    pub fn candidates(&self, labels: &Labels) -> Vec<usize> {
        let mut out = self.always.clone();
        for (k, v) in labels {
            if let Some(found) = self.by_label.get(&(k.as_str(), v.as_str())) {
                out.extend_from_slice(found);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// A requirement `key In values`.
pub fn key_in(key: &str, values: Vec<String>) -> LabelSelectorRequirement {
    requirement(key, "In", values)
}

/// A requirement `key NotIn values`.
pub fn key_not_in(key: &str, values: Vec<String>) -> LabelSelectorRequirement {
    requirement(key, "NotIn", values)
}

fn requirement(key: &str, operator: &str, values: Vec<String>) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_owned(),
        operator: operator.to_owned(),
        values: Some(values),
    }
}

/// ANDs two selectors into one (`matchLabels` merged, expressions concatenated). Returns `None`
/// when both constrain the same `matchLabels` key to different values (nothing can match).
pub fn and(a: &LabelSelector, b: &LabelSelector) -> Option<LabelSelector> {
    let mut labels = a.match_labels.clone().unwrap_or_default();
    for (k, v) in b.match_labels.iter().flatten() {
        if let Some(existing) = labels.get(k)
            && existing != v
        {
            return None;
        }
        labels.insert(k.clone(), v.clone());
    }
    let mut exprs = a.match_expressions.clone().unwrap_or_default();
    exprs.extend(b.match_expressions.iter().flatten().cloned());
    Some(normalized(LabelSelector {
        match_labels: Some(labels),
        match_expressions: Some(exprs),
    }))
}

/// Drops empty `matchLabels`/`matchExpressions` so selectors compare and print canonically.
/// `sel` (none = every node) narrowed to the nodes MetalLB's speaker announces from: those
/// without [`super::observed::EXCLUDE_LB_LABEL`]. MetalLB skips labelled nodes in
/// `speakersForPool` (metallb/metallb `speaker/main.go`, v0.14.0 to v0.16.1); Cilium's L2
/// announcer has no such rule (cilium/cilium `pkg/l2announcer/l2announcer.go`, 1.19 branch
/// point), so every generated policy carries it as a `DoesNotExist` requirement, and the proof
/// reads MetalLB's node selectors the same way.
pub fn announcing_nodes(sel: Option<&LabelSelector>) -> LabelSelector {
    let mut out = sel.cloned().unwrap_or_default();
    let exprs = out.match_expressions.get_or_insert_with(Vec::new);
    let key = super::observed::EXCLUDE_LB_LABEL;
    if !exprs
        .iter()
        .any(|r| r.key == key && r.operator == "DoesNotExist")
    {
        exprs.push(LabelSelectorRequirement {
            key: key.to_owned(),
            operator: "DoesNotExist".to_owned(),
            values: None,
        });
    }
    normalized(out)
}

/// Drops empty `matchLabels`/`matchExpressions` (an empty selector is the same as none).
pub fn normalized(mut sel: LabelSelector) -> LabelSelector {
    if sel.match_labels.as_ref().is_some_and(BTreeMap::is_empty) {
        sel.match_labels = None;
    }
    if sel.match_expressions.as_ref().is_some_and(Vec::is_empty) {
        sel.match_expressions = None;
    }
    sel
}

/// True when the selector has no constraint at all.
pub fn is_empty(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// A stable text form for comparisons and messages (`{}` selects everything).
pub fn canonical(sel: Option<&LabelSelector>) -> String {
    match sel.filter(|s| !is_empty(s)) {
        None => "{}".into(),
        Some(s) => {
            let mut exprs: Vec<String> = s
                .match_expressions
                .iter()
                .flatten()
                .map(|r| {
                    let mut vals = r.values.clone().unwrap_or_default();
                    vals.sort();
                    format!("{} {} [{}]", r.key, r.operator, vals.join(","))
                })
                .collect();
            exprs.sort();
            let labels: Vec<String> = s
                .match_labels
                .iter()
                .flatten()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!(
                "{{{}}}",
                labels
                    .into_iter()
                    .chain(exprs)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn operators() {
        let sel = LabelSelector {
            match_labels: Some([("a".to_string(), "1".to_string())].into()),
            match_expressions: Some(vec![key_not_in("pool", vec!["x".into()])]),
        };
        assert!(matches(&sel, &labels(&[("a", "1")])));
        assert!(matches(&sel, &labels(&[("a", "1"), ("pool", "y")])));
        assert!(!matches(&sel, &labels(&[("a", "1"), ("pool", "x")])));
        assert!(!matches(&sel, &labels(&[("a", "2")])));
        let inn = LabelSelector {
            match_expressions: Some(vec![key_in("pool", vec!["x".into()])]),
            ..Default::default()
        };
        assert!(!matches(&inn, &labels(&[])));
        assert!(matches(&LabelSelector::default(), &labels(&[])));
        let bad = LabelSelector {
            match_expressions: Some(vec![requirement("k", "Gt", vec!["1".into()])]),
            ..Default::default()
        };
        assert!(validate(&bad).is_err());
        assert!(!matches(&bad, &labels(&[("k", "2")])));
    }

    #[test]
    fn and_merges_or_detects_contradiction() {
        let a = LabelSelector {
            match_labels: Some([("a".to_string(), "1".to_string())].into()),
            ..Default::default()
        };
        let b = LabelSelector {
            match_labels: Some([("a".to_string(), "2".to_string())].into()),
            ..Default::default()
        };
        assert!(and(&a, &b).is_none());
        assert_eq!(canonical(and(&a, &a).as_ref()), "{a=1}");
        assert_eq!(canonical(None), "{}");
    }

    /// The prepared matcher answers exactly as `matches`, for every operator (an unknown one
    /// never matches), with and without the key, over label sets that hit and miss.
    #[test]
    fn prepared_matcher_agrees_with_matches() {
        let ops = ["In", "NotIn", "Exists", "DoesNotExist", "Gt"];
        let label_sets = [
            labels(&[]),
            labels(&[("k", "a")]),
            labels(&[("k", "z"), ("app", "web")]),
            labels(&[("app", "web")]),
            labels(&[("app", "db"), ("k", "b")]),
        ];
        for op in ops {
            for with_labels in [false, true] {
                let sel = LabelSelector {
                    match_labels: with_labels
                        .then(|| [("app".to_string(), "web".to_string())].into()),
                    match_expressions: Some(vec![requirement(
                        "k",
                        op,
                        vec!["a".into(), "b".into(), "c".into()],
                    )]),
                };
                let prepared = Matcher::new(&sel);
                for l in &label_sets {
                    assert_eq!(
                        prepared.matches(l),
                        matches(&sel, l),
                        "{op} {with_labels} {l:?}"
                    );
                }
            }
        }
    }

    /// The index never leaves out a selector that matches: every matching selector is among
    /// the candidates, for every operator, with and without `matchLabels`, and absent selectors.
    #[test]
    fn index_candidates_include_every_match() {
        let mut sels = vec![None];
        for op in ["In", "NotIn", "Exists", "DoesNotExist", "Gt"] {
            for with_labels in [false, true] {
                sels.push(Some(LabelSelector {
                    match_labels: with_labels
                        .then(|| [("app".to_string(), "web".to_string())].into()),
                    match_expressions: Some(vec![
                        requirement("k", op, vec!["a".into(), "b".into()]),
                        requirement("ns", "In", vec!["x".into()]),
                    ]),
                }));
            }
        }
        let matchers: Vec<Option<Matcher>> =
            sels.iter().map(|s| s.as_ref().map(Matcher::new)).collect();
        let index = MatcherIndex::new(matchers.iter().map(Option::as_ref));
        let label_sets = [
            labels(&[]),
            labels(&[("k", "a"), ("ns", "x")]),
            labels(&[("k", "z"), ("app", "web"), ("ns", "x")]),
            labels(&[("app", "web"), ("ns", "y")]),
            labels(&[("app", "db"), ("k", "b"), ("ns", "x")]),
        ];
        for l in &label_sets {
            let candidates = index.candidates(l);
            for (i, sel) in sels.iter().enumerate() {
                if sel.as_ref().is_none_or(|s| matches(s, l)) {
                    assert!(candidates.contains(&i), "selector {i} matches {l:?}");
                }
            }
        }
        // The absent selector is always a candidate; one requiring app=web is not for app=db.
        assert!(index.candidates(&labels(&[])).contains(&0));
        assert!(!index.candidates(&labels(&[("app", "db")])).contains(&2));
    }
}

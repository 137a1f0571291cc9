//! What serde_yaml's `Value` cannot tell, read from libyaml's events (positions, kinds, styles).
//!
//! - Quoted `"<<"` keys. go-yaml (kubectl, kpt, kustomize) takes a `<<` key for a merge only when
//!   it is plain (implicit) or tagged `!!merge` (go-yaml/yaml v2.4.0 and v3 `decode.go`
//!   `isMerge`); a quoted `"<<"` is an ordinary key. serde_yaml's
//!   `apply_merge` merges every key `<<`, so before the oracle applies merges it renames each
//!   quoted one (by position, so nothing inside a scalar is touched).
//! - Documents serde_yaml refuses with "repetition limit exceeded": its alias budget is 100 jumps
//!   per event (`de.rs`), so a few lines of nested aliases (6 480 nodes in all) exceed it, where
//!   go-yaml lets 99 % of up to 400 000 decoded nodes come from aliases (go-yaml/yaml v2.4.0 and
//!   v3 `decode.go` `allowedAliasRatio`) and the engine expands 256 Ki nodes plus one per 4 input
//!   bytes. Such an output is checked here instead: one document, a mapping with
//!   `kind: ResourceList` and an `items` sequence, every alias defined, every plain `<<` followed
//!   by a mapping, an alias to one, or a sequence of those (duplicate keys are not checked: the
//!   engine refuses them on reading).

use std::collections::HashMap;
use std::mem::MaybeUninit;

use unsafe_libyaml as unsafe_yaml;

/// What a quoted `"<<"` key is renamed to before merge keys are applied.
pub const LITERAL_MERGE_KEY: &str = "\"\\uE000<<\"";

/// One event, with what the checks here need.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    DocumentStart,
    Scalar {
        anchor: Option<Vec<u8>>,
        value: Vec<u8>,
        plain: bool,
        tagged: bool,
        start: usize,
        end: usize,
        tag: Option<Vec<u8>>,
    },
    Alias(Vec<u8>),
    MappingStart(Option<Vec<u8>>),
    SequenceStart(Option<Vec<u8>>),
    End,
}

/// A node as go-yaml reads it (see [`super::typed`]): scalars with their value text, style and
/// tag; aliases and merge keys left to the reader.
pub fn nodes(input: &[u8]) -> Result<Vec<super::typed::Event>, String> {
    use super::typed::Event;
    let mut out = Vec::new();
    for ev in events(input)? {
        out.push(match ev {
            Ev::Scalar {
                anchor,
                value,
                plain,
                tag,
                ..
            } => Event::Scalar {
                anchor,
                value,
                plain,
                tag,
            },
            Ev::Alias(name) => Event::Alias(name),
            Ev::MappingStart(anchor) => Event::MappingStart(anchor),
            Ev::SequenceStart(anchor) => Event::SequenceStart(anchor),
            Ev::End => Event::End,
            Ev::DocumentStart => Event::DocumentStart,
        });
    }
    Ok(out)
}

/// Every event of `input` (`Err` with libyaml's problem when it cannot be read).
fn events(input: &[u8]) -> Result<Vec<Ev>, String> {
    let mut out = Vec::new();
    let mut parser = MaybeUninit::<unsafe_yaml::yaml_parser_t>::uninit();
    let mut event = MaybeUninit::<unsafe_yaml::yaml_event_t>::uninit();
    let bytes = |p: *const u8| {
        // SAFETY: libyaml's anchor strings are NUL-terminated and live with their event.
        (!p.is_null()).then(|| {
            unsafe { std::ffi::CStr::from_ptr(p.cast()) }
                .to_bytes()
                .to_vec()
        })
    };
    // SAFETY: the parser is initialized before use and deleted once; each event is deleted
    // after it is read; `input` outlives the parser.
    unsafe {
        let p = parser.as_mut_ptr();
        if unsafe_yaml::yaml_parser_initialize(p).fail {
            return Err("libyaml could not allocate its parser".into());
        }
        unsafe_yaml::yaml_parser_set_encoding(p, unsafe_yaml::YAML_UTF8_ENCODING);
        unsafe_yaml::yaml_parser_set_input_string(p, input.as_ptr(), input.len() as u64);
        let result = loop {
            if unsafe_yaml::yaml_parser_parse(p, event.as_mut_ptr()).fail {
                let problem = (&(*p)).problem;
                break Err(bytes(problem.cast())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_else(|| "libyaml error".into()));
            }
            let e = &*event.as_ptr();
            let mut done = false;
            match e.type_ {
                unsafe_yaml::YAML_STREAM_END_EVENT => done = true,
                unsafe_yaml::YAML_DOCUMENT_START_EVENT => out.push(Ev::DocumentStart),
                unsafe_yaml::YAML_SCALAR_EVENT => {
                    let s = &e.data.scalar;
                    out.push(Ev::Scalar {
                        tag: bytes(s.tag),
                        anchor: bytes(s.anchor),
                        value: std::slice::from_raw_parts(s.value, s.length as usize).to_vec(),
                        plain: s.style == unsafe_yaml::YAML_PLAIN_SCALAR_STYLE,
                        tagged: !s.tag.is_null(),
                        start: e.start_mark.index as usize,
                        end: e.end_mark.index as usize,
                    });
                }
                unsafe_yaml::YAML_ALIAS_EVENT => {
                    out.push(Ev::Alias(bytes(e.data.alias.anchor).unwrap_or_default()));
                }
                unsafe_yaml::YAML_MAPPING_START_EVENT => {
                    out.push(Ev::MappingStart(bytes(e.data.mapping_start.anchor)));
                }
                unsafe_yaml::YAML_SEQUENCE_START_EVENT => {
                    out.push(Ev::SequenceStart(bytes(e.data.sequence_start.anchor)));
                }
                unsafe_yaml::YAML_MAPPING_END_EVENT | unsafe_yaml::YAML_SEQUENCE_END_EVENT => {
                    out.push(Ev::End);
                }
                _ => {}
            }
            unsafe_yaml::yaml_event_delete(event.as_mut_ptr());
            if done {
                break Ok(out);
            }
        };
        unsafe_yaml::yaml_parser_delete(p);
        result
    }
}

/// `text` with every untagged quoted `"<<"` mapping key replaced by [`LITERAL_MERGE_KEY`];
/// `None` when there is none (or libyaml cannot read the text: serde_yaml will say why).
pub fn rename_quoted_merge_keys(text: &str) -> Option<String> {
    if !text.contains("<<") {
        return None;
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let skip = text.len() - body.len();
    let evs = events(body.as_bytes()).ok()?;
    let mut spans = Vec::new();
    walk(&evs, |ev, is_key| {
        if let Ev::Scalar {
            value,
            plain: false,
            tagged: false,
            start,
            end,
            ..
        } = ev
            && is_key
            && value == b"<<"
        {
            spans.push((*start, *end));
        }
    });
    if spans.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 8 * spans.len());
    let mut at = 0;
    for (start, end) in spans {
        out.push_str(&text[at..skip + start]);
        out.push_str(LITERAL_MERGE_KEY);
        at = skip + end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// Calls `f` with every event and whether it is a mapping key.
fn walk(evs: &[Ev], mut f: impl FnMut(&Ev, bool)) {
    // Per open collection: is it a mapping, and how many nodes it has had so far.
    let mut open: Vec<(bool, usize)> = Vec::new();
    for ev in evs {
        let is_key = open.last().is_some_and(|&(map, n)| map && n % 2 == 0);
        f(ev, is_key);
        let node = match ev {
            Ev::MappingStart(_) => {
                open.push((true, 0));
                false
            }
            Ev::SequenceStart(_) => {
                open.push((false, 0));
                false
            }
            Ev::End => {
                open.pop();
                true
            }
            Ev::Scalar { .. } | Ev::Alias(_) => true,
            Ev::DocumentStart => false,
        };
        if node && let Some(top) = open.last_mut() {
            top.1 += 1;
        }
    }
}

/// The checks of [`super::check::resource_list`] on the events of `text`, for a document
/// serde_yaml refuses only for its alias budget (see the module doc).
pub fn check_resource_list(text: &str) -> Result<(), String> {
    let evs = events(text.strip_prefix('\u{feff}').unwrap_or(text).as_bytes())?;
    let docs = evs.iter().filter(|e| **e == Ev::DocumentStart).count();
    if docs != 1 {
        return Err(format!("{docs} YAML documents"));
    }
    root_is_resource_list(&evs[1..])?;
    let mut is_key = Vec::with_capacity(evs.len());
    walk(&evs, |_, key| is_key.push(key));
    // Anchors defined so far, and whether each names a mapping.
    let mut anchors: HashMap<&[u8], bool> = HashMap::new();
    for (n, ev) in evs.iter().enumerate() {
        match ev {
            Ev::Alias(name) if !anchors.contains_key(name.as_slice()) => {
                return Err(format!(
                    "alias *{} names no anchor before it",
                    String::from_utf8_lossy(name)
                ));
            }
            Ev::Scalar {
                anchor: Some(a), ..
            }
            | Ev::SequenceStart(Some(a)) => {
                anchors.insert(a, false);
            }
            Ev::MappingStart(Some(a)) => {
                anchors.insert(a, true);
            }
            Ev::Scalar {
                value, plain: true, ..
            } if is_key[n] && value == b"<<" => {
                let is_map = |e: &Ev| match e {
                    Ev::MappingStart(_) => true,
                    Ev::Alias(name) => anchors.get(name.as_slice()) == Some(&true),
                    _ => false,
                };
                let applies = match evs.get(n + 1) {
                    Some(Ev::SequenceStart(_)) => entries(&evs[n + 2..]).all(is_map),
                    Some(e) => is_map(e),
                    None => false,
                };
                if !applies {
                    return Err("merge keys do not apply: a plain << takes a mapping, an alias to one or a list of those".into());
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The first events of the entries of a collection whose events follow its start in `evs`.
fn entries(evs: &[Ev]) -> impl Iterator<Item = &Ev> {
    let mut depth = 0usize;
    evs.iter()
        .take_while(move |e| {
            let at_top = depth == 0;
            match e {
                Ev::MappingStart(_) | Ev::SequenceStart(_) => depth += 1,
                Ev::End if at_top => return false,
                Ev::End => depth -= 1,
                _ => {}
            }
            true
        })
        .scan(0usize, |depth, e| {
            let top = *depth == 0;
            match e {
                Ev::MappingStart(_) | Ev::SequenceStart(_) => *depth += 1,
                Ev::End => *depth -= 1,
                _ => {}
            }
            Some(top.then_some(e))
        })
        .flatten()
}

/// The document's events (after its start) are a mapping with `kind: ResourceList` and an
/// `items` sequence.
fn root_is_resource_list(evs: &[Ev]) -> Result<(), String> {
    if !matches!(evs.first(), Some(Ev::MappingStart(_))) {
        return Err("the document is not a mapping".into());
    }
    let top: Vec<&Ev> = entries(&evs[1..]).collect();
    let value_of = |key: &[u8]| {
        top.chunks(2).find_map(|kv| match kv {
            [Ev::Scalar { value, .. }, v] if value == key => Some(*v),
            _ => None,
        })
    };
    if !matches!(value_of(b"kind"), Some(Ev::Scalar { value, .. }) if value == b"ResourceList") {
        return Err("kind is not ResourceList".into());
    }
    if !matches!(value_of(b"items"), Some(Ev::SequenceStart(_))) {
        return Err("items is not a sequence".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_quoted_keys_are_renamed() {
        let text =
            "a:\n  \"<<\": x\n  <<: {m: 1}\n  s: '\"<<\": y'\n  b: [\"<<\"]\nc: {'<<': {k: v}}\n";
        let out = rename_quoted_merge_keys(text).unwrap();
        let key = LITERAL_MERGE_KEY;
        assert_eq!(
            out,
            format!(
                "a:\n  {key}: x\n  <<: {{m: 1}}\n  s: '\"<<\": y'\n  b: [\"<<\"]\nc: {{{key}: {{k: v}}}}\n"
            )
        );
        let mut v: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
        v.apply_merge().unwrap();
        assert_eq!(v["a"]["m"], 1);
        assert_eq!(v["a"]["\u{e000}<<"], "x");
        assert_eq!(v["c"]["\u{e000}<<"]["k"], "v");
        assert_eq!(rename_quoted_merge_keys("a: {<<: {b: 1}}\n"), None);
    }

    #[test]
    fn a_document_past_serde_yaml_alias_budget_is_checked_on_its_events() {
        let bomb = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n-\n  0: &l0\n  1: &l1 [*l0,*l0,*l0,*l0,*l0,*l0]\n  2: &l2 [*l1,*l1,*l1,*l1,*l1]\n  3: &l3 [*l2,*l2,*l2,*l2,*l2,*l2]\n  4: &l4 [*l3,*l3,*l3,*l3,*l3,*l3]\n  5: [*l4,*l4,*l4,*l4,*l4,*l4]\n";
        let serde = serde_yaml::from_str::<serde_yaml::Value>(bomb).unwrap_err();
        assert!(serde.to_string().contains("repetition limit exceeded"));
        assert_eq!(check_resource_list(bomb), Ok(()));
        let with = |extra: &str| format!("{bomb}{extra}");
        for (bad, why) in [
            (with("- {a: *nope}\n"), "names no anchor"),
            (with("- {<<: scalar}\n"), "merge keys do not apply"),
            (with("- {<<: [{a: 1}, *l1]}\n"), "merge keys do not apply"),
            (with("---\nkind: ResourceList\n"), "2 YAML documents"),
            (
                bomb.replace("kind: ResourceList", "kind: List"),
                "kind is not",
            ),
            (
                bomb.replace("items:\n-", "items: {}\nx:\n-"),
                "items is not",
            ),
        ] {
            let err = check_resource_list(&bad).unwrap_err();
            assert!(err.contains(why), "{err} (expected {why})");
        }
        let merges = with("- &m {a: 1}\n- {<<: *m, b: 2}\n- {<<: [*m, {c: 3}], '<<': x}\n");
        assert_eq!(check_resource_list(&merges), Ok(()));
    }
}

//! Quoted `"<<"` keys, which serde_yaml's `Value` cannot tell from merge keys.
//!
//! go-yaml (kubectl, kpt, kustomize) takes a `<<` key for a merge only when it is plain or tagged
//! `!!merge` (go-yaml/yaml@v3.0.1 `decode.go` `isMerge`, `yaml.go`: a quoted scalar resolves to
//! `!!str`); a quoted `"<<"` is an ordinary key. serde_yaml's `apply_merge` merges every key
//! `<<`, so before the oracle applies merges it renames each quoted one, found from libyaml's
//! events (positions, not text search, so nothing inside a scalar is touched).

use std::mem::MaybeUninit;

use unsafe_libyaml as unsafe_yaml;

/// What a quoted `"<<"` key is renamed to before merge keys are applied.
pub const LITERAL_MERGE_KEY: &str = "\"\\uE000<<\"";

/// `text` with every untagged quoted `"<<"` mapping key replaced by [`LITERAL_MERGE_KEY`];
/// `None` when there is none (or libyaml cannot read the text: serde_yaml will say why).
pub fn rename_quoted_merge_keys(text: &str) -> Option<String> {
    if !text.contains("<<") {
        return None;
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let skip = text.len() - body.len();
    let spans = quoted_merge_keys(body.as_bytes())?;
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

/// Byte ranges of the untagged, quoted `<<` scalars in key position.
fn quoted_merge_keys(input: &[u8]) -> Option<Vec<(usize, usize)>> {
    // Per open collection: is it a mapping, and how many nodes it has had so far.
    let mut open: Vec<(bool, usize)> = Vec::new();
    let mut spans = Vec::new();
    let mut parser = MaybeUninit::<unsafe_yaml::yaml_parser_t>::uninit();
    let mut event = MaybeUninit::<unsafe_yaml::yaml_event_t>::uninit();
    // SAFETY: the parser is initialized before use and deleted once; each event is deleted
    // after it is read; `input` outlives the parser.
    unsafe {
        let p = parser.as_mut_ptr();
        if unsafe_yaml::yaml_parser_initialize(p).fail {
            return None;
        }
        unsafe_yaml::yaml_parser_set_encoding(p, unsafe_yaml::YAML_UTF8_ENCODING);
        unsafe_yaml::yaml_parser_set_input_string(p, input.as_ptr(), input.len() as u64);
        let ok = loop {
            if unsafe_yaml::yaml_parser_parse(p, event.as_mut_ptr()).fail {
                break false;
            }
            let e = &*event.as_ptr();
            let mut node = false;
            let mut done = false;
            match e.type_ {
                unsafe_yaml::YAML_STREAM_END_EVENT => done = true,
                unsafe_yaml::YAML_SCALAR_EVENT => {
                    let s = &e.data.scalar;
                    let value = std::slice::from_raw_parts(s.value, s.length as usize);
                    let is_key = open.last().is_some_and(|&(map, n)| map && n % 2 == 0);
                    if is_key
                        && value == b"<<"
                        && s.tag.is_null()
                        && s.style != unsafe_yaml::YAML_PLAIN_SCALAR_STYLE
                    {
                        spans.push((e.start_mark.index as usize, e.end_mark.index as usize));
                    }
                    node = true;
                }
                unsafe_yaml::YAML_ALIAS_EVENT => node = true,
                unsafe_yaml::YAML_MAPPING_START_EVENT => open.push((true, 0)),
                unsafe_yaml::YAML_SEQUENCE_START_EVENT => open.push((false, 0)),
                unsafe_yaml::YAML_MAPPING_END_EVENT | unsafe_yaml::YAML_SEQUENCE_END_EVENT => {
                    open.pop();
                    node = true;
                }
                _ => {}
            }
            if node && let Some(top) = open.last_mut() {
                top.1 += 1;
            }
            unsafe_yaml::yaml_event_delete(event.as_mut_ptr());
            if done {
                break true;
            }
        };
        unsafe_yaml::yaml_parser_delete(p);
        ok.then_some(spans)
    }
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
}

//! The Go template forms sylva-units writes in `enabled_conditions` (and `depends_on` values),
//! evaluated as Helm's `tpl` and the chart's `interpret-as-bool` do, for the forms upstream uses on
//! `metallb`: `{{ or (.Values.a.b | eq "x") (.Values.c.d | eq "y") }}`, `and`, `not`, `ne`,
//! boolean and string literals, `.Values` fields, and `tuple . "<unit>" | include "unit-enabled"`.
//! Anything else (variables, `dig`, `has`, `index`, other helpers) is refused, never guessed.
//!
//! Semantics followed (Go `text/template`, `funcs.go`): `and`/`or` return the first falsy/truthy
//! argument (else the last), truth is "not the zero value", `eq` of two different kinds is an
//! error, `x | f a` calls `f a x`. Output: a boolean prints `true`/`false`, a missing value prints
//! nothing (Helm replaces `<no value>` with an empty string).

use std::fmt;

/// A template value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// A missing value (`nil`).
    Nil,
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
    /// The root context `.`.
    Dot,
    /// The result of `tuple`.
    List(Vec<Val>),
}

impl Val {
    fn truth(&self) -> bool {
        match self {
            Val::Nil => false,
            Val::Bool(b) => *b,
            Val::Str(s) => !s.is_empty(),
            Val::Dot => true,
            Val::List(l) => !l.is_empty(),
        }
    }

    /// What the action prints.
    pub fn print(&self) -> Result<String, String> {
        match self {
            Val::Nil => Ok(String::new()),
            Val::Bool(b) => Ok(b.to_string()),
            Val::Str(s) => Ok(s.clone()),
            Val::Dot | Val::List(_) => Err(format!("prints {self}, not a scalar")),
        }
    }
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Nil => write!(f, "nil"),
            Val::Bool(b) => write!(f, "{b}"),
            Val::Str(s) => write!(f, "{s:?}"),
            Val::Dot => write!(f, "."),
            Val::List(l) => write!(f, "a tuple of {}", l.len()),
        }
    }
}

/// What the evaluator asks of the model: `.Values` fields and `unit-enabled`.
pub trait Env {
    /// The value at a `.Values` path.
    fn field(&self, path: &[&str]) -> Result<Val, String>;
    /// The `unit-enabled` helper for a unit.
    fn unit_enabled(&self, unit: &str) -> Result<bool, String>;
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Open,
    Close,
    Pipe,
    Str(String),
    Ident(String),
    Field(Vec<String>),
    Dot,
}

/// The expression inside the single `{{ … }}` action that makes up `text`; `None` when the text
/// holds no action (a plain string).
pub fn action(text: &str) -> Result<Option<&str>, String> {
    let t = text.trim();
    let Some(start) = t.find("{{") else {
        return Ok(None);
    };
    let inner = t
        .strip_prefix("{{")
        .and_then(|s| s.strip_suffix("}}"))
        .filter(|s| start == 0 && !s.contains("{{") && !s.contains("}}"))
        .ok_or_else(|| "text around or between actions is not a form cutover models".to_string())?;
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let inner = inner.strip_suffix('-').unwrap_or(inner);
    Ok(Some(inner.trim()))
}

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let mut toks = Vec::new();
    let mut chars = src.char_indices().peekable();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '(' => toks.push(Tok::Open),
            ')' => toks.push(Tok::Close),
            '|' => toks.push(Tok::Pipe),
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, e @ ('"' | '\\'))) => s.push(e),
                            _ => return Err("unsupported escape in a string literal".into()),
                        },
                        Some((_, ch)) => s.push(ch),
                        None => return Err("unterminated string literal".into()),
                    }
                }
                toks.push(Tok::Str(s));
            }
            '.' => {
                let mut path = Vec::new();
                let mut seg = String::new();
                while let Some(&(_, ch)) = chars.peek() {
                    if word(ch) {
                        seg.push(ch);
                    } else if ch == '.' && !seg.is_empty() {
                        path.push(std::mem::take(&mut seg));
                    } else {
                        break;
                    }
                    chars.next();
                }
                if !seg.is_empty() {
                    path.push(seg);
                }
                toks.push(if path.is_empty() {
                    Tok::Dot
                } else {
                    Tok::Field(path)
                });
            }
            c if word(c) => {
                let mut end = i + c.len_utf8();
                while let Some(&(j, ch)) = chars.peek() {
                    if !word(ch) {
                        break;
                    }
                    end = j + ch.len_utf8();
                    chars.next();
                }
                toks.push(Tok::Ident(src[i..end].to_string()));
            }
            other => return Err(format!("unsupported character {other:?}")),
        }
    }
    Ok(toks)
}

/// The functions the evaluator implements.
const KNOWN: [&str; 7] = ["and", "or", "not", "eq", "ne", "tuple", "include"];

/// Parentheses deeper than this are refused (no upstream condition nests more than 3).
const MAX_NESTING: usize = 32;

struct Parser<'e> {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
    env: &'e dyn Env,
}

impl Parser<'_> {
    fn pipeline(&mut self) -> Result<Val, String> {
        let mut value = self.command(None)?;
        while self.toks.get(self.pos) == Some(&Tok::Pipe) {
            self.pos += 1;
            value = self.command(Some(value))?;
        }
        Ok(value)
    }

    /// One command: a function with its arguments (the piped value last), or a lone operand.
    fn command(&mut self, piped: Option<Val>) -> Result<Val, String> {
        if let Some(Tok::Ident(name)) = self.toks.get(self.pos).cloned()
            && !matches!(name.as_str(), "true" | "false" | "nil")
        {
            self.pos += 1;
            let mut args = Vec::new();
            while let Some(t) = self.toks.get(self.pos) {
                if matches!(t, Tok::Pipe | Tok::Close) {
                    break;
                }
                args.push(self.operand()?);
            }
            args.extend(piped);
            return self.call(&name, args);
        }
        if piped.is_some() {
            return Err("a value piped into something that is not a function".into());
        }
        self.operand()
    }

    fn operand(&mut self) -> Result<Val, String> {
        let tok = self
            .toks
            .get(self.pos)
            .cloned()
            .ok_or("unexpected end of the action")?;
        self.pos += 1;
        match tok {
            Tok::Open => {
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return Err(format!("parentheses nested deeper than {MAX_NESTING}"));
                }
                let v = self.pipeline()?;
                self.depth -= 1;
                if self.toks.get(self.pos) != Some(&Tok::Close) {
                    return Err("unbalanced parenthesis".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Tok::Str(s) => Ok(Val::Str(s)),
            Tok::Ident(i) if i == "true" || i == "false" => Ok(Val::Bool(i == "true")),
            Tok::Ident(i) if i == "nil" => Ok(Val::Nil),
            Tok::Dot => Ok(Val::Dot),
            Tok::Field(path) if path.first().map(String::as_str) == Some("Values") => {
                let keys: Vec<&str> = path[1..].iter().map(String::as_str).collect();
                self.env.field(&keys)
            }
            Tok::Field(path) => Err(format!(".{} is not a .Values field", path.join("."))),
            other => Err(format!("unexpected {other:?}")),
        }
    }

    fn call(&self, name: &str, args: Vec<Val>) -> Result<Val, String> {
        let arity = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!("{name} takes {n} argument(s), got {}", args.len()))
            }
        };
        match name {
            "and" | "or" if args.len() >= 2 => {
                let stop = |v: &Val| if name == "and" { !v.truth() } else { v.truth() };
                let last = args.len() - 1;
                Ok(args
                    .iter()
                    .position(stop)
                    .map_or_else(|| args[last].clone(), |i| args[i].clone()))
            }
            "not" => {
                arity(1)?;
                Ok(Val::Bool(!args[0].truth()))
            }
            "eq" | "ne" => {
                arity(2)?;
                let equal = match (&args[0], &args[1]) {
                    (Val::Str(a), Val::Str(b)) => a == b,
                    (Val::Bool(a), Val::Bool(b)) => a == b,
                    (Val::Nil, Val::Nil) => true,
                    (a, b) => {
                        return Err(format!("incompatible types for comparison: {a} and {b}"));
                    }
                };
                Ok(Val::Bool(equal == (name == "eq")))
            }
            "tuple" => Ok(Val::List(args)),
            "include" => match args.as_slice() {
                [Val::Str(helper), Val::List(t)] if helper == "unit-enabled" => {
                    match t.as_slice() {
                        [Val::Dot, Val::Str(unit)] => {
                            Ok(Val::Str(if self.env.unit_enabled(unit)? {
                                "true".into()
                            } else {
                                String::new()
                            }))
                        }
                        _ => Err("unit-enabled takes (tuple . \"<unit>\")".into()),
                    }
                }
                [Val::Str(helper), ..] => Err(format!("helper {helper:?} is not modelled")),
                _ => Err("include takes a helper name and its argument".into()),
            },
            other => Err(format!("function {other:?} is not modelled")),
        }
    }
}

/// Evaluates one action's expression.
pub fn eval(expr: &str, env: &dyn Env) -> Result<Val, String> {
    let toks = lex(expr)?;
    // Refuse unknown functions before any argument is evaluated, so the error names the form.
    for t in &toks {
        if let Tok::Ident(name) = t
            && !KNOWN.contains(&name.as_str())
            && !matches!(name.as_str(), "true" | "false" | "nil")
        {
            return Err(format!("function {name:?} is not modelled"));
        }
    }
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
        env,
    };
    let v = p.pipeline()?;
    if p.pos != p.toks.len() {
        return Err("tokens left after the expression".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl Env for Fixed {
        fn field(&self, path: &[&str]) -> Result<Val, String> {
            match path {
                ["cluster", "capi_providers", "infra_provider"] => Ok(Val::Str("capm3".into())),
                ["cluster", "capi_providers", "bootstrap_provider"] => Ok(Val::Str("cabpr".into())),
                ["flag"] => Ok(Val::Bool(true)),
                _ => Err(format!("no {}", path.join("."))),
            }
        }
        fn unit_enabled(&self, unit: &str) -> Result<bool, String> {
            Ok(unit == "on")
        }
    }

    fn run(text: &str) -> Result<String, String> {
        eval(action(text)?.unwrap(), &Fixed)?.print()
    }

    #[test]
    fn the_metallb_condition_and_its_parts() {
        let metallb = "{{ or (.Values.cluster.capi_providers.infra_provider | eq \"capd\")\n (.Values.cluster.capi_providers.bootstrap_provider | eq \"cabpr\") }}";
        assert_eq!(run(metallb).unwrap(), "true");
        assert_eq!(
            run("{{ .Values.cluster.capi_providers.infra_provider | eq \"capd\" }}").unwrap(),
            "false"
        );
        assert_eq!(
            run("{{ ne .Values.cluster.capi_providers.infra_provider \"capd\" }}").unwrap(),
            "true"
        );
        assert_eq!(
            run("{{- and .Values.flag (not .Values.flag) -}}").unwrap(),
            "false"
        );
        assert_eq!(
            run("{{ tuple . \"on\" | include \"unit-enabled\" }}").unwrap(),
            "true"
        );
        assert_eq!(
            run("{{ tuple . \"off\" | include \"unit-enabled\" }}").unwrap(),
            ""
        );
        // and/or return an operand, as Go does.
        assert_eq!(run("{{ or \"\" \"x\" }}").unwrap(), "x");
    }

    #[test]
    fn unknown_forms_are_refused() {
        for text in &[
            "{{ .Values.metallb | dig \"bgp_lbs\" dict | empty }}",
            "{{ $x := 1 }}",
            "{{ include \"other\" . }}",
            "a {{ true }}",
            "{{ true }}{{ false }}",
            "{{ eq .Values.flag \"true\" }}",
            "{{ (true }}",
            &format!(
                "{{{{ {}true{} }}}}",
                "(".repeat(100_000),
                ")".repeat(100_000)
            ),
        ] {
            assert!(run(text).is_err(), "{text}");
        }
        assert_eq!(action("plain").unwrap(), None);
    }
}

//! Small validated value types shared by the mode configurations.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// A duration written the way Flux and Kubernetes write them (Go `time.ParseDuration` subset
/// accepted by Flux: `^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`), e.g. `10m`, `1h30m`, `90s`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Duration {
    text: String,
    millis: u64,
}

impl Duration {
    /// Parses a duration; the error explains the expected form.
    pub fn parse(text: &str) -> Result<Self, String> {
        let millis = parse_millis(text).ok_or_else(|| {
            format!("invalid duration {text:?}: expected a Flux duration such as 90s, 10m or 1h30m")
        })?;
        Ok(Duration {
            text: text.to_owned(),
            millis,
        })
    }
    /// The duration as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
    /// Length in milliseconds.
    pub fn as_millis(&self) -> u64 {
        self.millis
    }
    /// Length in whole seconds, rounded up.
    pub fn as_secs_ceil(&self) -> u64 {
        self.millis.div_ceil(1000)
    }
}

fn parse_millis(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut total: f64 = 0.0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number = &text[start..i];
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
            return None;
        }
        if number.matches('.').count() > 1 {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        let unit_start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let factor = match &text[unit_start..i] {
            "ms" => 1.0,
            "s" => 1_000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        total += value * factor;
    }
    if !total.is_finite() || total > u64::MAX as f64 / 2.0 {
        return None;
    }
    Some(total.round() as u64)
}

impl TryFrom<String> for Duration {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Duration::parse(&value)
    }
}

impl From<Duration> for String {
    fn from(value: Duration) -> Self {
        value.text
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
        })
    }
    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flux_durations() {
        assert_eq!(Duration::parse("10m").unwrap().as_millis(), 600_000);
        assert_eq!(Duration::parse("1h30m").unwrap().as_millis(), 5_400_000);
        assert_eq!(Duration::parse("1.5s").unwrap().as_millis(), 1_500);
        assert_eq!(Duration::parse("250ms").unwrap().as_secs_ceil(), 1);
    }

    #[test]
    fn rejects_other_forms() {
        for bad in [
            "", "10", "m", "10 m", "1d", "-5s", ".5s", "5.s", "1.2.3s", "10M",
        ] {
            assert!(Duration::parse(bad).is_err(), "{bad:?}");
        }
    }
}

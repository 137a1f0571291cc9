//! Kubernetes' rules for names, as the API server applies them (k8s.io/apimachinery
//! `pkg/util/validation/validation.go`). A name the function writes into generated objects is
//! checked here first: a name the API server would refuse fails the apply anyway, and a long one
//! is copied into every object that names it.

/// Longest DNS-1123 label (`DNS1123LabelMaxLength`): namespaces, label values.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;

/// The rule [`is_namespace_name`] checks, as error messages state it.
pub const NAMESPACE_RULE: &str = "a DNS-1123 label (at most 63 lowercase letters, digits and '-', \
     starting and ending with a letter or digit), as the API server requires";

/// Whether `name` can be a namespace: a DNS-1123 label (at most 63 lowercase letters, digits
/// and `-`, starting and ending with a letter or digit), as the API server requires
/// (`pkg/api/validation/generic.go` `ValidateNamespaceName` = `NameIsDNSLabel`,
/// `pkg/util/validation/validation.go` `IsDNS1123Label`).
pub fn is_namespace_name(name: &str) -> bool {
    let b = name.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= DNS1123_LABEL_MAX_LENGTH
        && b.iter().all(inner)
        && b.first().is_some_and(end)
        && b.last().is_some_and(end)
}

#[cfg(test)]
mod tests {
    use super::is_namespace_name;

    #[test]
    fn namespace_names_as_the_api_server_reads_them() {
        for ok in ["a", "metallb-system", "ns-1", "0", &"a".repeat(63)] {
            assert!(is_namespace_name(ok), "{ok}");
        }
        let too_long = "a".repeat(64);
        for bad in [
            "",
            "-a",
            "a-",
            "A",
            "a.b",
            "a_b",
            "é",
            "a b",
            too_long.as_str(),
        ] {
            assert!(!is_namespace_name(bad), "{bad}");
        }
    }
}

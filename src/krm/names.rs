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

/// Longest DNS-1123 subdomain (`DNS1123SubdomainMaxLength`): the names of most objects.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

/// The rule [`is_object_name`] checks, as error messages state it.
pub const OBJECT_NAME_RULE: &str = "a DNS-1123 subdomain (at most 253 lowercase letters, digits, \
     '-' and '.', each dot-separated part starting and ending with a letter or digit), as the API \
     server requires";

/// Whether `name` can name an object whose kind takes DNS-1123 subdomains, as MetalLB's and
/// Cilium's custom resources do (`pkg/api/validation/generic.go` `NameIsDNSSubdomain`,
/// `pkg/util/validation/validation.go` `IsDNS1123Subdomain`): at most 253 characters, and
/// dot-separated parts of lowercase letters, digits and `-` that start and end with a letter or
/// digit.
pub fn is_object_name(name: &str) -> bool {
    let part = |p: &str| {
        let b = p.as_bytes();
        let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.iter().all(|c| end(c) || *c == b'-')
            && b.first().is_some_and(end)
            && b.last().is_some_and(end)
    };
    !name.is_empty() && name.len() <= DNS1123_SUBDOMAIN_MAX_LENGTH && name.split('.').all(part)
}

#[cfg(test)]
mod tests {
    use super::{is_namespace_name, is_object_name};

    #[test]
    fn object_names_as_the_api_server_reads_them() {
        let longest = format!("{}.{}", "a".repeat(126), "b".repeat(126));
        for ok in [
            "a",
            "l2-01",
            "pool.example.com",
            "0",
            "a-b.c-d",
            longest.as_str(),
        ] {
            assert!(is_object_name(ok), "{ok}");
        }
        let too_long = format!("{longest}a");
        for bad in [
            "",
            ".",
            "a.",
            ".a",
            "a..b",
            "a.-b",
            "a-.b",
            "-a",
            "A",
            "a_b",
            "a b",
            "line\nline",
            "é",
            too_long.as_str(),
        ] {
            assert!(!is_object_name(bad), "{bad:?}");
        }
    }

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

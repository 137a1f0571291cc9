//! Test support for the modes' `Check` lists: the names a mode's documentation gives, so that a
//! unit test can hold `Check::ALL` equal to them.

/// The first column of the table that follows the line `heading` in `doc` (the rows whose first
/// cell is a code span, after the header and separator rows that start `| check |`), in order.
pub fn table_first_column(doc: &str, heading: &str) -> Vec<String> {
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("the doc has a section {heading:?}"));
    let section = &doc[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |i| i + 1)];
    section
        .lines()
        .skip_while(|line| !line.starts_with("| check |"))
        .skip(2)
        .take_while(|line| line.starts_with("| `"))
        .map(|line| line.split('`').nth(1).expect("a check name").to_owned())
        .collect()
}

/// Asserts that `names` (a mode's `Check::ALL`, as strings) are the first column of the table
/// under `heading` in `doc`, in order, and that no name is given twice.
pub fn assert_documented(names: &[&str], doc: &str, heading: &str) {
    assert_eq!(
        table_first_column(doc, heading),
        names,
        "the {heading} table"
    );
    assert_distinct(names);
}

/// Panics if two of `names` are the same.
pub fn assert_distinct(names: &[&str]) {
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    for pair in sorted.windows(2) {
        assert_ne!(pair[0], pair[1], "a check name given twice");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_first_column_of_the_sections_table_only() {
        let doc = "# Mode\n\n## Checks\n\ntext\n\n| check | what |\n|---|---|\n| `a` | x |\n| `b-c` | y |\n\nafter\n\n## Next\n\n| check | what |\n|---|---|\n| `z` | no |\n";
        assert_eq!(table_first_column(doc, "## Checks"), ["a", "b-c"]);
    }

    #[test]
    #[should_panic(expected = "given twice")]
    fn a_name_given_twice_is_caught() {
        assert_distinct(&["a", "b", "a"]);
    }
}

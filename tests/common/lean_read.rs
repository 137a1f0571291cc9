//! The lean read's bookkeeping, checked the same way by every test of a read in part: an input
//! the reader refuses is refused with the plain read's error, and an input it reads builds in
//! part exactly the items the test expects.

use cutover::krm::io;
use cutover::modes;

/// How many items the lean read of `input` built in part, or its input error.
pub fn skipped(input: &str) -> Result<usize, String> {
    io::parse_text_observed(input, modes::prepare)
        .map(|(list, _)| list.skipped)
        .map_err(|e| format!("{e:?}"))
}

/// Checks the lean read of `input` against the plain read: the same input error, or `base +
/// more` items built in part when `expected` is `Some(more)`, or none when it is `None` (the
/// reader fell back to building every item). Returns whether the input was read.
pub fn check_items_read_in_part(
    name: &str,
    input: &str,
    base: usize,
    expected: Option<usize>,
) -> bool {
    let plain = io::parse_text(input)
        .map(|_| ())
        .map_err(|e| format!("{e:?}"));
    match (&plain, &skipped(input)) {
        (Err(want), Err(got)) => {
            assert_eq!(got, want, "{name}: the same input error");
            false
        }
        (Ok(()), Ok(n)) => {
            match expected {
                Some(more) => assert_eq!(*n, base + more, "{name}: items read in part"),
                None => assert_eq!(*n, 0, "{name}: read again building every item"),
            }
            true
        }
        (plain, lean) => panic!("{name}: plain {plain:?}, lean {lean:?}"),
    }
}

//! Shared pieces of the fuzz suites (`tests/fuzz_styles.rs`, `tests/fuzz_mutation.rs`): a small
//! seeded PRNG, the base documents (generated platforms and the examples as kpt hands them
//! over), the YAML style writer, and how a run of the function is checked.
//!
//! Both suites drive the function only through its public entry point
//! (`cutover::function::process`) and judge it with an oracle of their own (serde_yaml's
//! whole-document parse), so they keep working whatever the engine does inside.
#![allow(dead_code)] // each suite uses a different subset

pub mod bases;
pub mod bounds;
pub mod check;
pub mod events;
pub mod known;
pub mod mutate;
pub mod shrink;
pub mod style;
pub mod typed;

/// SplitMix64: tiny, seedable, the same on every platform.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// An integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }
    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, of: &'a [T]) -> &'a T {
        &of[self.below(of.len())]
    }
    /// An independent generator for sub-case `n` (so a case can be replayed from its number).
    pub fn fork(seed: u64, n: u64) -> Rng {
        let mut r = Rng(seed ^ n.wrapping_mul(0xA24B_AED4_963E_E407));
        r.next();
        r
    }
}

/// `FUZZ_SEED` (decimal or 0x-hex), else `default`.
pub fn seed_from_env(default: u64) -> u64 {
    match std::env::var("FUZZ_SEED") {
        Ok(s) => {
            let s = s.trim();
            s.strip_prefix("0x")
                .map(|h| u64::from_str_radix(h, 16))
                .unwrap_or_else(|| s.parse())
                .unwrap_or_else(|_| panic!("FUZZ_SEED={s:?} is not a number"))
        }
        Err(_) => default,
    }
}

/// `FUZZ_CASES`, else `default`.
pub fn cases_from_env(default: usize) -> usize {
    std::env::var("FUZZ_CASES")
        .ok()
        .map(|s| {
            s.trim()
                .replace('_', "")
                .parse()
                .expect("FUZZ_CASES is a number")
        })
        .unwrap_or(default)
}

/// `FUZZ_FIRST_CASE` (replay one case: with `FUZZ_CASES` one more), else 0.
pub fn first_case_from_env() -> usize {
    std::env::var("FUZZ_FIRST_CASE")
        .ok()
        .map(|s| s.trim().parse().expect("FUZZ_FIRST_CASE is a number"))
        .unwrap_or(0)
}

/// Where failing inputs are written for a human to look at (`target/fuzz-failures/`).
pub fn failure_dir() -> std::path::PathBuf {
    let dir = crate::common::root().join("target/fuzz-failures");
    std::fs::create_dir_all(&dir).expect("create target/fuzz-failures");
    dir
}

/// `s` cut to about `max` bytes (at a character boundary), saying how much was left out.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes]", &s[..end], s.len() - end)
}

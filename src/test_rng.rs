//! The one pseudo-random generator of the unit tests: Marsaglia's xorshift64, so a test that
//! draws thousands of random inputs draws the same ones on every run and every machine.

/// xorshift64 (shifts 13, 7, 17) from a fixed, non-zero seed.
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    /// The next 64 pseudo-random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A pseudo-random number below `n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> usize {
        (self.next_u64() % n) as usize
    }
}

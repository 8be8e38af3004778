//! Helpers of the unit tests.

/// A deterministic pseudo-random sequence (xorshift64) for mutation tests: the same seed gives
/// the same mutants on every run.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed.max(1);
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

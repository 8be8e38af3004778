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

/// A resolved location of `sym` in the file `app` at 0x1000, for output tests.
pub(crate) fn loc(sym: &str) -> crate::symbol::symbolizer::Loc {
    crate::symbol::symbolizer::Loc {
        addr: 0x1000,
        kernel: false,
        dso: "app".into(),
        file_addr: 0,
        sym: Some(sym.into()),
        sym_offset: 0,
        frames: Vec::new(),
        unresolved: None,
        rel_addr: 0,
        dso_path: std::sync::Arc::default(),
    }
}

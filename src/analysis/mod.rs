//! From resolved samples to numbers: histograms by sort key, TopDown attribution from
//! group-read deltas, retire-latency statistics.
//!
//! [`replay`] is the converter, the one place that knows record kinds: records in time order
//! become samples of interned ids (the replay pairs switch records into off-CPU intervals
//! with [`crate::offcpu`], which the recorder shares). [`profile`] folds them into compact
//! groups (with [`rows`], a report's locations merged into its rows as they stream by),
//! [`hist`] makes the tables by sort key ([`memkeys`] the memory keys, [`timefilter`] perf's
//! `--time`), [`diff`] compares the tables of two recordings as perf diff does, [`top`]
//! decays them across refreshes as perf top does, [`callgraph`] merges the call chains under
//! each row, [`annotate`] and [`typeannotate`] attribute samples to instructions and to data
//! types, [`topdown`] and [`latency`] hold the domain rules for the two hardware-specific
//! columns, [`metrics`] Intel's metrics per row from `record --td-level`'s groups,
//! [`threads`] sums the per-thread counts of `record -s`, and [`c2c`] finds the
//! cache lines that bounce between cores (perf c2c).
//!
//! What is computed here holds aggregates, never one entry per sample; how it prints is
//! `crate::output`'s.

pub mod annotate;
pub mod c2c;
pub mod callgraph;
pub mod diff;
pub mod hist;
pub mod latency;
pub mod memkeys;
pub mod metrics;
pub mod profile;
pub mod replay;
pub mod rows;
pub mod threads;
pub mod timefilter;
pub mod top;
pub mod topdown;
pub mod tracetext;
pub mod typeannotate;

/// A fast, non-cryptographic hasher for the report's interning maps (keys are addresses and
/// small ids that hrec itself produced, so SipHash's flooding resistance buys nothing and
/// costs a large share of the per-sample time). The multiply-rotate mix of rustc's FxHasher.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u16(&mut self, v: u16) {
        self.write_u64(u64::from(v));
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;

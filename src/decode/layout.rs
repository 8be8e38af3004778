//! The parts of an attr that decide how its records are laid out.

use crate::event::Attr;
use crate::event::attr::{flag, sample};

/// `PERF_SAMPLE_BRANCH_*` bits of `branch_sample_type` that change the record layout.
pub mod branch {
    /// `PERF_SAMPLE_BRANCH_HW_INDEX`: a `hw_idx` u64 follows the branch stack's `nr`.
    pub const HW_INDEX: u64 = 1 << 17;
    /// `PERF_SAMPLE_BRANCH_COUNTERS`: `nr` u64 counter words follow the branch entries.
    pub const COUNTERS: u64 = 1 << 19;
}

/// How the records of one attr are laid out.
///
/// Everything here comes from the attr; two attrs with equal layouts decode the same bytes the
/// same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    /// `sample_type`: which SAMPLE fields (and which sample_id trailer fields) are present.
    pub sample_type: u64,
    /// `read_format`: the layout of READ values.
    pub read_format: u64,
    /// Registers per REGS_USER block: `popcount(sample_regs_user)`.
    pub regs_user: u32,
    /// Registers per REGS_INTR block: `popcount(sample_regs_intr)`.
    pub regs_intr: u32,
    /// `branch_sample_type` has HW_INDEX: the branch stack carries `hw_idx`.
    pub branch_hw_index: bool,
    /// `branch_sample_type` has COUNTERS: the branch entries are followed by one u64 of
    /// counter bits per entry (the kernel's `br_stack_cntr`, `nr * sizeof(u64)` bytes).
    pub branch_counters: bool,
    /// `sample_id_all`: every record other than SAMPLE ends with the sample_id trailer.
    pub sample_id_all: bool,
    /// A fixed period (not frequency mode) whose samples carry no PERIOD: each stands for
    /// `sample_period` events, the period perf gives them (`evsel__parse_sample` starts from
    /// the attr's; `-e page-faults -c 1`, hrec's own `record -c N`).
    pub fixed_period: Option<u64>,
}

impl Layout {
    /// The layout of `attr`'s records.
    pub fn from_attr(attr: &Attr) -> Layout {
        Layout {
            sample_type: attr.sample_type,
            read_format: attr.read_format,
            regs_user: attr.sample_regs_user.count_ones(),
            regs_intr: attr.sample_regs_intr.count_ones(),
            branch_hw_index: attr.branch_sample_type & branch::HW_INDEX != 0,
            branch_counters: attr.branch_sample_type & branch::COUNTERS != 0,
            sample_id_all: attr.has(flag::SAMPLE_ID_ALL),
            fixed_period: (!attr.has(flag::FREQ)
                && attr.sample_type & sample::PERIOD == 0
                && attr.sample_period_or_freq > 0)
                .then_some(attr.sample_period_or_freq),
        }
    }

    /// Whether `sample_type` has all bits of `bit`.
    pub fn has(&self, bit: u64) -> bool {
        self.sample_type & bit == bit
    }

    /// Bytes of the sample_id trailer on non-SAMPLE records (0 without `sample_id_all`).
    pub fn trailer_size(&self) -> usize {
        if !self.sample_id_all {
            return 0;
        }
        [
            sample::TID,
            sample::TIME,
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::IDENTIFIER,
        ]
        .iter()
        .filter(|&&b| self.has(b))
        .count()
            * 8
    }

    /// Byte offset (from the start of the record, header included) of the event id in a
    /// SAMPLE: right after the header with IDENTIFIER, else after IP/TID/TIME/ADDR with ID.
    pub fn sample_id_offset(&self) -> Option<usize> {
        if self.has(sample::IDENTIFIER) {
            return Some(8);
        }
        if !self.has(sample::ID) {
            return None;
        }
        let before = [sample::IP, sample::TID, sample::TIME, sample::ADDR]
            .iter()
            .filter(|&&b| self.has(b))
            .count();
        Some(8 + 8 * before)
    }

    /// Byte offset of TIME in a SAMPLE (after IDENTIFIER, IP and TID); `None` without TIME.
    pub fn sample_time_offset(&self) -> Option<usize> {
        if !self.has(sample::TIME) {
            return None;
        }
        let before = [sample::IDENTIFIER, sample::IP, sample::TID]
            .iter()
            .filter(|&&b| self.has(b))
            .count();
        Some(8 + 8 * before)
    }

    /// Distance from the end of a non-SAMPLE record to its TIME in the sample_id trailer
    /// (TID comes before it); `None` without `sample_id_all` or without TIME.
    pub fn trailer_time_from_end(&self) -> Option<usize> {
        if !self.sample_id_all || !self.has(sample::TIME) {
            return None;
        }
        let tid = if self.has(sample::TID) { 8 } else { 0 };
        Some(self.trailer_size() - tid)
    }

    /// Distance from the end of a non-SAMPLE record to the start of its event id: 8 with
    /// IDENTIFIER (the last u64), else past CPU and STREAM_ID with ID. `None` without
    /// `sample_id_all` or without either id bit.
    pub fn trailer_id_from_end(&self) -> Option<usize> {
        if !self.sample_id_all {
            return None;
        }
        if self.has(sample::IDENTIFIER) {
            return Some(8);
        }
        if !self.has(sample::ID) {
            return None;
        }
        let after = [sample::STREAM_ID, sample::CPU]
            .iter()
            .filter(|&&b| self.has(b))
            .count();
        Some(8 + 8 * after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_registers_and_branch_bits() {
        let mut a = Attr {
            sample_regs_user: 0xff0f,
            sample_regs_intr: 1 << 63,
            branch_sample_type: branch::HW_INDEX | branch::COUNTERS | 1,
            ..Attr::default()
        };
        a.set(flag::SAMPLE_ID_ALL, true);
        let l = Layout::from_attr(&a);
        assert_eq!((l.regs_user, l.regs_intr), (12, 1));
        assert!(l.branch_hw_index && l.branch_counters && l.sample_id_all);
    }

    #[test]
    fn id_positions() {
        let mut l = Layout {
            sample_type: sample::IP | sample::TID | sample::ID | sample::CPU | sample::STREAM_ID,
            sample_id_all: true,
            ..Layout::default()
        };
        assert_eq!(l.sample_id_offset(), Some(24));
        assert_eq!(l.trailer_id_from_end(), Some(24));
        assert_eq!(l.trailer_size(), 32);
        l.sample_type |= sample::IDENTIFIER;
        assert_eq!(l.sample_id_offset(), Some(8));
        assert_eq!(l.trailer_id_from_end(), Some(8));
        l.sample_id_all = false;
        assert_eq!(l.trailer_id_from_end(), None);
        assert_eq!(l.trailer_size(), 0);
        l.sample_type = sample::IP;
        assert_eq!(l.sample_id_offset(), None);
    }
}

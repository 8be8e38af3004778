//! Frame-pointer call chains (`-g`): the share that walked into garbage.
//!
//! For `-g` the kernel walks the user stack by frame pointers: from the sampled `rbp`, each
//! frame's saved `rbp` and return address. Code built without frame pointers (distribution
//! libraries, Rust release builds, `-O2` C on x86-64) uses `rbp` as an ordinary register, so
//! the walk reads whatever it points at as frames: its "return addresses" are counters, heap
//! and stack pointers. perf prints them silently as `[unknown]` callers; hrec counts the
//! samples whose chain reaches such an address and says so, with the fix, when they are most
//! of them ([`FpChains::line`]).
//!
//! The rule, shared by the recorder (`record::chains`, against the mappings it has seen in the
//! ring buffers) and the report (`analysis::replay`, against `symbol::maps`):
//!
//! * Only the user part of a chain counts: the entries after `PERF_CONTEXT_USER` (or all
//!   entries up to a marker when a user-mode sample's chain has none), other than its first,
//!   which is the user instruction pointer (the sample's own, or where the kernel was
//!   entered), not a frame the walk found. Kernel frames and the markers never count.
//! * An entry reaches garbage when no mapping of the sample's process holds it. The mappings
//!   are the ones the recording knows of, its MMAP/MMAP2 records (executable code, unless
//!   recorded with `-d`), which is where every return address of a sound walk points.
//! * The callers decide whether to look at a sample: only frame-pointer chains (not
//!   `--call-graph dwarf`, whose user part hrec unwinds itself), and only samples of a process
//!   whose mappings are known (a process whose `/proc/PID/maps` could not be read would
//!   otherwise count as garbage).

use crate::decode::context;

/// A recording needs this many samples with user-space call chains before a share is
/// reported: below it a few startup samples in code without frame pointers (the dynamic
/// loader's) would make the whole recording look broken.
pub const MIN_CHAINS: u64 = 50;

/// Where the user part of one chain leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The chain has no user part (a kernel thread, a chain cut in the kernel).
    NoUser,
    /// Every user entry is inside a mapping of the process.
    Mapped,
    /// The user entry at this index of the chain (markers included) is outside every mapping.
    Outside(usize),
}

/// Walks the user part of `chain` (innermost first, with the kernel's context markers);
/// `kernel_mode` is the sample's cpumode (a chain without markers is then all kernel).
/// `find` gives the mapping `(start, end)` of the process that holds an address; the last one
/// found is tried first, so a run of frames in one binary costs one lookup.
pub fn reach(
    chain: impl IntoIterator<Item = u64>,
    kernel_mode: bool,
    mut find: impl FnMut(u64) -> Option<(u64, u64)>,
) -> Reach {
    let mut user = !kernel_mode;
    let mut first = true;
    let mut seen_user = false;
    let mut last: Option<(u64, u64)> = None;
    for (i, a) in chain.into_iter().enumerate() {
        if context::is_marker(a) {
            user = a == context::USER;
            first = true;
            continue;
        }
        if !user {
            continue;
        }
        seen_user = true;
        if first {
            first = false;
            continue;
        }
        if last.is_some_and(|(s, e)| s <= a && a < e) {
            continue;
        }
        match find(a) {
            Some(m) => last = Some(m),
            None => return Reach::Outside(i),
        }
    }
    if seen_user {
        Reach::Mapped
    } else {
        Reach::NoUser
    }
}

/// Samples with user-space frame-pointer chains, and how many of those reach an address
/// outside any mapping of their process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FpChains {
    /// Samples whose chain has a user part.
    pub chains: u64,
    /// Those whose user part reaches an address outside every mapping.
    pub outside: u64,
}

impl FpChains {
    /// Counts one chain.
    pub fn add(&mut self, r: Reach) {
        match r {
            Reach::NoUser => {}
            Reach::Mapped => self.chains += 1,
            Reach::Outside(_) => {
                self.chains += 1;
                self.outside += 1;
            }
        }
    }

    /// Adds another count (a switched recording's files).
    pub fn absorb(&mut self, o: &FpChains) {
        self.chains += o.chains;
        self.outside += o.outside;
    }

    /// The one line saying that most chains are garbage, with the measured share and the fix:
    /// only when more than half of at least [`MIN_CHAINS`] chains reach outside the mappings.
    pub fn line(&self) -> Option<String> {
        if self.chains < MIN_CHAINS || self.outside * 2 <= self.chains {
            return None;
        }
        Some(format!(
            "{:.1}% of the {} user-space call chains reach addresses outside any mapping \
             (code built without frame pointers?): record with --call-graph dwarf, or build \
             with -fno-omit-frame-pointer",
            100.0 * self.outside as f64 / self.chains as f64,
            self.chains
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = context::KERNEL;
    const U: u64 = context::USER;

    fn find(a: u64) -> Option<(u64, u64)> {
        [(0x1000, 0x2000), (0x7000, 0x8000)]
            .into_iter()
            .find(|&(s, e)| s <= a && a < e)
    }

    #[test]
    fn only_user_entries_after_the_user_ip_count() {
        // The user IP itself (0x10) is not a frame the walk found.
        assert_eq!(reach([U, 0x10, 0x1100, 0x7100], false, find), Reach::Mapped);
        assert_eq!(
            reach([U, 0x1000, 0x1100, 0x30], false, find),
            Reach::Outside(3)
        );
        // Kernel frames (unmapped in the process) never count.
        assert_eq!(
            reach([K, 0xffff_ffff_8100_0000, U, 0x1010, 0x7010], true, find),
            Reach::Mapped
        );
        assert_eq!(reach([K, 0xffff_ffff_8100_0000], true, find), Reach::NoUser);
        // Without markers: the cpumode says which part it is.
        assert_eq!(reach([0x1010, 0x5], false, find), Reach::Outside(1));
        assert_eq!(
            reach([0xffff_ffff_8100_0000, 0x5], true, find),
            Reach::NoUser
        );
        // A chain of the user IP alone has a user part and nothing outside.
        assert_eq!(reach([U, 0x99], false, find), Reach::Mapped);
    }

    #[test]
    fn frames_in_the_last_mapping_are_not_looked_up_again() {
        let mut lookups = 0;
        let r = reach([U, 0x1000, 0x1100, 0x1200, 0x1300, 0x7100], false, |a| {
            lookups += 1;
            find(a)
        });
        assert_eq!((r, lookups), (Reach::Mapped, 2));
    }

    #[test]
    fn the_line_needs_more_than_half_of_enough_chains() {
        let c = |chains, outside| FpChains { chains, outside }.line();
        assert_eq!(c(100, 50), None);
        assert_eq!(c(MIN_CHAINS - 1, MIN_CHAINS - 1), None);
        let l = c(200, 174).unwrap();
        assert!(
            l.starts_with(
                "87.0% of the 200 user-space call chains reach addresses outside any mapping"
            ),
            "{l}"
        );
        assert!(l.contains("--call-graph dwarf") && l.contains("-fno-omit-frame-pointer"));
        let mut f = FpChains::default();
        for r in [Reach::NoUser, Reach::Mapped, Reach::Outside(2)] {
            f.add(r);
        }
        assert_eq!(
            f,
            FpChains {
                chains: 2,
                outside: 1
            }
        );
        f.absorb(&FpChains {
            chains: 3,
            outside: 3,
        });
        assert_eq!(
            f,
            FpChains {
                chains: 5,
                outside: 4
            }
        );
    }
}

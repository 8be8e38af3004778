//! `union perf_mem_data_src`: where a sampled memory access was served from, decoded field by
//! field and named as perf 6.1 names the fields in `perf report --sort mem,snoop,tlb,locked,
//! blocked` and `perf script -F data_src`.
//!
//! **The layout** is the kernel's (`include/uapi/linux/perf_event.h`), one u64 written for
//! `PERF_SAMPLE_DATA_SRC`, bit fields from bit 0:
//!
//! | field | bits | values |
//! | --- | --- | --- |
//! | `mem_op` | 0..5 | NA 1, LOAD 2, STORE 4, PFETCH 8, EXEC 16 |
//! | `mem_lvl` | 5..19 | NA, HIT, MISS, L1, LFB, L2, L3, LOC_RAM, REM_RAM1, REM_RAM2, REM_CCE1, REM_CCE2, IO, UNC (one bit each) |
//! | `mem_snoop` | 19..24 | NA, NONE, HIT, MISS, HITM |
//! | `mem_lock` | 24..26 | NA, LOCKED |
//! | `mem_dtlb` | 26..33 | NA, HIT, MISS, L1, L2, WK (walker), OS (fault handler) |
//! | `mem_lvl_num` | 33..37 | a number: L1..L4 1-4, CXL 9, IO 10, ANY_CACHE 11, LFB 12, RAM 13, PMEM 14, NA 15 |
//! | `mem_remote` | 37 | remote |
//! | `mem_snoopx` | 38..40 | FWD, PEER |
//! | `mem_blk` | 40..43 | NA, DATA (data could not be forwarded), ADDR (address conflict) |
//! | `mem_hops` | 43..46 | 1 remote core same node, 2 remote node same socket, 3 remote socket same board, 4 remote board |
//!
//! A sample without the field (or with zero) means "not available" for every part.
//!
//! **Names.** Each field prints as perf 6.1 prints it (`tools/perf/util/mem-events.c`, facts
//! only): bit sets joined with ` or ` and ` hit`/` miss` appended; the level is the old
//! `mem_lvl` bits (or, with `mem_hops`, the hop distance) followed by the `mem_lvl_num` level,
//! after `Remote ` when `mem_remote` is set; a snoop lists `mem_snoop` then `mem_snoopx`;
//! `blocked` keeps perf's leading space per reason.
//!
//! **Where hrec differs from perf 6.1**: perf *groups* `--sort mem` rows by the `mem_lvl` bits
//! alone and `--sort snoop` rows by `mem_snoop` alone, so accesses that differ only in
//! `mem_lvl_num`, `mem_remote`, `mem_hops` or `mem_snoopx` (a remote-cache HITM load beside a
//! remote-RAM load of the same old level bits) share one row named after whichever came first.
//! hrec keys these rows by the whole name, which covers every field the name is made of.

use std::fmt::Write as _;

/// `mem_op` values.
pub mod op {
    /// Not available.
    pub const NA: u64 = 0x01;
    /// A load.
    pub const LOAD: u64 = 0x02;
    /// A store.
    pub const STORE: u64 = 0x04;
    /// A prefetch.
    pub const PFETCH: u64 = 0x08;
    /// Code (execution).
    pub const EXEC: u64 = 0x10;
}

/// `mem_lvl` bits.
pub mod lvl {
    /// Not available.
    pub const NA: u64 = 0x01;
    /// Hit at the level.
    pub const HIT: u64 = 0x02;
    /// Miss at the level.
    pub const MISS: u64 = 0x04;
    /// L1.
    pub const L1: u64 = 0x08;
    /// Line fill buffer.
    pub const LFB: u64 = 0x10;
    /// L2.
    pub const L2: u64 = 0x20;
    /// L3.
    pub const L3: u64 = 0x40;
    /// Local DRAM.
    pub const LOC_RAM: u64 = 0x80;
    /// Remote DRAM, 1 hop.
    pub const REM_RAM1: u64 = 0x100;
    /// Remote DRAM, 2 hops.
    pub const REM_RAM2: u64 = 0x200;
    /// Remote cache, 1 hop.
    pub const REM_CCE1: u64 = 0x400;
    /// Remote cache, 2 hops.
    pub const REM_CCE2: u64 = 0x800;
    /// I/O memory.
    pub const IO: u64 = 0x1000;
    /// Uncached memory.
    pub const UNC: u64 = 0x2000;
}

/// `mem_lvl_num` values.
pub mod lvlnum {
    /// L1.
    pub const L1: u64 = 0x01;
    /// L2.
    pub const L2: u64 = 0x02;
    /// L3.
    pub const L3: u64 = 0x03;
    /// L4.
    pub const L4: u64 = 0x04;
    /// CXL.
    pub const CXL: u64 = 0x09;
    /// I/O.
    pub const IO: u64 = 0x0a;
    /// Any cache.
    pub const ANY_CACHE: u64 = 0x0b;
    /// Line fill buffer.
    pub const LFB: u64 = 0x0c;
    /// RAM.
    pub const RAM: u64 = 0x0d;
    /// Persistent memory.
    pub const PMEM: u64 = 0x0e;
    /// Not available.
    pub const NA: u64 = 0x0f;
}

/// `mem_snoop` bits.
pub mod snoop {
    /// Not available.
    pub const NA: u64 = 0x01;
    /// No snoop.
    pub const NONE: u64 = 0x02;
    /// Snoop hit.
    pub const HIT: u64 = 0x04;
    /// Snoop miss.
    pub const MISS: u64 = 0x08;
    /// Snoop hit a modified line.
    pub const HITM: u64 = 0x10;
}

/// `mem_snoopx` bits.
pub mod snoopx {
    /// Forwarded.
    pub const FWD: u64 = 0x01;
    /// Transferred from a peer.
    pub const PEER: u64 = 0x02;
}

/// `mem_lock` bits.
pub mod lock {
    /// Not available.
    pub const NA: u64 = 0x01;
    /// A locked transaction.
    pub const LOCKED: u64 = 0x02;
}

/// `mem_dtlb` bits.
pub mod tlb {
    /// Not available.
    pub const NA: u64 = 0x01;
    /// Hit.
    pub const HIT: u64 = 0x02;
    /// Miss.
    pub const MISS: u64 = 0x04;
    /// L1 TLB.
    pub const L1: u64 = 0x08;
    /// L2 TLB.
    pub const L2: u64 = 0x10;
    /// Hardware walker.
    pub const WK: u64 = 0x20;
    /// OS fault handler.
    pub const OS: u64 = 0x40;
}

/// `mem_blk` bits.
pub mod blk {
    /// Not available.
    pub const NA: u64 = 0x01;
    /// Data could not be forwarded.
    pub const DATA: u64 = 0x02;
    /// Address conflict.
    pub const ADDR: u64 = 0x04;
}

/// `mem_hops` values.
pub mod hops {
    /// Remote core, same node.
    pub const CORE: u64 = 0x01;
    /// Remote node, same socket.
    pub const NODE: u64 = 0x02;
    /// Remote socket, same board.
    pub const SOCKET: u64 = 0x03;
    /// Remote board.
    pub const BOARD: u64 = 0x04;
}

/// Each field's first bit and width.
mod shift {
    pub const OP: (u32, u32) = (0, 5);
    pub const LVL: (u32, u32) = (5, 14);
    pub const SNOOP: (u32, u32) = (19, 5);
    pub const LOCK: (u32, u32) = (24, 2);
    pub const TLB: (u32, u32) = (26, 7);
    pub const LVLNUM: (u32, u32) = (33, 4);
    pub const REMOTE: (u32, u32) = (37, 1);
    pub const SNOOPX: (u32, u32) = (38, 2);
    pub const BLK: (u32, u32) = (40, 3);
    pub const HOPS: (u32, u32) = (43, 3);
}

/// The names of the `mem_lvl` bits, from bit 0 (perf's `mem_lvl` table).
const LVL_NAMES: [&str; 14] = [
    "N/A",
    "HIT",
    "MISS",
    "L1",
    "LFB/MAB",
    "L2",
    "L3",
    "Local RAM",
    "Remote RAM (1 hop)",
    "Remote RAM (2 hops)",
    "Remote Cache (1 hop)",
    "Remote Cache (2 hops)",
    "I/O",
    "Uncached",
];

/// The names of the `mem_snoop` bits, from bit 0.
const SNOOP_NAMES: [&str; 5] = ["N/A", "None", "Hit", "Miss", "HitM"];

/// The names of the `mem_snoopx` bits, from bit 0.
const SNOOPX_NAMES: [&str; 2] = ["Fwd", "Peer"];

/// The names of the `mem_dtlb` bits, from bit 0.
const TLB_NAMES: [&str; 7] = ["N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"];

/// The hop distances, by `mem_hops` (0 prints nothing).
const HOPS_NAMES: [&str; 5] = [
    "N/A",
    "core, same node",
    "node, same socket",
    "socket, same board",
    "board",
];

/// A sample's `perf_mem_data_src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataSrc(pub u64);

impl Default for DataSrc {
    fn default() -> Self {
        DataSrc::NONE
    }
}

impl DataSrc {
    /// What a sample without `PERF_SAMPLE_DATA_SRC` stands for, as perf reads it
    /// (`PERF_MEM_DATA_SRC_NONE`), and what the kernel writes for software events: op, level,
    /// snoop, lock, TLB and level number each "not available". A value of 0 is not the same:
    /// perf names its op and lock `No`.
    pub const NONE: DataSrc = DataSrc(0x1e05080021);

    /// Builds a value from its fields (each masked to its width).
    #[allow(clippy::too_many_arguments)]
    pub fn from_fields(
        op: u64,
        lvl: u64,
        snoop: u64,
        lock: u64,
        dtlb: u64,
        lvl_num: u64,
        remote: bool,
        snoopx: u64,
        blk: u64,
        hops: u64,
    ) -> DataSrc {
        let put = |(at, w): (u32, u32), v: u64| (v & ((1 << w) - 1)) << at;
        DataSrc(
            put(shift::OP, op)
                | put(shift::LVL, lvl)
                | put(shift::SNOOP, snoop)
                | put(shift::LOCK, lock)
                | put(shift::TLB, dtlb)
                | put(shift::LVLNUM, lvl_num)
                | put(shift::REMOTE, u64::from(remote))
                | put(shift::SNOOPX, snoopx)
                | put(shift::BLK, blk)
                | put(shift::HOPS, hops),
        )
    }

    fn field(self, (at, w): (u32, u32)) -> u64 {
        (self.0 >> at) & ((1 << w) - 1)
    }

    /// `mem_op`.
    pub fn op(self) -> u64 {
        self.field(shift::OP)
    }
    /// `mem_lvl`.
    pub fn lvl(self) -> u64 {
        self.field(shift::LVL)
    }
    /// `mem_snoop`.
    pub fn snoop(self) -> u64 {
        self.field(shift::SNOOP)
    }
    /// `mem_lock`.
    pub fn lock(self) -> u64 {
        self.field(shift::LOCK)
    }
    /// `mem_dtlb`.
    pub fn dtlb(self) -> u64 {
        self.field(shift::TLB)
    }
    /// `mem_lvl_num`.
    pub fn lvl_num(self) -> u64 {
        self.field(shift::LVLNUM)
    }
    /// `mem_remote`.
    pub fn remote(self) -> bool {
        self.field(shift::REMOTE) != 0
    }
    /// `mem_snoopx`.
    pub fn snoopx(self) -> u64 {
        self.field(shift::SNOOPX)
    }
    /// `mem_blk`.
    pub fn blk(self) -> u64 {
        self.field(shift::BLK)
    }
    /// `mem_hops`.
    pub fn hops(self) -> u64 {
        self.field(shift::HOPS)
    }

    /// The kind of access (perf script's `OP`): `N/A`, `LOAD`, `STORE`, `PFETCH`, `EXEC`, else
    /// `No`.
    pub fn op_name(self) -> &'static str {
        let m = self.op();
        if m & op::NA != 0 {
            "N/A"
        } else if m & op::LOAD != 0 {
            "LOAD"
        } else if m & op::STORE != 0 {
            "STORE"
        } else if m & op::PFETCH != 0 {
            "PFETCH"
        } else if m & op::EXEC != 0 {
            "EXEC"
        } else {
            "No"
        }
    }

    /// Where the access was served (`--sort mem`): `L1 hit`, `LFB or L2 hit`, `Remote Cache
    /// (1 hop) hit`, `Remote node, same socket Any cache hit`, `N/A or N/A`...
    pub fn mem_name(self) -> String {
        let m = self.lvl();
        let (hit, miss) = (m & lvl::HIT != 0, m & lvl::MISS != 0);
        let bits = m & !(lvl::HIT | lvl::MISS);
        let mut out = String::new();
        let mut printed = 0;
        if self.remote() {
            out.push_str("Remote ");
        }
        let hops = self.hops();
        if hops != 0 {
            match HOPS_NAMES.get(hops as usize) {
                Some(h) => out.push_str(h),
                None => out.push_str("N/A"),
            }
            out.push(' ');
        } else {
            for (i, name) in LVL_NAMES.iter().enumerate() {
                if bits & (1 << i) == 0 {
                    continue;
                }
                if printed > 0 {
                    out.push_str(" or ");
                }
                printed += 1;
                out.push_str(name);
            }
        }
        let num = self.lvl_num();
        if num != 0 {
            if printed > 0 {
                out.push_str(" or ");
            }
            match lvl_num_name(num) {
                Some(n) => out.push_str(n),
                None => {
                    let _ = write!(out, "L{num}");
                }
            }
        }
        if out.is_empty() {
            out.push_str("N/A");
        }
        if hit {
            out.push_str(" hit");
        }
        if miss {
            out.push_str(" miss");
        }
        out
    }

    /// The snoop (`--sort snoop`): `mem_snoop` bits then `mem_snoopx` bits, joined with
    /// ` or `; `N/A` when none.
    pub fn snoop_name(self) -> String {
        let m = self.snoop();
        let mut parts: Vec<&str> = bit_names(m, &SNOOP_NAMES);
        parts.extend(bit_names(self.snoopx(), &SNOOPX_NAMES));
        if parts.is_empty() {
            "N/A".to_string()
        } else {
            parts.join(" or ")
        }
    }

    /// The data TLB (`--sort tlb`): `L1 or L2 hit`, `Walker miss`, `N/A`...
    pub fn tlb_name(self) -> String {
        let m = self.dtlb();
        let parts = bit_names(m & !(tlb::HIT | tlb::MISS), &TLB_NAMES);
        let mut out = if parts.is_empty() {
            "N/A".to_string()
        } else {
            parts.join(" or ")
        };
        if m & tlb::HIT != 0 {
            out.push_str(" hit");
        }
        if m & tlb::MISS != 0 {
            out.push_str(" miss");
        }
        out
    }

    /// A locked access (`--sort locked`): `N/A`, `Yes` or `No`.
    pub fn locked_name(self) -> &'static str {
        let m = self.lock();
        if m & lock::NA != 0 {
            "N/A"
        } else if m & lock::LOCKED != 0 {
            "Yes"
        } else {
            "No"
        }
    }

    /// Why the access was blocked (`--sort blocked`), each reason after a space as perf
    /// prints them: ` N/A`, ` Data`, ` Addr`, ` Data Addr`.
    pub fn blocked_name(self) -> String {
        let m = self.blk();
        if m == 0 || m & blk::NA != 0 {
            return " N/A".to_string();
        }
        let mut out = String::new();
        if m & blk::DATA != 0 {
            out.push_str(" Data");
        }
        if m & blk::ADDR != 0 {
            out.push_str(" Addr");
        }
        out
    }

    /// perf script's `data_src` field after the value: `|OP LOAD|LVL L1 hit|SNP None|TLB L1
    /// or L2 hit|LCK No|BLK  N/A`.
    pub fn script_fields(self) -> String {
        format!(
            "|OP {}|LVL {}|SNP {}|TLB {}|LCK {}|BLK {}",
            self.op_name(),
            self.mem_name(),
            self.snoop_name(),
            self.tlb_name(),
            self.locked_name(),
            self.blocked_name()
        )
    }
}

/// The name of a `mem_lvl_num` value perf 6.1 names; others print as `L<n>`.
fn lvl_num_name(n: u64) -> Option<&'static str> {
    Some(match n {
        lvlnum::CXL => "CXL",
        lvlnum::IO => "I/O",
        lvlnum::ANY_CACHE => "Any cache",
        lvlnum::LFB => "LFB/MAB",
        lvlnum::RAM => "RAM",
        lvlnum::PMEM => "PMEM",
        lvlnum::NA => "N/A",
        _ => return None,
    })
}

/// The names of the set bits of `m`, from bit 0, of those `names` has.
fn bit_names(m: u64, names: &[&'static str]) -> Vec<&'static str> {
    names
        .iter()
        .enumerate()
        .filter(|&(i, _)| m & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// A data page size as perf names it (`4K`, `2M`; `N/A` when not sampled or 0): the value
/// divided by 1024 while the quotient stays above 1, at most to G (so 1 GiB is `1024M`).
pub fn page_size_name(size: u64) -> String {
    if size == 0 {
        return "N/A".to_string();
    }
    let units = ['B', 'K', 'M', 'G'];
    let (mut n, mut i) = (size, 0);
    while n / 1024 > 1 && i < 3 {
        n /= 1024;
        i += 1;
    }
    format!("{n}{}", units.get(i).copied().unwrap_or('G'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value perf record writes for a software event's sample (page faults): every part
    /// not available.
    const SOFTWARE: u64 = 0x1e05080021;

    fn ds(op_: u64, lvl_: u64, snoop_: u64, lvl_num: u64) -> DataSrc {
        DataSrc::from_fields(
            op_,
            lvl_,
            snoop_,
            lock::NA,
            tlb::NA,
            lvl_num,
            false,
            0,
            0,
            0,
        )
    }

    #[test]
    fn fields_sit_where_the_kernel_puts_them() {
        let d = DataSrc::from_fields(
            op::NA,
            lvl::NA,
            snoop::NA,
            lock::NA,
            tlb::NA,
            lvlnum::NA,
            false,
            0,
            0,
            0,
        );
        assert_eq!(d.0, SOFTWARE);
        let all = DataSrc::from_fields(0x1f, 0x3fff, 0x1f, 3, 0x7f, 0xf, true, 3, 7, 7);
        assert_eq!(all.0, (1 << 46) - 1);
        assert_eq!(
            (all.op(), all.lvl(), all.snoop(), all.lock(), all.dtlb()),
            (0x1f, 0x3fff, 0x1f, 3, 0x7f)
        );
        assert_eq!(
            (
                all.lvl_num(),
                all.remote(),
                all.snoopx(),
                all.blk(),
                all.hops()
            ),
            (0xf, true, 3, 7, 7)
        );
        // Bits 46 and up are reserved and read by no field.
        let rsvd = DataSrc(u64::MAX << 46);
        assert_eq!((rsvd.op(), rsvd.hops(), rsvd.lvl()), (0, 0, 0));
    }

    #[test]
    fn a_software_event_has_nothing_available() {
        let d = DataSrc(SOFTWARE);
        assert_eq!(d.mem_name(), "N/A or N/A");
        assert_eq!(d.snoop_name(), "N/A");
        assert_eq!(d.tlb_name(), "N/A");
        assert_eq!(d.locked_name(), "N/A");
        assert_eq!(d.blocked_name(), " N/A");
        assert_eq!(
            d.script_fields(),
            "|OP N/A|LVL N/A or N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A"
        );
        assert_eq!(DataSrc::default(), DataSrc(SOFTWARE));
        // Zero is not "not available" for the op and the lock (perf 6.1).
        let z = DataSrc(0);
        assert_eq!(
            z.script_fields(),
            "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A"
        );
    }

    #[test]
    fn levels_are_named_as_perf_names_them() {
        let l1 = ds(op::LOAD, lvl::HIT | lvl::L1, snoop::NONE, 0);
        assert_eq!(l1.mem_name(), "L1 hit");
        assert_eq!(l1.op_name(), "LOAD");
        let lfb = ds(op::LOAD, lvl::HIT | lvl::LFB, snoop::NONE, 0);
        assert_eq!(lfb.mem_name(), "LFB/MAB hit");
        let ram = ds(op::LOAD, lvl::HIT | lvl::LOC_RAM, snoop::MISS, 0);
        assert_eq!(ram.mem_name(), "Local RAM hit");
        let l12 = ds(op::LOAD, lvl::HIT | lvl::L1 | lvl::L2, snoop::NONE, 0);
        assert_eq!(l12.mem_name(), "L1 or L2 hit");
        let rcc = ds(op::LOAD, lvl::HIT | lvl::REM_CCE1, snoop::HITM, 0);
        assert_eq!(rcc.mem_name(), "Remote Cache (1 hop) hit");
        assert_eq!(rcc.snoop_name(), "HitM");
        let miss = ds(op::STORE, lvl::MISS | lvl::L1, snoop::NA, 0);
        assert_eq!(miss.mem_name(), "L1 miss");
        assert_eq!(miss.op_name(), "STORE");
        // The level number after the old bits.
        let num = ds(op::LOAD, lvl::HIT | lvl::L3, snoop::HIT, lvlnum::L3);
        assert_eq!(num.mem_name(), "L3 or L3 hit");
        let any = ds(op::LOAD, lvl::HIT, snoop::HIT, lvlnum::ANY_CACHE);
        assert_eq!(any.mem_name(), "Any cache hit");
        let l2 = ds(op::LOAD, lvl::HIT, 0, lvlnum::L2);
        assert_eq!(l2.mem_name(), "L2 hit");
        // Remote and hops replace the old bits.
        let hop = DataSrc::from_fields(
            op::LOAD,
            lvl::HIT | lvl::REM_CCE1,
            snoop::HITM,
            lock::NA,
            tlb::NA,
            lvlnum::ANY_CACHE,
            true,
            0,
            0,
            hops::NODE,
        );
        assert_eq!(hop.mem_name(), "Remote node, same socket Any cache hit");
        let rem = DataSrc::from_fields(
            op::LOAD,
            lvl::HIT | lvl::REM_RAM1,
            snoop::HIT,
            lock::NA,
            tlb::NA,
            lvlnum::RAM,
            true,
            0,
            0,
            0,
        );
        assert_eq!(rem.mem_name(), "Remote Remote RAM (1 hop) or RAM hit");
        let odd = ds(op::LOAD, lvl::HIT, 0, 7);
        assert_eq!(odd.mem_name(), "L7 hit");
    }

    #[test]
    fn snoop_tlb_lock_and_block() {
        let d = DataSrc::from_fields(
            op::LOAD,
            lvl::HIT | lvl::L3,
            snoop::HIT | snoop::HITM,
            lock::LOCKED,
            tlb::HIT | tlb::L1 | tlb::L2,
            0,
            false,
            snoopx::FWD | snoopx::PEER,
            blk::DATA | blk::ADDR,
            0,
        );
        assert_eq!(d.snoop_name(), "Hit or HitM or Fwd or Peer");
        assert_eq!(d.tlb_name(), "L1 or L2 hit");
        assert_eq!(d.locked_name(), "Yes");
        assert_eq!(d.blocked_name(), " Data Addr");
        let w = DataSrc::from_fields(op::LOAD, 0, 0, 0, tlb::MISS | tlb::WK, 0, false, 0, 0, 0);
        assert_eq!(w.tlb_name(), "Walker miss");
        assert_eq!(w.locked_name(), "No");
        assert_eq!(w.snoop_name(), "N/A");
        let f = DataSrc::from_fields(op::LOAD, 0, 0, 0, tlb::OS, 0, false, 0, blk::NA, 0);
        assert_eq!(f.tlb_name(), "Fault");
        assert_eq!(f.blocked_name(), " N/A");
        assert_eq!(DataSrc(op::PFETCH).op_name(), "PFETCH");
        assert_eq!(DataSrc(op::EXEC).op_name(), "EXEC");
        assert_eq!(DataSrc(lvl::L1 << 5).op_name(), "No");
    }

    #[test]
    fn page_sizes() {
        assert_eq!(page_size_name(0), "N/A");
        assert_eq!(page_size_name(4096), "4K");
        assert_eq!(page_size_name(2 << 20), "2M");
        // perf divides while the quotient is above 1: a 1 GiB page is `1024M`.
        assert_eq!(page_size_name(1 << 30), "1024M");
        assert_eq!(page_size_name(1024), "1024B");
        assert_eq!(page_size_name(16 << 30), "16G");
    }
}

//! `perf_event_attr` as plain data, and its dump in `perf record -vv` layout.
//!
//! The planner builds these values without any syscall; the kernel module converts them into
//! the C struct at open time. Field names and the dump order follow the uapi struct, which is
//! also the order perf prints them in (`perf_event_attr__fprintf`): zero fields are omitted,
//! `config` is hex, `sample_type`, `read_format` and `branch_sample_type` are symbolic.

use std::fmt::{self, Write as _};

use serde::Serialize;
use serde::ser::SerializeMap;

/// `PERF_TYPE_*` values for the fixed PMU types.
pub mod types {
    /// Legacy hardware events (`cycles`, `instructions`, ...).
    pub const HARDWARE: u32 = 0;
    /// Software events (`cpu-clock`, `page-faults`, ...).
    pub const SOFTWARE: u32 = 1;
    /// Tracepoints.
    pub const TRACEPOINT: u32 = 2;
    /// Legacy hardware cache events.
    pub const HW_CACHE: u32 = 3;
    /// Raw events of the default core PMU (also the type of `cpu` and `cpu_core`).
    pub const RAW: u32 = 4;
    /// Breakpoints.
    pub const BREAKPOINT: u32 = 5;
}

/// `PERF_SAMPLE_*` bits.
pub mod sample {
    #![allow(missing_docs)]
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;

    /// Names in bit order, as perf prints them.
    pub const NAMES: [(u64, &str); 25] = [
        (IP, "IP"),
        (TID, "TID"),
        (TIME, "TIME"),
        (ADDR, "ADDR"),
        (READ, "READ"),
        (CALLCHAIN, "CALLCHAIN"),
        (ID, "ID"),
        (CPU, "CPU"),
        (PERIOD, "PERIOD"),
        (STREAM_ID, "STREAM_ID"),
        (RAW, "RAW"),
        (BRANCH_STACK, "BRANCH_STACK"),
        (REGS_USER, "REGS_USER"),
        (STACK_USER, "STACK_USER"),
        (WEIGHT, "WEIGHT"),
        (DATA_SRC, "DATA_SRC"),
        (IDENTIFIER, "IDENTIFIER"),
        (TRANSACTION, "TRANSACTION"),
        (REGS_INTR, "REGS_INTR"),
        (PHYS_ADDR, "PHYS_ADDR"),
        (AUX, "AUX"),
        (CGROUP, "CGROUP"),
        (DATA_PAGE_SIZE, "DATA_PAGE_SIZE"),
        (CODE_PAGE_SIZE, "CODE_PAGE_SIZE"),
        (WEIGHT_STRUCT, "WEIGHT_STRUCT"),
    ];
}

/// `PERF_FORMAT_*` bits.
pub mod read {
    #![allow(missing_docs)]
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;

    /// Names in bit order, as perf prints them.
    pub const NAMES: [(u64, &str); 5] = [
        (TOTAL_TIME_ENABLED, "TOTAL_TIME_ENABLED"),
        (TOTAL_TIME_RUNNING, "TOTAL_TIME_RUNNING"),
        (ID, "ID"),
        (GROUP, "GROUP"),
        (LOST, "LOST"),
    ];
}

/// Bits of the flag word at offset 40, by name, in struct order.
///
/// `precise_ip` is two bits (15-16) and is handled separately.
pub const FLAG_NAMES: [(u32, &str); 37] = [
    (0, "disabled"),
    (1, "inherit"),
    (2, "pinned"),
    (3, "exclusive"),
    (4, "exclude_user"),
    (5, "exclude_kernel"),
    (6, "exclude_hv"),
    (7, "exclude_idle"),
    (8, "mmap"),
    (9, "comm"),
    (10, "freq"),
    (11, "inherit_stat"),
    (12, "enable_on_exec"),
    (13, "task"),
    (14, "watermark"),
    (17, "mmap_data"),
    (18, "sample_id_all"),
    (19, "exclude_host"),
    (20, "exclude_guest"),
    (21, "exclude_callchain_kernel"),
    (22, "exclude_callchain_user"),
    (23, "mmap2"),
    (24, "comm_exec"),
    (25, "use_clockid"),
    (26, "context_switch"),
    (27, "write_backward"),
    (28, "namespaces"),
    (29, "ksymbol"),
    (30, "bpf_event"),
    (31, "aux_output"),
    (32, "cgroup"),
    (33, "text_poke"),
    (34, "build_id"),
    (35, "inherit_thread"),
    (36, "remove_on_exec"),
    (37, "sigtrap"),
    (15, "precise_ip"),
];

/// Named flag bits.
#[allow(missing_docs)]
pub mod flag {
    pub const DISABLED: u64 = 1 << 0;
    pub const INHERIT: u64 = 1 << 1;
    pub const PINNED: u64 = 1 << 2;
    pub const EXCLUSIVE: u64 = 1 << 3;
    pub const EXCLUDE_USER: u64 = 1 << 4;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    pub const MMAP: u64 = 1 << 8;
    pub const COMM: u64 = 1 << 9;
    pub const FREQ: u64 = 1 << 10;
    pub const INHERIT_STAT: u64 = 1 << 11;
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    pub const TASK: u64 = 1 << 13;
    pub const WATERMARK: u64 = 1 << 14;
    pub const PRECISE_SHIFT: u32 = 15;
    pub const PRECISE_MASK: u64 = 3 << PRECISE_SHIFT;
    pub const MMAP_DATA: u64 = 1 << 17;
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub const MMAP2: u64 = 1 << 23;
    pub const COMM_EXEC: u64 = 1 << 24;
    pub const USE_CLOCKID: u64 = 1 << 25;
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
    /// `PERF_RECORD_NAMESPACES` at each fork, `unshare` and `setns` (Linux 4.12).
    pub const NAMESPACES: u64 = 1 << 28;
    pub const KSYMBOL: u64 = 1 << 29;
    pub const BPF_EVENT: u64 = 1 << 30;
    /// `PERF_RECORD_CGROUP` records (Linux 5.7).
    pub const CGROUP: u64 = 1 << 32;
    /// MMAP2 records carry the mapped file's build-id instead of its device and inode
    /// (Linux 5.12).
    pub const BUILD_ID: u64 = 1 << 34;
}

/// `sizeof(struct perf_event_attr)` with `config3` (`PERF_ATTR_SIZE_VER8`). Kernels with a
/// smaller struct accept it as long as the extra tail is zero.
pub const ATTR_SIZE_VER8: u32 = 136;

/// A `perf_event_attr`, field for field (the unions under their perf names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attr {
    /// `type`
    pub type_: u32,
    /// `size`
    pub size: u32,
    /// `config`
    pub config: u64,
    /// `sample_period` or `sample_freq` (see the `freq` flag).
    pub sample_period_or_freq: u64,
    /// `sample_type`
    pub sample_type: u64,
    /// `read_format`
    pub read_format: u64,
    /// The bit-field word at offset 40 (see [`flag`]).
    pub flags: u64,
    /// `wakeup_events` / `wakeup_watermark`
    pub wakeup: u32,
    /// `bp_type`
    pub bp_type: u32,
    /// `config1` / `bp_addr`
    pub config1: u64,
    /// `config2` / `bp_len`
    pub config2: u64,
    /// `branch_sample_type`
    pub branch_sample_type: u64,
    /// `sample_regs_user`
    pub sample_regs_user: u64,
    /// `sample_stack_user`
    pub sample_stack_user: u32,
    /// `clockid`
    pub clockid: i32,
    /// `sample_regs_intr`
    pub sample_regs_intr: u64,
    /// `aux_watermark`
    pub aux_watermark: u32,
    /// `sample_max_stack`
    pub sample_max_stack: u16,
    /// `aux_sample_size`
    pub aux_sample_size: u32,
    /// `sig_data`
    pub sig_data: u64,
    /// `config3`
    pub config3: u64,
}

impl Attr {
    /// A zeroed attr of this type/config with `size` set.
    pub fn new(type_: u32, config: u64) -> Self {
        Attr {
            type_,
            config,
            size: ATTR_SIZE_VER8,
            ..Attr::default()
        }
    }

    /// Whether all bits of `mask` are set in the flag word.
    pub fn has(&self, mask: u64) -> bool {
        self.flags & mask == mask
    }

    /// Sets or clears flag bits.
    pub fn set(&mut self, mask: u64, on: bool) {
        if on {
            self.flags |= mask;
        } else {
            self.flags &= !mask;
        }
    }

    /// `precise_ip` (0-3).
    pub fn precise_ip(&self) -> u8 {
        ((self.flags & flag::PRECISE_MASK) >> flag::PRECISE_SHIFT) as u8
    }

    /// Sets `precise_ip` (clamped to 3).
    pub fn set_precise_ip(&mut self, p: u8) {
        self.flags =
            (self.flags & !flag::PRECISE_MASK) | ((u64::from(p.min(3))) << flag::PRECISE_SHIFT);
    }

    /// True in frequency mode.
    pub fn freq(&self) -> bool {
        self.has(flag::FREQ)
    }

    /// The attr in the kernel's byte layout (`struct perf_event_attr`, VER8, little-endian), as
    /// perf.data and hrec's file store it. `size` is written as it is.
    pub fn to_bytes(&self) -> [u8; ATTR_SIZE_VER8 as usize] {
        let mut b = [0u8; ATTR_SIZE_VER8 as usize];
        let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
        put(0, &self.type_.to_le_bytes());
        put(4, &self.size.to_le_bytes());
        put(8, &self.config.to_le_bytes());
        put(16, &self.sample_period_or_freq.to_le_bytes());
        put(24, &self.sample_type.to_le_bytes());
        put(32, &self.read_format.to_le_bytes());
        put(40, &self.flags.to_le_bytes());
        put(48, &self.wakeup.to_le_bytes());
        put(52, &self.bp_type.to_le_bytes());
        put(56, &self.config1.to_le_bytes());
        put(64, &self.config2.to_le_bytes());
        put(72, &self.branch_sample_type.to_le_bytes());
        put(80, &self.sample_regs_user.to_le_bytes());
        put(88, &self.sample_stack_user.to_le_bytes());
        put(92, &self.clockid.to_le_bytes());
        put(96, &self.sample_regs_intr.to_le_bytes());
        put(104, &self.aux_watermark.to_le_bytes());
        put(108, &self.sample_max_stack.to_le_bytes());
        put(112, &self.aux_sample_size.to_le_bytes());
        put(120, &self.sig_data.to_le_bytes());
        put(128, &self.config3.to_le_bytes());
        b
    }

    /// Reads an attr in the kernel's byte layout. Shorter inputs (older struct versions, e.g.
    /// perf.data from a VER7 perf) leave the missing tail zero; bytes past VER8 are ignored.
    pub fn from_bytes(bytes: &[u8]) -> Attr {
        let mut b = [0u8; ATTR_SIZE_VER8 as usize];
        let n = bytes.len().min(b.len());
        b[..n].copy_from_slice(&bytes[..n]);
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        Attr {
            type_: u32_at(0),
            size: u32_at(4),
            config: u64_at(8),
            sample_period_or_freq: u64_at(16),
            sample_type: u64_at(24),
            read_format: u64_at(32),
            flags: u64_at(40),
            wakeup: u32_at(48),
            bp_type: u32_at(52),
            config1: u64_at(56),
            config2: u64_at(64),
            branch_sample_type: u64_at(72),
            sample_regs_user: u64_at(80),
            sample_stack_user: u32_at(88),
            clockid: u32_at(92) as i32,
            sample_regs_intr: u64_at(96),
            aux_watermark: u32_at(104),
            sample_max_stack: u16_at(108),
            aux_sample_size: u32_at(112),
            sig_data: u64_at(120),
            config3: u64_at(128),
        }
    }

    /// Every non-zero field as (perf's name, perf's formatting), in perf's print order.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = vec![("type", self.type_.to_string())];
        let mut num = |name: &'static str, v: u64| {
            if v != 0 {
                out.push((name, v.to_string()));
            }
        };
        num("size", u64::from(self.size));
        if self.config != 0 {
            out.push(("config", format!("{:#x}", self.config)));
        }
        if self.sample_period_or_freq != 0 {
            out.push((
                "{ sample_period, sample_freq }",
                self.sample_period_or_freq.to_string(),
            ));
        }
        if self.sample_type != 0 {
            out.push(("sample_type", bit_names(self.sample_type, &sample::NAMES)));
        }
        if self.read_format != 0 {
            out.push(("read_format", bit_names(self.read_format, &read::NAMES)));
        }
        for (bit, name) in FLAG_NAMES {
            // precise_ip is printed where the struct has it: after watermark.
            if name == "precise_ip" {
                continue;
            }
            if bit == 17 && self.precise_ip() != 0 {
                out.push(("precise_ip", self.precise_ip().to_string()));
            }
            if self.flags & (1u64 << bit) != 0 {
                out.push((name, "1".to_string()));
            }
        }
        if self.wakeup != 0 {
            out.push((
                "{ wakeup_events, wakeup_watermark }",
                self.wakeup.to_string(),
            ));
        }
        if self.bp_type != 0 {
            out.push(("bp_type", self.bp_type.to_string()));
        }
        if self.config1 != 0 {
            out.push(("{ bp_addr, config1 }", format!("{:#x}", self.config1)));
        }
        if self.config2 != 0 {
            out.push(("{ bp_len, config2 }", format!("{:#x}", self.config2)));
        }
        if self.branch_sample_type != 0 {
            out.push((
                "branch_sample_type",
                format!("{:#x}", self.branch_sample_type),
            ));
        }
        if self.sample_regs_user != 0 {
            out.push(("sample_regs_user", format!("{:#x}", self.sample_regs_user)));
        }
        if self.sample_stack_user != 0 {
            out.push(("sample_stack_user", self.sample_stack_user.to_string()));
        }
        if self.clockid != 0 {
            out.push(("clockid", self.clockid.to_string()));
        }
        if self.sample_regs_intr != 0 {
            out.push(("sample_regs_intr", format!("{:#x}", self.sample_regs_intr)));
        }
        if self.aux_watermark != 0 {
            out.push(("aux_watermark", self.aux_watermark.to_string()));
        }
        if self.sample_max_stack != 0 {
            out.push(("sample_max_stack", self.sample_max_stack.to_string()));
        }
        if self.aux_sample_size != 0 {
            out.push(("aux_sample_size", self.aux_sample_size.to_string()));
        }
        if self.sig_data != 0 {
            out.push(("sig_data", self.sig_data.to_string()));
        }
        if self.config3 != 0 {
            out.push(("config3", format!("{:#x}", self.config3)));
        }
        out
    }
}

/// `A|B|C` for the set bits, in bit order; unknown bits as hex.
pub fn bit_names(value: u64, names: &[(u64, &str)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    for (bit, name) in names {
        if value & bit != 0 {
            if !out.is_empty() {
                out.push('|');
            }
            out.push_str(name);
            rest &= !bit;
        }
    }
    if rest != 0 {
        if !out.is_empty() {
            out.push('|');
        }
        let _ = write!(out, "{rest:#x}");
    }
    out
}

impl fmt::Display for Attr {
    /// The block perf prints between its dashed lines, one `  name<pad>value` line per field.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in self.fields() {
            writeln!(f, "  {name:<32} {value}")?;
        }
        Ok(())
    }
}

impl Serialize for Attr {
    /// Every non-zero field with its raw numeric value (bit names would lose unknown bits).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", &self.type_)?;
        m.serialize_entry("size", &self.size)?;
        m.serialize_entry("config", &self.config)?;
        if self.freq() {
            m.serialize_entry("sample_freq", &self.sample_period_or_freq)?;
        } else {
            m.serialize_entry("sample_period", &self.sample_period_or_freq)?;
        }
        m.serialize_entry("sample_type", &self.sample_type)?;
        m.serialize_entry(
            "sample_type_names",
            &bit_names(self.sample_type, &sample::NAMES),
        )?;
        m.serialize_entry("read_format", &self.read_format)?;
        m.serialize_entry(
            "read_format_names",
            &bit_names(self.read_format, &read::NAMES),
        )?;
        for (bit, name) in FLAG_NAMES {
            if name == "precise_ip" {
                m.serialize_entry(name, &self.precise_ip())?;
            } else if self.flags & (1u64 << bit) != 0 {
                m.serialize_entry(name, &1)?;
            }
        }
        for (name, v) in [
            ("config1", self.config1),
            ("config2", self.config2),
            ("config3", self.config3),
            ("branch_sample_type", self.branch_sample_type),
            ("sample_regs_user", self.sample_regs_user),
            ("wakeup", u64::from(self.wakeup)),
            ("sample_stack_user", u64::from(self.sample_stack_user)),
            ("sample_max_stack", u64::from(self.sample_max_stack)),
        ] {
            if v != 0 {
                m.serialize_entry(name, &v)?;
            }
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_every_field() {
        let a = Attr {
            type_: 8,
            size: ATTR_SIZE_VER8,
            config: 0x0000_0008_0000_0400,
            sample_period_or_freq: 4000,
            sample_type: sample::IP | sample::READ | sample::WEIGHT_STRUCT,
            read_format: read::GROUP | read::ID | read::LOST,
            flags: flag::DISABLED | flag::FREQ | (2 << flag::PRECISE_SHIFT),
            wakeup: 7,
            bp_type: 3,
            config1: 0x11,
            config2: 0x22,
            branch_sample_type: 0x33,
            sample_regs_user: 0x44,
            sample_stack_user: 8192,
            clockid: -1,
            sample_regs_intr: 0x55,
            aux_watermark: 9,
            sample_max_stack: 127,
            aux_sample_size: 10,
            sig_data: 0x66,
            config3: 0x77,
        };
        let b = a.to_bytes();
        assert_eq!(&b[0..4], &8u32.to_le_bytes());
        assert_eq!(&b[92..96], &(-1i32).to_le_bytes());
        assert_eq!(Attr::from_bytes(&b), a);
        // A VER7 (128-byte) attr has no config3.
        let short = Attr::from_bytes(&b[..128]);
        assert_eq!(short.config3, 0);
        assert_eq!(short.sig_data, 0x66);
    }

    #[test]
    fn dump_matches_perf_layout() {
        // perf 6.1 `perf record -vv -W -e cpu-clock` on a VM (perf-abi.md 10.5), minus the
        // exclude_guest/bpf_event bits hrec does not set.
        let mut a = Attr::new(types::SOFTWARE, 0);
        a.size = 128;
        a.sample_period_or_freq = 4000;
        a.sample_type =
            sample::IP | sample::TID | sample::TIME | sample::PERIOD | sample::WEIGHT_STRUCT;
        a.read_format = read::ID | read::LOST;
        a.flags = flag::DISABLED
            | flag::INHERIT
            | flag::MMAP
            | flag::COMM
            | flag::FREQ
            | flag::ENABLE_ON_EXEC
            | flag::TASK
            | flag::SAMPLE_ID_ALL
            | flag::MMAP2
            | flag::COMM_EXEC
            | flag::KSYMBOL;
        let expected = "  type                             1
  size                             128
  { sample_period, sample_freq }   4000
  sample_type                      IP|TID|TIME|PERIOD|WEIGHT_STRUCT
  read_format                      ID|LOST
  disabled                         1
  inherit                          1
  mmap                             1
  comm                             1
  freq                             1
  enable_on_exec                   1
  task                             1
  sample_id_all                    1
  mmap2                            1
  comm_exec                        1
  ksymbol                          1
";
        assert_eq!(a.to_string(), expected);
    }

    #[test]
    fn precise_ip_is_printed_after_watermark() {
        let mut a = Attr::new(types::HARDWARE, 0x4_0000_0000);
        a.set_precise_ip(3);
        a.set(flag::SAMPLE_ID_ALL, true);
        let text = a.to_string();
        assert!(text.contains("  config                           0x400000000\n"));
        let p = text.find("precise_ip").unwrap();
        assert!(p < text.find("sample_id_all").unwrap());
        assert_eq!(a.precise_ip(), 3);
        a.set_precise_ip(7);
        assert_eq!(a.precise_ip(), 3);
    }

    #[test]
    fn unknown_bits_are_kept_in_hex() {
        assert_eq!(
            bit_names(sample::IP | (1 << 40), &sample::NAMES),
            "IP|0x10000000000"
        );
    }
}

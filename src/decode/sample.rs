//! PERF_RECORD_SAMPLE and the borrowed views of its variable-length parts.

use super::DecodeError;
pub use super::cursor::U64s;
use super::cursor::{Ctx, Cursor};
use super::layout::Layout;
use super::misc;
use crate::event::attr::{read, sample};

/// `PERF_CONTEXT_*` markers inside a callchain: an entry `>= MAX` is not an address but says
/// which context the following addresses belong to.
pub mod context {
    /// Hypervisor frames follow.
    pub const HV: u64 = -32i64 as u64;
    /// Kernel frames follow.
    pub const KERNEL: u64 = -128i64 as u64;
    /// User frames follow.
    pub const USER: u64 = -512i64 as u64;
    /// Guest frames follow.
    pub const GUEST: u64 = -2048i64 as u64;
    /// Guest kernel frames follow.
    pub const GUEST_KERNEL: u64 = -2176i64 as u64;
    /// Guest user frames follow.
    pub const GUEST_USER: u64 = -2560i64 as u64;
    /// The smallest marker value: every entry at or above it is a marker.
    pub const MAX: u64 = -4095i64 as u64;

    /// True when a callchain entry is a context marker rather than an address.
    pub fn is_marker(ip: u64) -> bool {
        ip >= MAX
    }

    /// Whether a chain holds a marker perf 6.1 does not know (anything but HV, KERNEL and
    /// USER: the guest markers and values such as -1 that a frame-pointer walk read off a
    /// user stack). perf takes such a chain as corrupt and discards it whole (`"It seems
    /// the callchain is corrupted. Discard all."`): `script` prints no frame under the
    /// sample, and `report` has the sample's own address alone.
    pub fn is_corrupt(mut chain: impl Iterator<Item = u64>) -> bool {
        chain.any(|a| is_marker(a) && a != HV && a != KERNEL && a != USER)
    }
}

/// A callchain: `nr` addresses with [`context`] markers between them, innermost first.
pub type Callchain<'a> = U64s<'a>;

/// One value of a read: the counter and, per `read_format`, its id and lost count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadEntry {
    /// The counter value (cumulative).
    pub value: u64,
    /// `PERF_FORMAT_ID`: the event id (the parent's for inherited events).
    pub id: Option<u64>,
    /// `PERF_FORMAT_LOST`: samples this event lost.
    pub lost: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entries<'a> {
    One(ReadEntry),
    Group(&'a [u8]),
}

/// Read values in either `read_format` layout, borrowed from the record.
///
/// Without GROUP: `value, [time_enabled], [time_running], [id], [lost]`. With GROUP:
/// `nr, [time_enabled], [time_running], nr x {value, [id], [lost]}`, leader first, then the
/// members in group order; the times belong to the event that wrote the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadValues<'a> {
    read_format: u64,
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
    pub time_running: Option<u64>,
    entries: Entries<'a>,
}

impl<'a> ReadValues<'a> {
    /// The values `read()` on a perf fd returns (the same layout as in a sample), e.g. the
    /// recorder's final counts. Bytes after the values are ignored.
    pub fn from_read(bytes: &'a [u8], read_format: u64) -> Result<Self, DecodeError> {
        let ctx = Ctx {
            kind: super::kind::READ,
            offset: 0,
            what: "read() values",
        };
        ReadValues::parse(&mut Cursor::new(bytes, 0, ctx), read_format)
    }

    /// Parses read values in `read_format`'s layout; `nr` is checked against the bytes left
    /// before any entry is trusted.
    pub(crate) fn parse(c: &mut Cursor<'a>, read_format: u64) -> Result<Self, DecodeError> {
        let opt = |c: &mut Cursor<'a>, bit: u64| -> Result<Option<u64>, DecodeError> {
            if read_format & bit != 0 {
                c.u64().map(Some)
            } else {
                Ok(None)
            }
        };
        if read_format & read::GROUP == 0 {
            let value = c.u64()?;
            let time_enabled = opt(c, read::TOTAL_TIME_ENABLED)?;
            let time_running = opt(c, read::TOTAL_TIME_RUNNING)?;
            let id = opt(c, read::ID)?;
            let lost = opt(c, read::LOST)?;
            return Ok(ReadValues {
                read_format,
                time_enabled,
                time_running,
                entries: Entries::One(ReadEntry { value, id, lost }),
            });
        }
        let nr = c.u64()?;
        let time_enabled = opt(c, read::TOTAL_TIME_ENABLED)?;
        let time_running = opt(c, read::TOTAL_TIME_RUNNING)?;
        let size = nr.saturating_mul(Self::entry_size(read_format) as u64);
        let bytes = c.bytes_u64(size)?;
        Ok(ReadValues {
            read_format,
            time_enabled,
            time_running,
            entries: Entries::Group(bytes),
        })
    }

    fn entry_size(read_format: u64) -> usize {
        8 * (1
            + usize::from(read_format & read::ID != 0)
            + usize::from(read_format & read::LOST != 0))
    }

    /// The `read_format` these values were read with.
    pub fn read_format(&self) -> u64 {
        self.read_format
    }

    /// True for the GROUP layout.
    pub fn is_group(&self) -> bool {
        matches!(self.entries, Entries::Group(_))
    }

    /// Number of entries (1 without GROUP, `nr` with it).
    pub fn len(&self) -> usize {
        match self.entries {
            Entries::One(_) => 1,
            Entries::Group(b) => b.len() / Self::entry_size(self.read_format),
        }
    }

    /// True when a group read has `nr = 0`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th entry.
    pub fn get(&self, i: usize) -> Option<ReadEntry> {
        match self.entries {
            Entries::One(e) => (i == 0).then_some(e),
            Entries::Group(b) => {
                let size = Self::entry_size(self.read_format);
                let at = i.checked_mul(size)?;
                let e = b.get(at..at.checked_add(size)?)?;
                let v = U64s::new(e);
                let has_id = self.read_format & read::ID != 0;
                Some(ReadEntry {
                    value: v.get(0)?,
                    id: if has_id { v.get(1) } else { None },
                    lost: if self.read_format & read::LOST != 0 {
                        v.get(1 + usize::from(has_id))
                    } else {
                        None
                    },
                })
            }
        }
    }

    /// The entries in order (leader first for groups).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = ReadEntry> + 'a {
        let this = *self;
        (0..self.len()).map(move |i| this.get(i).unwrap_or_default())
    }

    /// The entry with this id (needs `PERF_FORMAT_ID`).
    pub fn by_id(&self, id: u64) -> Option<ReadEntry> {
        self.iter().find(|e| e.id == Some(id))
    }
}

/// One branch stack entry (`struct perf_branch_entry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BranchEntry {
    /// Source address.
    pub from: u64,
    /// Target address.
    pub to: u64,
    /// The bit-field word: mispred:1, predicted:1, in_tx:1, abort:1, cycles:16, type:4,
    /// spec:2, new_type:4, priv:3.
    pub flags: u64,
}

impl BranchEntry {
    /// The branch was mispredicted.
    pub fn mispred(&self) -> bool {
        self.flags & 1 != 0
    }
    /// The branch was predicted correctly.
    pub fn predicted(&self) -> bool {
        self.flags & 2 != 0
    }
    /// The branch was inside a transaction.
    pub fn in_tx(&self) -> bool {
        self.flags & 4 != 0
    }
    /// The branch was a transaction abort.
    pub fn abort(&self) -> bool {
        self.flags & 8 != 0
    }
    /// Cycles since the previous branch (0 when not supported).
    pub fn cycles(&self) -> u16 {
        (self.flags >> 4) as u16
    }
    /// `PERF_BR_*` branch type.
    pub fn branch_type(&self) -> u8 {
        ((self.flags >> 20) & 0xf) as u8
    }
}

/// The branch stack of a sample, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchStack<'a> {
    /// `hw_idx` (only with `PERF_SAMPLE_BRANCH_HW_INDEX`).
    pub hw_idx: Option<u64>,
    entries: &'a [u8],
    /// Per-entry counter words (only with `PERF_SAMPLE_BRANCH_COUNTERS`), one u64 per entry.
    pub counters: Option<U64s<'a>>,
}

impl<'a> BranchStack<'a> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() / 24
    }
    /// True with no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// The `i`-th entry (most recent first).
    pub fn get(&self, i: usize) -> Option<BranchEntry> {
        let at = i.checked_mul(24)?;
        let v = U64s::new(self.entries.get(at..at.checked_add(24)?)?);
        Some(BranchEntry {
            from: v.get(0)?,
            to: v.get(1)?,
            flags: v.get(2)?,
        })
    }
    /// The entries in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = BranchEntry> + 'a {
        let this = *self;
        (0..self.len()).map(move |i| this.get(i).unwrap_or_default())
    }
}

/// A register dump (REGS_USER or REGS_INTR), borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regs<'a> {
    /// `PERF_SAMPLE_REGS_ABI_*` (0 = none: no registers follow).
    pub abi: u64,
    /// The registers in mask bit order; empty when `abi == 0`.
    pub regs: U64s<'a>,
}

/// A copy of the user stack (STACK_USER), borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackUser<'a> {
    /// The copied bytes (`size` of them; only the first `dyn_size` are meaningful).
    pub data: &'a [u8],
    /// How many bytes were really copied; absent when `size == 0`.
    pub dyn_size: Option<u64>,
}

/// `union perf_sample_weight` read as WEIGHT_STRUCT.
///
/// The kernel writes one u64 for either weight bit. With plain WEIGHT it is the whole weight;
/// with WEIGHT_STRUCT it holds three fields at fixed bit positions (the same on big-endian,
/// whose struct lists them in reverse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Weight {
    /// `var1_dw`, bits 31:0: memory/cache latency or TSX abort weight.
    pub var1: u32,
    /// `var2_w`, bits 47:32: instruction latency.
    pub ins_lat: u16,
    /// `var3_w`, bits 63:48: retire latency in cycles (Timed PEBS). The hardware record has it
    /// at bits 47:32 of the PEBS basic group; the kernel moves it here.
    pub retire_lat: u16,
}

impl From<u64> for Weight {
    fn from(w: u64) -> Self {
        Weight {
            var1: w as u32,
            ins_lat: (w >> 32) as u16,
            retire_lat: (w >> 48) as u16,
        }
    }
}

impl From<Weight> for u64 {
    fn from(w: Weight) -> u64 {
        u64::from(w.var1) | (u64::from(w.ins_lat) << 32) | (u64::from(w.retire_lat) << 48)
    }
}

/// A decoded PERF_RECORD_SAMPLE. Each field is `Some` exactly when its `sample_type` bit is set;
/// variable-length parts borrow from the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample<'a> {
    /// `header.misc` (cpumode, EXACT_IP).
    pub misc: u16,
    /// The `sample_type` the record was decoded with.
    pub sample_type: u64,
    /// IDENTIFIER: the event id, first after the header.
    pub identifier: Option<u64>,
    /// IP.
    pub ip: Option<u64>,
    /// TID: process id.
    pub pid: Option<u32>,
    /// TID: thread id.
    pub tid: Option<u32>,
    /// TIME.
    pub time: Option<u64>,
    /// ADDR.
    pub addr: Option<u64>,
    /// ID: the event id.
    pub id: Option<u64>,
    /// STREAM_ID: the id of the event that opened the stream (the parent for inherited ones).
    pub stream_id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
    /// PERIOD.
    pub period: Option<u64>,
    /// READ.
    pub read: Option<ReadValues<'a>>,
    /// CALLCHAIN.
    pub callchain: Option<Callchain<'a>>,
    /// RAW: the data as the size field counts it (the kernel includes its alignment padding).
    pub raw: Option<&'a [u8]>,
    /// BRANCH_STACK.
    pub branch_stack: Option<BranchStack<'a>>,
    /// REGS_USER.
    pub regs_user: Option<Regs<'a>>,
    /// STACK_USER.
    pub stack_user: Option<StackUser<'a>>,
    /// WEIGHT or WEIGHT_STRUCT, the raw u64 (see [`Sample::weight_struct`]).
    pub weight: Option<u64>,
    /// DATA_SRC.
    pub data_src: Option<u64>,
    /// TRANSACTION.
    pub transaction: Option<u64>,
    /// REGS_INTR.
    pub regs_intr: Option<Regs<'a>>,
    /// PHYS_ADDR.
    pub phys_addr: Option<u64>,
    /// CGROUP.
    pub cgroup: Option<u64>,
    /// DATA_PAGE_SIZE.
    pub data_page_size: Option<u64>,
    /// CODE_PAGE_SIZE.
    pub code_page_size: Option<u64>,
    /// AUX: the data as the size field counts it.
    pub aux: Option<&'a [u8]>,
}

impl<'a> Sample<'a> {
    /// `misc & CPUMODE_MASK`.
    pub fn cpumode(&self) -> u16 {
        self.misc & misc::CPUMODE_MASK
    }

    /// The sample came from a precise event and the IP is exact.
    pub fn exact_ip(&self) -> bool {
        self.misc & misc::EXACT_IP != 0
    }

    /// The event id, from IDENTIFIER or ID.
    pub fn event_id(&self) -> Option<u64> {
        self.identifier.or(self.id)
    }

    /// The weight split into its WEIGHT_STRUCT fields; `None` unless the sample_type has
    /// WEIGHT_STRUCT (with plain WEIGHT the whole u64 is one weight).
    pub fn weight_struct(&self) -> Option<Weight> {
        if self.sample_type & sample::WEIGHT_STRUCT != 0 {
            self.weight.map(Weight::from)
        } else {
            None
        }
    }

    /// Where the CALLCHAIN (its `nr` included) lies in `record`, the bytes this sample was
    /// decoded from (header included): what a writer needs to replace the chain. `None` when
    /// the sample has none or was not decoded from `record`.
    pub fn chain_span(&self, record: &[u8]) -> Option<std::ops::Range<usize>> {
        let chain = self.callchain?.as_bytes();
        let at = (chain.as_ptr() as usize).checked_sub(record.as_ptr() as usize)?;
        let end = at.checked_add(chain.len())?;
        (at >= 16 && end <= record.len()).then_some(at - 8..end)
    }

    /// Where the CALLCHAIN (its `nr` included) and the REGS_USER + STACK_USER parts lie in
    /// `record`, the bytes this sample was decoded from (header included): what a writer
    /// needs to replace the chain and drop the stack copy. `None` when the sample lacks one
    /// of them or was not decoded from `record`.
    pub fn chain_and_stack_spans(
        &self,
        record: &[u8],
    ) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
        let offset = |part: &[u8]| -> Option<usize> {
            let at = (part.as_ptr() as usize).checked_sub(record.as_ptr() as usize)?;
            (at.checked_add(part.len())? <= record.len()).then_some(at)
        };
        let chain = self.callchain?.as_bytes();
        let chain_at = offset(chain)?.checked_sub(8)?;
        let (regs, stack) = (self.regs_user?, self.stack_user?);
        // STACK_USER follows REGS_USER: `abi`, the registers when `abi != 0`, then `size`,
        // the bytes and, when `size != 0`, `dyn_size`.
        let stack_at = offset(stack.data)?.checked_sub(8)?;
        let stack_end =
            stack_at + 8 + stack.data.len() + if stack.dyn_size.is_some() { 8 } else { 0 };
        let regs_at = stack_at.checked_sub(8 + regs.regs.len() * 8)?;
        (chain_at + 8 + chain.len() <= regs_at && stack_end <= record.len())
            .then_some((chain_at..chain_at + 8 + chain.len(), regs_at..stack_end))
    }

    /// Parses a SAMPLE body (the cursor is just past the header) in the kernel's field order.
    pub(crate) fn parse(
        c: &mut Cursor<'a>,
        misc: u16,
        layout: &Layout,
    ) -> Result<Self, DecodeError> {
        let l = layout;
        let mut s = Sample {
            misc,
            sample_type: l.sample_type,
            ..Sample::default()
        };
        macro_rules! u64_if {
            ($bit:expr, $name:literal) => {
                if l.has($bit) {
                    Some(c.field($name).u64()?)
                } else {
                    None
                }
            };
        }
        s.identifier = u64_if!(sample::IDENTIFIER, "IDENTIFIER");
        s.ip = u64_if!(sample::IP, "IP");
        if l.has(sample::TID) {
            c.field("TID");
            s.pid = Some(c.u32()?);
            s.tid = Some(c.u32()?);
        }
        s.time = u64_if!(sample::TIME, "TIME");
        s.addr = u64_if!(sample::ADDR, "ADDR");
        s.id = u64_if!(sample::ID, "ID");
        s.stream_id = u64_if!(sample::STREAM_ID, "STREAM_ID");
        if l.has(sample::CPU) {
            c.field("CPU");
            s.cpu = Some(c.u32()?);
            c.u32()?;
        }
        s.period = u64_if!(sample::PERIOD, "PERIOD").or(l.fixed_period);
        if l.has(sample::READ) {
            c.field("READ");
            s.read = Some(ReadValues::parse(c, l.read_format)?);
        }
        if l.has(sample::CALLCHAIN) {
            c.field("CALLCHAIN");
            let nr = c.u64()?;
            s.callchain = Some(c.u64s(nr)?);
        }
        if l.has(sample::RAW) {
            c.field("RAW");
            let size = c.u32()?;
            s.raw = Some(c.bytes_u64(u64::from(size))?);
        }
        if l.has(sample::BRANCH_STACK) {
            c.field("BRANCH_STACK");
            let nr = c.u64()?;
            let hw_idx = if l.branch_hw_index {
                Some(c.u64()?)
            } else {
                None
            };
            let entries = c.bytes_u64(nr.saturating_mul(24))?;
            let counters = if l.branch_counters {
                Some(c.u64s(nr)?)
            } else {
                None
            };
            s.branch_stack = Some(BranchStack {
                hw_idx,
                entries,
                counters,
            });
        }
        if l.has(sample::REGS_USER) {
            c.field("REGS_USER");
            s.regs_user = Some(regs(c, l.regs_user)?);
        }
        if l.has(sample::STACK_USER) {
            c.field("STACK_USER");
            let size = c.u64()?;
            let data = c.bytes_u64(size)?;
            let dyn_size = if size != 0 { Some(c.u64()?) } else { None };
            s.stack_user = Some(StackUser { data, dyn_size });
        }
        if l.sample_type & (sample::WEIGHT | sample::WEIGHT_STRUCT) != 0 {
            s.weight = Some(c.field("WEIGHT").u64()?);
        }
        s.data_src = u64_if!(sample::DATA_SRC, "DATA_SRC");
        s.transaction = u64_if!(sample::TRANSACTION, "TRANSACTION");
        if l.has(sample::REGS_INTR) {
            c.field("REGS_INTR");
            s.regs_intr = Some(regs(c, l.regs_intr)?);
        }
        s.phys_addr = u64_if!(sample::PHYS_ADDR, "PHYS_ADDR");
        s.cgroup = u64_if!(sample::CGROUP, "CGROUP");
        s.data_page_size = u64_if!(sample::DATA_PAGE_SIZE, "DATA_PAGE_SIZE");
        s.code_page_size = u64_if!(sample::CODE_PAGE_SIZE, "CODE_PAGE_SIZE");
        if l.has(sample::AUX) {
            c.field("AUX");
            let size = c.u64()?;
            s.aux = Some(c.bytes_u64(size)?);
        }
        Ok(s)
    }
}

fn regs<'a>(c: &mut Cursor<'a>, n: u32) -> Result<Regs<'a>, DecodeError> {
    let abi = c.u64()?;
    let regs = if abi != 0 {
        c.u64s(u64::from(n))?
    } else {
        U64s::default()
    };
    Ok(Regs { abi, regs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::cursor::Ctx;

    fn ctx() -> Ctx {
        Ctx {
            kind: 9,
            offset: 0,
            what: "sample_type",
        }
    }

    fn le(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn weight_struct_bits() {
        let w = Weight::from((123u64 << 48) | (45u64 << 32) | 0xdead_beef);
        assert_eq!(
            w,
            Weight {
                var1: 0xdead_beef,
                ins_lat: 45,
                retire_lat: 123
            }
        );
        assert_eq!(u64::from(w), (123u64 << 48) | (45u64 << 32) | 0xdead_beef);
        assert_eq!(Weight::from(u64::MAX).retire_lat, 0xffff);
    }

    #[test]
    fn context_markers() {
        assert_eq!(context::HV, 0xffff_ffff_ffff_ffe0);
        assert_eq!(context::KERNEL, 0xffff_ffff_ffff_ff80);
        assert_eq!(context::USER, 0xffff_ffff_ffff_fe00);
        assert_eq!(context::MAX, 0xffff_ffff_ffff_f001);
        assert!(context::is_marker(context::GUEST_USER));
        assert!(!context::is_marker(0xffff_ffff_8100_0000));
    }

    #[test]
    fn u64s_view() {
        let b = le(&[1, 2, 3]);
        let v = U64s::new(&b[..20]);
        assert_eq!(v.len(), 2);
        assert_eq!(v.iter().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(v.get(1), Some(2));
        assert_eq!(v.get(2), None);
        assert_eq!(v.get(usize::MAX), None);
    }

    #[test]
    fn read_group_with_every_bit() {
        let rf = read::GROUP
            | read::ID
            | read::LOST
            | read::TOTAL_TIME_ENABLED
            | read::TOTAL_TIME_RUNNING;
        let b = le(&[2, 100, 90, 7, 11, 0, 8, 12, 1]);
        let mut c = Cursor::new(&b, 8, ctx());
        let r = ReadValues::parse(&mut c, rf).unwrap();
        assert_eq!((r.time_enabled, r.time_running), (Some(100), Some(90)));
        assert!(r.is_group());
        let e: Vec<_> = r.iter().collect();
        assert_eq!(
            e,
            [
                ReadEntry {
                    value: 7,
                    id: Some(11),
                    lost: Some(0)
                },
                ReadEntry {
                    value: 8,
                    id: Some(12),
                    lost: Some(1)
                }
            ]
        );
        assert_eq!(r.by_id(12).map(|e| e.value), Some(8));
        assert_eq!(c.remaining(), 0);
    }

    #[test]
    fn read_single_order_is_value_times_id_lost() {
        let rf = read::ID | read::TOTAL_TIME_RUNNING;
        let b = le(&[5, 6, 7]);
        let mut c = Cursor::new(&b, 8, ctx());
        let r = ReadValues::parse(&mut c, rf).unwrap();
        assert_eq!((r.time_enabled, r.time_running), (None, Some(6)));
        assert_eq!(r.len(), 1);
        assert_eq!(
            r.get(0),
            Some(ReadEntry {
                value: 5,
                id: Some(7),
                lost: None
            })
        );
    }

    #[test]
    fn read_group_nr_is_checked_before_use() {
        let b = le(&[u64::MAX / 2, 1, 2]);
        let mut c = Cursor::new(&b, 8, ctx());
        c.field("READ");
        let e = ReadValues::parse(&mut c, read::GROUP | read::ID).unwrap_err();
        assert!(e.to_string().contains("(READ)"), "{e}");
    }
}

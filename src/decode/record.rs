//! Non-sample records, the sample_id trailer and the [`Record`] enum.

use super::cursor::{Ctx, Cursor};
use super::layout::Layout;
use super::sample::{ReadValues, Sample, U64s};
use super::{DecodeError, RawRecord, RecordHeader, RecordKind, kind, misc};
use crate::event::attr::sample;

/// The sample_id trailer of a non-SAMPLE record (`sample_id_all`); each field is `Some` when
/// its bit is in the event's `sample_type`. All `None` without `sample_id_all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleId {
    /// TID: process id.
    pub pid: Option<u32>,
    /// TID: thread id.
    pub tid: Option<u32>,
    /// TIME.
    pub time: Option<u64>,
    /// ID.
    pub id: Option<u64>,
    /// STREAM_ID.
    pub stream_id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
    /// IDENTIFIER (always the last u64 of the record).
    pub identifier: Option<u64>,
}

impl SampleId {
    /// The event id, from IDENTIFIER or ID.
    pub fn event_id(&self) -> Option<u64> {
        self.identifier.or(self.id)
    }

    /// Reads the trailer backwards from the end of `rec` (the whole record), returning it and
    /// the length of the record without it. Reading from the end works without knowing the
    /// body's length, which for MMAP/COMM/... depends on a string.
    fn parse_backwards(
        rec: &[u8],
        layout: &Layout,
        ctx: Ctx,
    ) -> Result<(SampleId, usize), DecodeError> {
        let size = layout.trailer_size();
        if size == 0 {
            return Ok((SampleId::default(), rec.len()));
        }
        let short = || DecodeError::Truncated {
            kind: RecordKind(ctx.kind),
            offset: ctx.offset,
            what: "sample_id trailer",
            field: "sample_id",
            needs: 8 + size,
            has: rec.len(),
        };
        let start = rec
            .len()
            .checked_sub(size)
            .filter(|&s| s >= 8)
            .ok_or_else(short)?;
        let mut end = rec.len();
        let mut take = |bit: u64| -> Option<u64> {
            if layout.has(bit) {
                end -= 8;
                super::cursor::u64_at(rec, end)
            } else {
                None
            }
        };
        let mut id = SampleId {
            identifier: take(sample::IDENTIFIER),
            ..SampleId::default()
        };
        let cpu = take(sample::CPU);
        id.stream_id = take(sample::STREAM_ID);
        id.id = take(sample::ID);
        id.time = take(sample::TIME);
        let tid = take(sample::TID);
        // Little-endian {u32 a, u32 b} read as one u64: a is the low half.
        id.cpu = cpu.map(|v| v as u32);
        id.pid = tid.map(|v| v as u32);
        id.tid = tid.map(|v| (v >> 32) as u32);
        Ok((id, start))
    }
}

/// `PERF_RECORD_MMAP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mmap<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `addr`.
    pub pgoff: u64,
    /// `misc & MMAP_DATA`: a data (not executable) mapping.
    pub data: bool,
    /// The file name up to its first NUL (bytes: paths need not be UTF-8).
    pub filename: &'a [u8],
    /// The trailer.
    pub sample_id: SampleId,
}

/// How an MMAP2 record identifies its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileId<'a> {
    /// The classic form: device and inode.
    Inode {
        /// Device major.
        maj: u32,
        /// Device minor.
        min: u32,
        /// Inode number.
        ino: u64,
        /// Inode generation.
        ino_generation: u64,
    },
    /// `misc & MMAP_BUILD_ID`: the build id (`build_id_size` bytes, at most 20).
    BuildId(&'a [u8]),
}

/// `PERF_RECORD_MMAP2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mmap2<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `addr`.
    pub pgoff: u64,
    /// Inode or build-id form.
    pub file: FileId<'a>,
    /// `PROT_*`.
    pub prot: u32,
    /// `MAP_*`.
    pub flags: u32,
    /// `misc & MMAP_DATA`: a data (not executable) mapping.
    pub data: bool,
    /// The file name up to its first NUL.
    pub filename: &'a [u8],
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_COMM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The command name up to its first NUL.
    pub comm: &'a [u8],
    /// `misc & COMM_EXEC`: the name changed because of exec.
    pub exec: bool,
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_FORK` and `PERF_RECORD_EXIT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Thread id.
    pub tid: u32,
    /// Parent thread id.
    pub ptid: u32,
    /// Time of the event.
    pub time: u64,
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_THROTTLE` and `PERF_RECORD_UNTHROTTLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    /// Time of the event.
    pub time: u64,
    /// Event id.
    pub id: u64,
    /// Stream id.
    pub stream_id: u64,
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_READ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The values in the event's `read_format`.
    pub values: ReadValues<'a>,
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_KSYMBOL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ksymbol<'a> {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// `PERF_RECORD_KSYMBOL_TYPE_*`: UNKNOWN 0, BPF 1, OOL 2.
    pub ksym_type: u16,
    /// `PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER` = 1.
    pub flags: u16,
    /// The symbol name up to its first NUL.
    pub name: &'a [u8],
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_AUX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aux {
    /// Offset in the AUX area.
    pub aux_offset: u64,
    /// Size of the new data.
    pub aux_size: u64,
    /// `PERF_AUX_FLAG_*` (TRUNCATED 1, OVERWRITE 2, PARTIAL 4, COLLISION 8, PMU format 0xff00).
    pub flags: u64,
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_NAMESPACES`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Namespaces<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// `nr` pairs of `{dev, inode}`, flattened.
    pub link_info: U64s<'a>,
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_BPF_EVENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfEvent {
    /// PROG_LOAD 1, PROG_UNLOAD 2.
    pub type_: u16,
    /// Flags.
    pub flags: u16,
    /// Program id.
    pub id: u32,
    /// Program tag.
    pub tag: [u8; 8],
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_CGROUP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cgroup<'a> {
    /// Cgroup id (what CGROUP samples carry).
    pub id: u64,
    /// The path up to its first NUL.
    pub path: &'a [u8],
    /// The trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_TEXT_POKE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextPoke<'a> {
    /// Address of the change.
    pub addr: u64,
    /// The bytes before.
    pub old: &'a [u8],
    /// The bytes after.
    pub new: &'a [u8],
    /// The trailer.
    pub sample_id: SampleId,
}

/// A decoded record. Strings are `&[u8]` up to the first NUL (no UTF-8 check, no copy).
// SAMPLE is much larger than the rest (about 520 bytes of Options and views); boxing it would
// allocate per sample, and records are decoded one at a time on the stack.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// `PERF_RECORD_SAMPLE`.
    Sample(Sample<'a>),
    /// `PERF_RECORD_MMAP`.
    Mmap(Mmap<'a>),
    /// `PERF_RECORD_MMAP2`.
    Mmap2(Mmap2<'a>),
    /// `PERF_RECORD_COMM`.
    Comm(Comm<'a>),
    /// `PERF_RECORD_EXIT`.
    Exit(Task),
    /// `PERF_RECORD_FORK`.
    Fork(Task),
    /// `PERF_RECORD_LOST`: the ring buffer dropped `lost` records of event `id`.
    Lost {
        /// Event id.
        id: u64,
        /// Records lost.
        lost: u64,
        /// The trailer.
        sample_id: SampleId,
    },
    /// `PERF_RECORD_LOST_SAMPLES`: the PMU driver dropped `lost` samples.
    LostSamples {
        /// Samples lost.
        lost: u64,
        /// The trailer.
        sample_id: SampleId,
    },
    /// `PERF_RECORD_THROTTLE`.
    Throttle(Throttle),
    /// `PERF_RECORD_UNTHROTTLE`.
    Unthrottle(Throttle),
    /// `PERF_RECORD_READ`.
    Read(Read<'a>),
    /// `PERF_RECORD_SWITCH`.
    Switch {
        /// `misc & SWITCH_OUT`: switching out (else in).
        out: bool,
        /// `misc & SWITCH_OUT_PREEMPT`: the task was preempted.
        preempt: bool,
        /// The trailer.
        sample_id: SampleId,
    },
    /// `PERF_RECORD_SWITCH_CPU_WIDE`.
    SwitchCpuWide {
        /// Switching out (else in).
        out: bool,
        /// The task was preempted.
        preempt: bool,
        /// The next (switch out) or previous (switch in) process.
        next_prev_pid: u32,
        /// The next or previous thread.
        next_prev_tid: u32,
        /// The trailer.
        sample_id: SampleId,
    },
    /// `PERF_RECORD_KSYMBOL`.
    Ksymbol(Ksymbol<'a>),
    /// `PERF_RECORD_AUX`.
    Aux(Aux),
    /// `PERF_RECORD_ITRACE_START`.
    ItraceStart {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// The trailer.
        sample_id: SampleId,
    },
    /// `PERF_RECORD_NAMESPACES`.
    Namespaces(Namespaces<'a>),
    /// `PERF_RECORD_BPF_EVENT`.
    BpfEvent(BpfEvent),
    /// `PERF_RECORD_CGROUP`.
    Cgroup(Cgroup<'a>),
    /// `PERF_RECORD_TEXT_POKE`.
    TextPoke(TextPoke<'a>),
    /// Any other type (newer kernels, perf's user records >= 64): skipped by its size.
    Unknown {
        /// The header.
        header: RecordHeader,
    },
}

impl<'a> Record<'a> {
    /// The sample_id trailer of a non-SAMPLE record (`None` for SAMPLE and Unknown).
    pub fn sample_id(&self) -> Option<&SampleId> {
        Some(match self {
            Record::Sample(_) | Record::Unknown { .. } => return None,
            Record::Mmap(r) => &r.sample_id,
            Record::Mmap2(r) => &r.sample_id,
            Record::Comm(r) => &r.sample_id,
            Record::Exit(r) | Record::Fork(r) => &r.sample_id,
            Record::Throttle(r) | Record::Unthrottle(r) => &r.sample_id,
            Record::Read(r) => &r.sample_id,
            Record::Ksymbol(r) => &r.sample_id,
            Record::Aux(r) => &r.sample_id,
            Record::Namespaces(r) => &r.sample_id,
            Record::BpfEvent(r) => &r.sample_id,
            Record::Cgroup(r) => &r.sample_id,
            Record::TextPoke(r) => &r.sample_id,
            Record::Lost { sample_id, .. }
            | Record::LostSamples { sample_id, .. }
            | Record::Switch { sample_id, .. }
            | Record::SwitchCpuWide { sample_id, .. }
            | Record::ItraceStart { sample_id, .. } => sample_id,
        })
    }

    /// A context switch of either kind (`SWITCH`, or `SWITCH_CPU_WIDE` of `-a`): whether the
    /// task left the CPU (else took it), whether it was preempted, and the trailer.
    pub fn as_switch(&self) -> Option<(bool, bool, &SampleId)> {
        match self {
            Record::Switch {
                out,
                preempt,
                sample_id,
            }
            | Record::SwitchCpuWide {
                out,
                preempt,
                sample_id,
                ..
            } => Some((*out, *preempt, sample_id)),
            _ => None,
        }
    }

    /// Decodes `raw` with a known layout.
    pub fn parse(raw: &RawRecord<'a>, layout: &Layout) -> Result<Record<'a>, DecodeError> {
        let h = raw.header;
        let rec = raw.bytes;
        let ctx = |what| Ctx {
            kind: h.type_,
            offset: raw.offset,
            what,
        };
        if h.type_ == kind::SAMPLE {
            let mut c = Cursor::new(rec.get(8..).unwrap_or_default(), 8, ctx("sample_type"));
            return Sample::parse(&mut c, h.misc, layout).map(Record::Sample);
        }
        if !(kind::MMAP..=kind::TEXT_POKE).contains(&h.type_) {
            return Ok(Record::Unknown { header: h });
        }
        let (sid, body_end) = SampleId::parse_backwards(rec, layout, ctx("sample_id trailer"))?;
        let mut c = Cursor::new(rec.get(8..body_end).unwrap_or_default(), 8, ctx("body"));
        let c = &mut c;
        let out = h.misc & misc::SWITCH_OUT != 0;
        let preempt = h.misc & misc::SWITCH_OUT_PREEMPT != 0;
        Ok(match h.type_ {
            kind::MMAP => Record::Mmap(Mmap {
                pid: c.field("pid").u32()?,
                tid: c.field("tid").u32()?,
                addr: c.field("addr").u64()?,
                len: c.field("len").u64()?,
                pgoff: c.field("pgoff").u64()?,
                data: h.misc & misc::MMAP_DATA != 0,
                filename: cstr(c.rest()),
                sample_id: sid,
            }),
            kind::MMAP2 => {
                let pid = c.field("pid").u32()?;
                let tid = c.field("tid").u32()?;
                let addr = c.field("addr").u64()?;
                let len = c.field("len").u64()?;
                let pgoff = c.field("pgoff").u64()?;
                let file = if h.misc & misc::MMAP_BUILD_ID != 0 {
                    c.field("build_id");
                    let n = c.u8()?;
                    c.bytes(3)?;
                    let id = c.bytes(20)?;
                    FileId::BuildId(id.get(..usize::from(n)).unwrap_or(id))
                } else {
                    FileId::Inode {
                        maj: c.field("maj").u32()?,
                        min: c.field("min").u32()?,
                        ino: c.field("ino").u64()?,
                        ino_generation: c.field("ino_generation").u64()?,
                    }
                };
                Record::Mmap2(Mmap2 {
                    pid,
                    tid,
                    addr,
                    len,
                    pgoff,
                    file,
                    prot: c.field("prot").u32()?,
                    flags: c.field("flags").u32()?,
                    data: h.misc & misc::MMAP_DATA != 0,
                    filename: cstr(c.rest()),
                    sample_id: sid,
                })
            }
            kind::COMM => Record::Comm(Comm {
                pid: c.field("pid").u32()?,
                tid: c.field("tid").u32()?,
                comm: cstr(c.rest()),
                exec: h.misc & misc::COMM_EXEC != 0,
                sample_id: sid,
            }),
            kind::EXIT | kind::FORK => {
                let t = Task {
                    pid: c.field("pid").u32()?,
                    ppid: c.field("ppid").u32()?,
                    tid: c.field("tid").u32()?,
                    ptid: c.field("ptid").u32()?,
                    time: c.field("time").u64()?,
                    sample_id: sid,
                };
                if h.type_ == kind::EXIT {
                    Record::Exit(t)
                } else {
                    Record::Fork(t)
                }
            }
            kind::LOST => Record::Lost {
                id: c.field("id").u64()?,
                lost: c.field("lost").u64()?,
                sample_id: sid,
            },
            kind::LOST_SAMPLES => Record::LostSamples {
                lost: c.field("lost").u64()?,
                sample_id: sid,
            },
            kind::THROTTLE | kind::UNTHROTTLE => {
                let t = Throttle {
                    time: c.field("time").u64()?,
                    id: c.field("id").u64()?,
                    stream_id: c.field("stream_id").u64()?,
                    sample_id: sid,
                };
                if h.type_ == kind::THROTTLE {
                    Record::Throttle(t)
                } else {
                    Record::Unthrottle(t)
                }
            }
            kind::READ => Record::Read(Read {
                pid: c.field("pid").u32()?,
                tid: c.field("tid").u32()?,
                values: ReadValues::parse(c.field("values"), layout.read_format)?,
                sample_id: sid,
            }),
            kind::SWITCH => Record::Switch {
                out,
                preempt,
                sample_id: sid,
            },
            kind::SWITCH_CPU_WIDE => Record::SwitchCpuWide {
                out,
                preempt,
                next_prev_pid: c.field("next_prev_pid").u32()?,
                next_prev_tid: c.field("next_prev_tid").u32()?,
                sample_id: sid,
            },
            kind::KSYMBOL => Record::Ksymbol(Ksymbol {
                addr: c.field("addr").u64()?,
                len: c.field("len").u32()?,
                ksym_type: c.field("ksym_type").u16()?,
                flags: c.field("flags").u16()?,
                name: cstr(c.rest()),
                sample_id: sid,
            }),
            kind::AUX => Record::Aux(Aux {
                aux_offset: c.field("aux_offset").u64()?,
                aux_size: c.field("aux_size").u64()?,
                flags: c.field("flags").u64()?,
                sample_id: sid,
            }),
            kind::ITRACE_START => Record::ItraceStart {
                pid: c.field("pid").u32()?,
                tid: c.field("tid").u32()?,
                sample_id: sid,
            },
            kind::NAMESPACES => {
                let pid = c.field("pid").u32()?;
                let tid = c.field("tid").u32()?;
                let nr = c.field("nr").u64()?;
                Record::Namespaces(Namespaces {
                    pid,
                    tid,
                    link_info: c.field("link_info").u64s(nr.saturating_mul(2))?,
                    sample_id: sid,
                })
            }
            kind::BPF_EVENT => {
                let type_ = c.field("type").u16()?;
                let flags = c.field("flags").u16()?;
                let id = c.field("id").u32()?;
                let mut tag = [0u8; 8];
                tag.copy_from_slice(c.field("tag").bytes(8)?);
                Record::BpfEvent(BpfEvent {
                    type_,
                    flags,
                    id,
                    tag,
                    sample_id: sid,
                })
            }
            kind::CGROUP => Record::Cgroup(Cgroup {
                id: c.field("id").u64()?,
                path: cstr(c.rest()),
                sample_id: sid,
            }),
            kind::TEXT_POKE => {
                let addr = c.field("addr").u64()?;
                let old_len = c.field("old_len").u16()?;
                let new_len = c.field("new_len").u16()?;
                let old = c.field("bytes").bytes(usize::from(old_len))?;
                let new = c.bytes(usize::from(new_len))?;
                Record::TextPoke(TextPoke {
                    addr,
                    old,
                    new,
                    sample_id: sid,
                })
            }
            _ => Record::Unknown { header: h },
        })
    }
}

/// `b` up to its first NUL (all of it when there is none).
fn cstr(b: &[u8]) -> &[u8] {
    b.split(|&x| x == 0).next().unwrap_or(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::attr::sample;

    #[test]
    fn cstr_stops_at_nul() {
        assert_eq!(cstr(b"bash\0\0\0\0"), b"bash");
        assert_eq!(cstr(b"noterm"), b"noterm");
        assert_eq!(cstr(b""), b"");
    }

    #[test]
    fn trailer_is_read_from_the_end() {
        let layout = Layout {
            sample_type: sample::TID | sample::TIME | sample::CPU | sample::IDENTIFIER,
            sample_id_all: true,
            ..Layout::default()
        };
        let mut rec = vec![0u8; 8];
        rec.extend_from_slice(b"body....");
        for v in [(20u64 << 32) | 10, 555, 3, 77] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        let ctx = Ctx {
            kind: kind::COMM,
            offset: 0,
            what: "sample_id trailer",
        };
        let (id, end) = SampleId::parse_backwards(&rec, &layout, ctx).unwrap();
        assert_eq!(end, 16);
        assert_eq!(
            id,
            SampleId {
                pid: Some(10),
                tid: Some(20),
                time: Some(555),
                cpu: Some(3),
                identifier: Some(77),
                ..SampleId::default()
            }
        );
        let e = SampleId::parse_backwards(&rec[..32], &layout, ctx).unwrap_err();
        assert_eq!(
            e.to_string(),
            "COMM record at offset 0 too short for its sample_id trailer (sample_id): \
             needs 40 bytes, has 32"
        );
    }
}

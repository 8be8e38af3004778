//! What the drain loop learns from the records it moves, without decoding samples fully.
//!
//! The recorder copies raw kernel records to the file and decodes them later; on the hot path it
//! only walks record headers and reads three fixed places of a SAMPLE: the event id, the
//! pid/tid and the time. Their offsets follow from the common `sample_type` (the planner
//! uses `IDENTIFIER`, the first u64 after the header, whenever the events' sample types differ,
//! and `ID` at a fixed place otherwise). From that it counts samples per event and per thread,
//! the kernel's LOST and THROTTLE records, samples of hrec itself, and the file names of MMAP2
//! records (for build-ids at the end). With frame-pointer call chains (`-g`) it also decodes
//! each sample and counts the chains that reach addresses outside any mapping
//! ([`super::chains`]), for the warning after the summary.
//!
//! It also learns whether the file needs the vdso's image, which is no file on disk: only
//! when a user-mode sample's ip lies in a `[vdso]` mapping, or the samples carry call chains
//! or user stacks (whose frames may be anywhere). The writer then stores the image at the
//! file's end; the vdso's build-id goes into the `build-ids` block always.

use std::collections::{BTreeSet, HashMap};

/// Where x86-64's kernel text and modules start (the top 2 GiB of the address space).
const KERNEL_CODE_START: u64 = 0xffff_ffff_8000_0000;

use super::chains::ChainMaps;
use crate::decode::{self, Layout, Record, context, kind, misc};
use crate::event::Attr;
use crate::event::attr::sample;
use crate::unwind::fp::FpChains;

/// Fixed offsets inside a SAMPLE for one `sample_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleOffsets {
    /// Offset of the event id, if the samples carry one.
    pub id: Option<usize>,
    /// Offset of the ip.
    pub ip: Option<usize>,
    /// Offset of `pid, tid`.
    pub tid: Option<usize>,
    /// Offset of `time`.
    pub time: Option<usize>,
}

impl SampleOffsets {
    /// Offsets for a sample type (record header included).
    pub fn new(st: u64) -> SampleOffsets {
        let has = |b: u64| st & b != 0;
        let mut at = 8;
        let mut id = None;
        if has(sample::IDENTIFIER) {
            id = Some(at);
            at += 8;
        }
        let ip = has(sample::IP).then_some(at);
        if has(sample::IP) {
            at += 8;
        }
        let tid = has(sample::TID).then_some(at);
        if has(sample::TID) {
            at += 8;
        }
        let time = has(sample::TIME).then_some(at);
        if has(sample::TIME) {
            at += 8;
        }
        if has(sample::ADDR) {
            at += 8;
        }
        if id.is_none() && has(sample::ID) {
            id = Some(at);
        }
        SampleOffsets { id, ip, tid, time }
    }
}

/// Counters kept while draining.
#[derive(Debug, Clone, Default)]
pub struct Accounting {
    id_to_event: HashMap<u64, usize>,
    offsets: Option<SampleOffsets>,
    self_pid: u32,
    /// Samples per plan event.
    pub samples_per_event: Vec<u64>,
    /// Samples whose id matched no event.
    pub unknown_samples: u64,
    /// Samples per (pid, tid).
    pub per_thread: HashMap<(u32, u32), u64>,
    /// Samples of the recorder's own process (`-a`).
    pub self_samples: u64,
    /// Kernel LOST records.
    pub lost_records: u64,
    /// Samples those LOST records say were dropped.
    pub lost_samples: u64,
    /// Of those LOST records, the ones of the off-CPU rings (`--off-cpu`: switch records and
    /// stacks, never on-CPU samples).
    pub off_cpu_lost_records: u64,
    /// The records they say were dropped.
    pub off_cpu_lost_samples: u64,
    /// THROTTLE records.
    pub throttles: u64,
    /// UNTHROTTLE records.
    pub unthrottles: u64,
    /// All records.
    pub records: u64,
    /// All record bytes.
    pub bytes: u64,
    /// Earliest and latest sample time.
    pub time_range: Option<(u64, u64)>,
    /// File names seen in MMAP/MMAP2 records.
    pub mapped_files: BTreeSet<Vec<u8>>,
    /// The `[vdso]` mappings seen, start to end (every process of a boot maps the same image,
    /// each at its own address).
    pub vdso_ranges: std::collections::BTreeMap<u64, u64>,
    /// A user-mode sample of this file has its ip in a `[vdso]` range, or the samples carry
    /// call chains or user stacks (whose frames may be anywhere): the file needs the image.
    pub vdso_used: bool,
    /// Kernel addresses seen in samples (IPs of kernel-mode samples and the kernel part of
    /// their callchains): the kallsyms snapshot keeps the symbols around these only.
    pub kernel_addrs: BTreeSet<u64>,
    /// Samples with user-space frame-pointer call chains, and those that reach addresses
    /// outside any mapping of their process.
    pub fp_chains: FpChains,
    layouts: Vec<Layout>,
    /// Per event: its samples carry frame-pointer call chains (CALLCHAIN without
    /// STACK_USER), which [`ChainMaps`] checks.
    fp_events: Vec<bool>,
    /// Per event: the offset of the callchain's `nr` in a SAMPLE when it is fixed (no READ
    /// before it), so the chain is read without decoding the sample.
    chain_at: Vec<Option<usize>>,
    /// The mappings the chains are checked against; `None` without frame-pointer chains.
    chain_maps: Option<ChainMaps>,
    /// Reads the time of side-band records for [`ChainMaps`] (only with `chain_maps`).
    times: Option<decode::Decoder>,
    /// Keep each file mapping of the MMAP2 records for [`super::identity`].
    track_mapped: bool,
    /// Some event's samples carry call chains or user stacks.
    any_stacks: bool,
    /// The file mappings seen since [`Accounting::take_mapped`].
    mapped: Vec<super::identity::Mapped>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The offset of CALLCHAIN's `nr` in a SAMPLE of this sample type, when the fields before it
/// have fixed sizes (all but READ, whose size depends on the group).
fn callchain_offset(st: u64) -> Option<usize> {
    if st & sample::CALLCHAIN == 0 || st & sample::READ != 0 {
        return None;
    }
    let before = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::ADDR
        | sample::ID
        | sample::STREAM_ID
        | sample::CPU
        | sample::PERIOD;
    Some(8 + 8 * (st & before).count_ones() as usize)
}

/// The callchain whose `nr` is at `at` in SAMPLE `r`, if it fits in the record.
fn callchain_at(r: &[u8], at: usize) -> Option<decode::Callchain<'_>> {
    let nr = usize::try_from(u64_at(r, at)?).ok()?;
    let bytes = r.get(at + 8..at.checked_add(8)?.checked_add(nr.checked_mul(8)?)?)?;
    Some(decode::U64s::new(bytes))
}

impl Accounting {
    /// Accounting for events with these attrs and ids. `self_pid` is hrec's own pid.
    pub fn new(attrs: &[Attr], ids: impl IntoIterator<Item = (u64, usize)>, self_pid: u32) -> Self {
        let ids: HashMap<u64, usize> = ids.into_iter().collect();
        // Samples come only from sampling events; with ID they all share one sample_type,
        // with IDENTIFIER the id is first whatever the rest is.
        let st = attrs
            .iter()
            .find(|a| a.sample_period_or_freq != 0)
            .or(attrs.first())
            .map_or(0, |a| a.sample_type);
        let fp_events: Vec<bool> = attrs
            .iter()
            .map(|a| {
                a.sample_type & sample::CALLCHAIN != 0 && a.sample_type & sample::STACK_USER == 0
            })
            .collect();
        let checks = fp_events.contains(&true);
        let any_stacks = attrs
            .iter()
            .any(|a| a.sample_type & (sample::CALLCHAIN | sample::STACK_USER) != 0);
        Accounting {
            any_stacks,
            vdso_used: any_stacks,
            layouts: attrs.iter().map(Layout::from_attr).collect(),
            chain_maps: checks.then(ChainMaps::default),
            times: checks.then(|| {
                decode::Decoder::new(
                    ids.iter()
                        .filter_map(|(&id, &e)| Some((id, *attrs.get(e)?))),
                )
            }),
            chain_at: attrs
                .iter()
                .map(|a| callchain_offset(a.sample_type))
                .collect(),
            fp_events,
            id_to_event: ids,
            offsets: Some(SampleOffsets::new(st)),
            self_pid,
            samples_per_event: vec![0; attrs.len()],
            ..Accounting::default()
        }
    }

    /// Total samples.
    pub fn samples(&self) -> u64 {
        self.samples_per_event.iter().sum::<u64>() + self.unknown_samples
    }

    /// Hands over the counts of the file just finished (`--switch-output`) and starts the
    /// next file's from zero. The file names and kernel addresses seen so far stay: each
    /// file's build-ids and kernel symbols cover what its synthesized mappings refer to; so do
    /// the mappings call chains are checked against.
    pub fn take_file(&mut self) -> Accounting {
        let next = Accounting {
            fp_events: self.fp_events.clone(),
            chain_at: self.chain_at.clone(),
            chain_maps: self.chain_maps.take(),
            times: self.times.clone(),
            id_to_event: self.id_to_event.clone(),
            offsets: self.offsets,
            self_pid: self.self_pid,
            samples_per_event: vec![0; self.samples_per_event.len()],
            mapped_files: self.mapped_files.clone(),
            kernel_addrs: self.kernel_addrs.clone(),
            vdso_ranges: self.vdso_ranges.clone(),
            vdso_used: self.any_stacks,
            any_stacks: self.any_stacks,
            layouts: self.layouts.clone(),
            track_mapped: self.track_mapped,
            ..Accounting::default()
        };
        std::mem::replace(self, next)
    }

    /// Adds the counts of `other` (a finished file's) to these: the totals of a switched
    /// recording.
    pub fn absorb(&mut self, other: &Accounting) {
        if self.samples_per_event.len() < other.samples_per_event.len() {
            self.samples_per_event
                .resize(other.samples_per_event.len(), 0);
        }
        for (a, b) in self
            .samples_per_event
            .iter_mut()
            .zip(&other.samples_per_event)
        {
            *a += b;
        }
        for (k, v) in &other.per_thread {
            *self.per_thread.entry(*k).or_default() += v;
        }
        self.unknown_samples += other.unknown_samples;
        self.self_samples += other.self_samples;
        self.lost_records += other.lost_records;
        self.lost_samples += other.lost_samples;
        self.off_cpu_lost_records += other.off_cpu_lost_records;
        self.off_cpu_lost_samples += other.off_cpu_lost_samples;
        self.throttles += other.throttles;
        self.unthrottles += other.unthrottles;
        self.fp_chains.absorb(&other.fp_chains);
        self.records += other.records;
        self.bytes += other.bytes;
        self.time_range = match (self.time_range, other.time_range) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, None) | (None, x) => x,
        };
    }

    /// [`Accounting::account`] for the records of one ring buffer: the LOST records of an
    /// off-CPU ring are also counted as its own.
    pub fn account_ring(&mut self, bytes: &[u8], off_cpu: bool) {
        let (records, samples) = (self.lost_records, self.lost_samples);
        self.account(bytes);
        if off_cpu {
            self.off_cpu_lost_records += self.lost_records - records;
            self.off_cpu_lost_samples += self.lost_samples - samples;
        }
    }

    /// Keeps the file mappings of MMAP2 records from now on, for [`Accounting::take_mapped`].
    pub fn track_mapped(&mut self) {
        self.track_mapped = true;
    }

    /// The file mappings seen since the last call.
    pub fn take_mapped(&mut self) -> Vec<super::identity::Mapped> {
        std::mem::take(&mut self.mapped)
    }

    /// Lost on-CPU samples: LOST records of the on-CPU rings.
    pub fn on_cpu_lost(&self) -> u64 {
        self.lost_samples - self.off_cpu_lost_samples
    }

    /// Walks a batch of whole records (as the ring buffer hands them out).
    pub fn account(&mut self, bytes: &[u8]) {
        let mut at = 0usize;
        while at + 8 <= bytes.len() {
            let ty = u32_at(bytes, at).unwrap_or(0);
            let size = usize::from(u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]));
            if size < 8 || at + size > bytes.len() {
                break;
            }
            let r = &bytes[at..at + size];
            self.records += 1;
            self.bytes += size as u64;
            match ty {
                kind::SAMPLE => self.sample(r),
                kind::LOST => {
                    self.lost_records += 1;
                    self.lost_samples += u64_at(r, 16).unwrap_or(0);
                }
                kind::THROTTLE => self.throttles += 1,
                kind::UNTHROTTLE => self.unthrottles += 1,
                kind::MMAP2 => {
                    self.mapped(r, 72);
                    if self.track_mapped
                        && let Some(m) = super::identity::parse_mmap2(r)
                    {
                        self.mapped.push(m);
                    }
                }
                kind::MMAP => self.mapped(r, 40),
                _ => {}
            }
            if let Some(m) = &mut self.chain_maps
                && matches!(
                    ty,
                    kind::MMAP | kind::MMAP2 | kind::COMM | kind::FORK | kind::EXIT
                )
            {
                let time = self.times.as_ref().and_then(|d| {
                    let raw = decode::RawRecord::new(r, 0).ok()?;
                    d.time(&raw)
                });
                m.side_band(r, time);
            }
            at += size;
        }
    }

    /// The end of a drain pass over every ring buffer: the call chains that met an address
    /// not mapped yet are counted now that the pass's mappings are known
    /// ([`ChainMaps::end_pass`]).
    pub fn end_pass(&mut self) {
        if let Some(m) = &mut self.chain_maps {
            m.end_pass(&mut self.fp_chains);
        }
    }

    /// The warning when most frame-pointer call chains reach addresses outside any mapping
    /// (code built without frame pointers), with the share and the fix.
    pub fn chains_warning(&self) -> Option<String> {
        Some(format!("warning: {}", self.fp_chains.line()?))
    }

    fn sample(&mut self, r: &[u8]) {
        let off = self.offsets.unwrap_or(SampleOffsets {
            id: None,
            ip: None,
            tid: None,
            time: None,
        });
        let event = match off.id {
            Some(o) => u64_at(r, o).and_then(|id| self.id_to_event.get(&id).copied()),
            None => (!self.samples_per_event.is_empty()).then_some(0),
        };
        match event {
            Some(e) => self.samples_per_event[e] += 1,
            None => self.unknown_samples += 1,
        }
        if let Some(o) = off.tid
            && let (Some(pid), Some(tid)) = (u32_at(r, o), u32_at(r, o + 4))
        {
            *self.per_thread.entry((pid, tid)).or_default() += 1;
            if pid == self.self_pid {
                self.self_samples += 1;
            }
        }
        // PERF_RECORD_MISC_KERNEL: the sample interrupted the kernel.
        let cpumode = u16::from_le_bytes([r[4], r[5]]) & misc::CPUMODE_MASK;
        let kernel = cpumode == misc::KERNEL;
        if !self.vdso_used
            && cpumode == misc::USER
            && let Some(ip) = off.ip.and_then(|o| u64_at(r, o))
        {
            self.vdso_used = self
                .vdso_ranges
                .range(..=ip)
                .next_back()
                .is_some_and(|(_, &end)| ip < end);
        }
        let mut chain = self.chain_maps.is_some()
            && event.is_some_and(|e| self.fp_events.get(e).copied().unwrap_or(false));
        // A user-mode sample's chain at its fixed place: no decoding (a kernel-mode sample is
        // decoded for its kernel addresses anyway).
        if chain
            && !kernel
            && let Some(at) = event.and_then(|e| self.chain_at.get(e).copied().flatten())
            && let Some(pid) = off.tid.and_then(|o| u32_at(r, o))
            && let Some(m) = &mut self.chain_maps
        {
            if let Some(cc) = callchain_at(r, at) {
                m.sample(pid, cc, false, &mut self.fp_chains);
            }
            chain = false;
        }
        if kernel || chain {
            self.decoded_sample(r, event.unwrap_or(0), kernel, chain);
        }
        if let Some(t) = off.time.and_then(|o| u64_at(r, o)) {
            self.time_range = Some(match self.time_range {
                Some((a, b)) => (a.min(t), b.max(t)),
                None => (t, t),
            });
        }
    }

    /// What needs the sample decoded: the kernel addresses of a `kernel` sample, the
    /// frame-pointer `chain` check.
    fn decoded_sample(&mut self, r: &[u8], event: usize, kernel: bool, chain: bool) {
        let Some(layout) = self.layouts.get(event) else {
            return;
        };
        let Ok(raw) = decode::RawRecord::new(r, 0) else {
            return;
        };
        let Ok(Record::Sample(s)) = Record::parse(&raw, layout) else {
            return;
        };
        if chain && let (Some(m), Some(cc), Some(pid)) = (&mut self.chain_maps, s.callchain, s.pid)
        {
            m.sample(pid, cc, kernel, &mut self.fp_chains);
        }
        if !kernel {
            return;
        }
        if let Some(ip) = s.ip {
            self.kernel_addrs.insert(ip);
        }
        // A tracepoint's record may hold kernel code addresses its print format names
        // (`%pS`: kmalloc's call_site, an hrtimer's function): the snapshot keeps their
        // symbols too. Any 8 bytes at a 4-byte step whose value lies in the top 2 GiB (x86-64's
        // kernel text and modules; the direct map and heap lie below).
        if let Some(raw) = s.raw {
            for at in (0..raw.len().saturating_sub(7)).step_by(4) {
                if let Some(v) = u64_at(raw, at).filter(|&v| v >= KERNEL_CODE_START) {
                    self.kernel_addrs.insert(v);
                }
            }
        }
        if let Some(cc) = s.callchain {
            let mut in_kernel = false;
            for a in cc.iter() {
                if context::is_marker(a) {
                    in_kernel = a == context::KERNEL;
                } else if in_kernel {
                    self.kernel_addrs.insert(a);
                }
            }
        }
    }

    fn mapped(&mut self, r: &[u8], name_at: usize) {
        let Some(name) = r.get(name_at..) else {
            return;
        };
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let name = &name[..end];
        if name == b"[vdso]"
            && let (Some(start), Some(len)) = (u64_at(r, 16), u64_at(r, 24))
        {
            let end = start.saturating_add(len);
            let e = self.vdso_ranges.entry(start).or_insert(end);
            *e = (*e).max(end);
        }
        // Only real files have build-ids: skip [vdso], [heap], //anon, memfd: and the like.
        if name.first() == Some(&b'/') && !self.mapped_files.contains(name) {
            self.mapped_files.insert(name.to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ty: u32, body: &[u64]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ty.to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&((8 + 8 * body.len()) as u16).to_le_bytes());
        for w in body {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v
    }

    #[test]
    fn offsets_follow_the_sample_layout() {
        let o = SampleOffsets::new(sample::IP | sample::TID | sample::TIME | sample::ID);
        assert_eq!(
            o,
            SampleOffsets {
                id: Some(32),
                ip: Some(8),
                tid: Some(16),
                time: Some(24)
            }
        );
        let o = SampleOffsets::new(
            sample::IDENTIFIER | sample::IP | sample::TID | sample::ADDR | sample::ID,
        );
        assert_eq!(
            o,
            SampleOffsets {
                id: Some(8),
                ip: Some(16),
                tid: Some(24),
                time: None
            }
        );
    }

    #[test]
    fn counts_samples_per_event_thread_and_losses() {
        let mut a = Attr::new(1, 0);
        a.sample_period_or_freq = 4000;
        a.sample_type = sample::IP | sample::TID | sample::TIME | sample::ID;
        let mut acc = Accounting::new(&[a, a], [(10, 0), (11, 1)], 99);
        let tid = |pid: u64, tid: u64| pid | (tid << 32);
        let mut b = Vec::new();
        b.extend(rec(kind::SAMPLE, &[0x1000, tid(5, 6), 100, 10]));
        b.extend(rec(kind::SAMPLE, &[0x1000, tid(5, 7), 90, 11]));
        b.extend(rec(kind::SAMPLE, &[0x1000, tid(99, 99), 300, 11]));
        b.extend(rec(kind::SAMPLE, &[0x1000, tid(5, 7), 200, 12]));
        b.extend(rec(kind::LOST, &[10, 42]));
        b.extend(rec(kind::THROTTLE, &[0, 10, 10]));
        acc.account(&b);
        assert_eq!(acc.samples_per_event, vec![1, 2]);
        assert_eq!(acc.unknown_samples, 1);
        assert_eq!(acc.per_thread[&(5, 7)], 2);
        assert_eq!(acc.self_samples, 1);
        assert_eq!(
            (acc.lost_records, acc.lost_samples, acc.throttles),
            (1, 42, 1)
        );
        assert_eq!(acc.time_range, Some((90, 300)));
        assert_eq!(acc.records, 6);
    }

    #[test]
    fn a_switched_file_starts_from_zero_and_totals_add_up() {
        let mut a = Attr::new(1, 0);
        a.sample_period_or_freq = 4000;
        a.sample_type = sample::IP | sample::TID | sample::TIME | sample::ID;
        let mut acc = Accounting::new(&[a], [(10, 0)], 99);
        let tid = |pid: u64, tid: u64| pid | (tid << 32);
        acc.account(&rec(kind::SAMPLE, &[0x1000, tid(5, 6), 100, 10]));
        acc.account(&rec(kind::LOST, &[10, 3]));
        let first = acc.take_file();
        assert_eq!((first.samples(), first.lost_samples), (1, 3));
        assert_eq!((acc.samples(), acc.lost_samples, acc.records), (0, 0, 0));
        assert!(acc.per_thread.is_empty() && acc.time_range.is_none());
        acc.account(&rec(kind::SAMPLE, &[0x1000, tid(5, 7), 200, 10]));
        acc.account(&rec(kind::SAMPLE, &[0x1000, tid(5, 6), 300, 10]));
        assert_eq!(
            acc.samples_per_event,
            vec![2],
            "ids still known after the switch"
        );
        let mut total = first.clone();
        total.absorb(&acc);
        assert_eq!(total.samples(), 3);
        assert_eq!(total.per_thread[&(5, 6)], 2);
        assert_eq!(total.time_range, Some((100, 300)));
        assert_eq!((total.lost_samples, total.records), (3, 4));
    }

    #[test]
    fn frame_pointer_chains_are_checked_against_the_mappings_across_files() {
        let mut a = Attr::new(1, 0);
        a.sample_period_or_freq = 4000;
        a.sample_type = sample::IP | sample::TID | sample::TIME | sample::ID | sample::CALLCHAIN;
        let mut acc = Accounting::new(&[a], [(10, 0)], 99);
        let tid = |pid: u64, tid: u64| pid | (tid << 32);
        let u = context::USER;
        let sample = |chain: &[u64]| {
            let mut body = vec![0x1010, tid(5, 5), 100, 10, chain.len() as u64];
            body.extend_from_slice(chain);
            let mut r = rec(kind::SAMPLE, &body);
            r[4] = 2; // user mode
            r
        };
        let mut b = rec(
            kind::MMAP2,
            &[tid(5, 5), 0x1000, 0x1000, 0, 0, 0, 0, 0, 0, 0x2f],
        );
        for _ in 0..MIN {
            b.extend(sample(&[u, 0x1010, 0x1020, 0x3]));
        }
        b.extend(sample(&[u, 0x1010, 0x1020]));
        acc.account(&b);
        acc.end_pass();
        assert_eq!(acc.fp_chains.chains, MIN + 1);
        assert_eq!(acc.fp_chains.outside, MIN);
        let w = acc.chains_warning().unwrap();
        assert!(
            w.starts_with("warning: 98.0% of the 51 user-space call chains"),
            "{w}"
        );
        // The next file knows the mappings and counts from zero; the totals add up.
        let first = acc.take_file();
        acc.account(&sample(&[u, 0x1010, 0x1020]));
        acc.end_pass();
        assert_eq!((acc.fp_chains.chains, acc.fp_chains.outside), (1, 0));
        let mut total = first.clone();
        total.absorb(&acc);
        assert_eq!(
            (total.fp_chains.chains, total.fp_chains.outside),
            (MIN + 2, MIN)
        );
        // Without call chains, or with --call-graph dwarf's user stacks, nothing is checked.
        a.sample_type |= sample::STACK_USER;
        let acc = Accounting::new(&[a], [(10, 0)], 99);
        assert!(acc.chain_maps.is_none());
    }

    const MIN: u64 = crate::unwind::fp::MIN_CHAINS;

    #[test]
    fn chains_are_read_at_their_place_or_decoded_after_a_read() {
        assert_eq!(callchain_offset(sample::IP | sample::TID), None);
        assert_eq!(
            callchain_offset(sample::IDENTIFIER | sample::IP | sample::ID | sample::CALLCHAIN),
            Some(32)
        );
        assert_eq!(
            callchain_offset(sample::IP | sample::READ | sample::CALLCHAIN),
            None
        );
        // A cut chain is not read past the record.
        let r = rec(kind::SAMPLE, &[0x10, 3, 1, 2]);
        assert!(callchain_at(&r, 8).is_none());
        assert!(callchain_at(&r, 16).is_none());
        assert_eq!(callchain_at(&r, 24).map(|c| c.get(0)), Some(Some(2)));
        assert!(callchain_at(&r, 40).is_none());
        // With READ (one value) before the chain, the sample is decoded.
        let mut a = Attr::new(1, 0);
        a.sample_period_or_freq = 4000;
        a.sample_type = sample::IP | sample::TID | sample::READ | sample::CALLCHAIN;
        let mut acc = Accounting::new(&[a], [(10, 0)], 99);
        let u = context::USER;
        let mut b = rec(
            kind::MMAP2,
            &[5 | (5 << 32), 0x1000, 0x1000, 0, 0, 0, 0, 0, 0, 0x2f],
        );
        let mut s = rec(
            kind::SAMPLE,
            &[0x1010, 5 | (5 << 32), 77, 3, u, 0x1010, 0x9],
        );
        s[4] = 2;
        b.extend(s);
        acc.account(&b);
        acc.end_pass();
        assert_eq!((acc.fp_chains.chains, acc.fp_chains.outside), (1, 1));
    }

    #[test]
    fn a_cut_batch_stops_without_panicking() {
        let mut acc = Accounting::new(&[], [], 1);
        let mut b = rec(kind::SAMPLE, &[1, 2, 3]);
        b.truncate(20);
        acc.account(&b);
        acc.account(&[1, 2, 3]);
        assert_eq!(acc.records, 0);
    }

    #[test]
    fn mmap2_file_names_are_collected() {
        let mut acc = Accounting::new(&[], [], 1);
        let mut body = vec![0u64; 8];
        let name = b"/usr/lib/libc.so.6\0\0\0\0\0\0";
        for (i, c) in name.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            body.push(u64::from_le_bytes(w));
            let _ = i;
        }
        acc.account(&rec(kind::MMAP2, &body));
        assert!(acc.mapped_files.contains(b"/usr/lib/libc.so.6".as_slice()));
    }

    /// A user-mode sample in a `[vdso]` mapping marks the file as needing the image; kernel
    /// samples and user samples elsewhere do not, call chains always do.
    #[test]
    fn samples_in_the_vdso_need_its_image() {
        let mut a = Attr::new(1, 0);
        a.sample_period_or_freq = 4000;
        a.sample_type = sample::IP | sample::TID | sample::TIME;
        let mut acc = Accounting::new(&[a], [], 1);
        let mut body = vec![0u64, 0x7fff_0000_0000, 0x2000, 0, 0, 0, 0, 0];
        body.push(u64::from_le_bytes(*b"[vdso]\0\0"));
        acc.account(&rec(kind::MMAP2, &body));
        let sample = |misc: u16, ip: u64| {
            let mut r = rec(kind::SAMPLE, &[ip, 5 | (5 << 32), 100]);
            r[4..6].copy_from_slice(&misc.to_le_bytes());
            r
        };
        acc.account(&sample(misc::USER, 0x7fff_0000_2000));
        acc.account(&sample(misc::KERNEL, 0x7fff_0000_0010));
        assert!(!acc.vdso_used);
        acc.account(&sample(misc::USER, 0x7fff_0000_1ff0));
        assert!(acc.vdso_used);
        // The next file starts over; the mapping is still known.
        let done = acc.take_file();
        assert!(done.vdso_used && !acc.vdso_used);
        acc.account(&sample(misc::USER, 0x7fff_0000_0100));
        assert!(acc.vdso_used);
        a.sample_type |= sample::CALLCHAIN;
        assert!(Accounting::new(&[a], [], 1).vdso_used);
    }
}

//! Record-time unwinding (`record --call-graph dwarf`), on the writer thread: each sample's
//! user stack copy becomes its call chain before the block is written, so the file holds a
//! dozen addresses per sample instead of kilobytes of stack.
//!
//! **What a sample becomes.** The kernel part of the kernel's chain, `PERF_CONTEXT_USER` and
//! the unwound user frames, exactly as the report-time unwinder joins them
//! ([`crate::analysis`]'s replay), interned in the recording's stack table
//! ([`crate::data::stacks`]); the sample's `CALLCHAIN` becomes `[STACK_REF, id]` and its
//! `REGS_USER` and `STACK_USER` parts are dropped (kept with `--call-graph dwarf,SIZE,raw`,
//! for unwinding again later). The file's header lists the attrs without those bits then.
//!
//! **Order.** Each ring's records go to the writer in batches, so a CPU's batch may come in
//! before the batch of another CPU holding the MMAP of a library the first one's samples run
//! in. The drain loop therefore sends copies of every side-band record of a pass over all
//! rings ([`side_band`]) ahead of that pass's batches, and they are applied in time order
//! ([`RecordUnwinder::apply_side_band`]); an exited process is kept a while (its last
//! samples may come in another CPU's batch).
//! Where a walk still meets code outside every mapping seen, the process's `/proc/PID/maps`
//! is read again (the process is alive while it is recorded). Samples the rules cannot walk
//! keep the frames found, and the reason is counted.

use crate::data::stacks::{STACK_REF, StackInterner};
use crate::decode::{self, Decoder, Record, context, kind};
use crate::event::attr::{Attr, sample as st};
use crate::symbol::debuginfo::{self, SearchPaths};
use crate::unwind::{FrameAddress, UnwindStats, Unwinder};

/// Unwinds and rewrites the samples of record batches.
#[derive(Debug)]
pub struct RecordUnwinder {
    decoder: Decoder,
    unwinder: Unwinder,
    stacks: StackInterner,
    keep_raw: bool,
    frames: Vec<FrameAddress>,
    chain: Vec<u64>,
}

/// Appends to `out` copies of the records in `records` the unwinder follows: MMAP, MMAP2,
/// COMM, FORK, EXIT.
pub fn side_band(records: &[u8], out: &mut Vec<u8>) {
    for raw in decode::records(records).flatten() {
        if matches!(
            raw.header.type_,
            kind::MMAP | kind::MMAP2 | kind::COMM | kind::FORK | kind::EXIT
        ) {
            out.extend_from_slice(raw.bytes);
        }
    }
}

/// The sample_type of an attr as its samples are stored after record-time unwinding.
pub fn stored_sample_type(sample_type: u64, keep_raw: bool) -> u64 {
    if keep_raw || sample_type & st::STACK_USER == 0 {
        sample_type
    } else {
        sample_type & !(st::REGS_USER | st::STACK_USER)
    }
}

impl RecordUnwinder {
    /// A stage for events with these `(id, attr)` pairs (the attrs as opened).
    pub fn new(
        events: impl IntoIterator<Item = (u64, Attr)>,
        keep_raw: bool,
        procfs: &std::path::Path,
    ) -> RecordUnwinder {
        RecordUnwinder {
            decoder: Decoder::new(events),
            unwinder: Unwinder::new(None)
                .with_debug_files(std::sync::Arc::new(|binary: &std::path::Path| {
                    debuginfo::debug_file_of(binary, &SearchPaths::default())
                }))
                .with_live_maps(procfs.to_path_buf())
                .with_vdso(crate::kernel::own_vdso(procfs).as_deref()),
            stacks: StackInterner::new(),
            keep_raw,
            frames: Vec::new(),
            chain: Vec::new(),
        }
    }

    /// Starts a new file (`--switch-output`): the chains of its samples are defined again in
    /// its own `stacks` blocks, so each file reads alone.
    pub fn new_file(&mut self) {
        self.stacks = StackInterner::new();
    }

    /// What the walks met so far.
    pub fn stats(&self) -> &UnwindStats {
        &self.unwinder.stats
    }

    /// Applies side-band records (one drain pass's, from [`side_band`]) in time order.
    pub fn apply_side_band(&mut self, records: &[u8]) {
        let mut raws: Vec<(u64, usize, decode::RawRecord<'_>)> = decode::records(records)
            .flatten()
            .enumerate()
            .map(|(i, raw)| (self.decoder.time(&raw).unwrap_or(0), i, raw))
            .collect();
        raws.sort_by_key(|&(t, i, _)| (t, i));
        for (_, _, raw) in raws {
            if let Ok(r) = self.decoder.decode(&raw) {
                self.unwinder.apply(&r);
            }
        }
    }

    /// Rewrites a batch of records (see the module docs). Returns the batch to write and the
    /// `stacks` block to write before it, if the batch added chains. The batch's side-band
    /// records reached the unwinder before ([`RecordUnwinder::apply_side_band`]).
    pub fn process(&mut self, records: &[u8]) -> (Vec<u8>, Option<Vec<u8>>) {
        let mut out = Vec::with_capacity(records.len() / 4);
        let mut it = decode::records(records);
        let mut done = 0;
        while let Some(Ok(raw)) = it.next() {
            if !(raw.header.type_ == kind::SAMPLE && self.rewrite(&raw, &mut out)) {
                out.extend_from_slice(raw.bytes);
            }
            done = it.offset();
        }
        // What did not split into records stays as it was (the reader reports it).
        out.extend_from_slice(records.get(done..).unwrap_or_default());
        (out, self.stacks.take_block())
    }

    /// The chain of a sample with a user stack copy (`mask`: its event's
    /// `sample_regs_user`), as the file stores it: the kernel part of the kernel's chain,
    /// `PERF_CONTEXT_USER` and the unwound user frames (the kernel's whole chain when nothing
    /// unwound); `None` for a sample without a chain, registers and stack.
    pub fn unwound_chain(&mut self, s: &decode::Sample<'_>, mask: u64) -> Option<&[u64]> {
        let (Some(cc), Some(regs), Some(stack)) = (s.callchain, s.regs_user, s.stack_user) else {
            return None;
        };
        self.frames.clear();
        if stack.dyn_size.is_some_and(|d| d > 0) {
            self.unwinder
                .unwind(s.pid.unwrap_or(0), mask, &regs, &stack, &mut self.frames);
        }
        self.chain.clear();
        if self.frames.is_empty() {
            self.chain.extend(cc.iter());
        } else {
            self.chain
                .extend(cc.iter().take_while(|&a| a != context::USER));
            self.chain.push(context::USER);
            self.chain.extend(self.frames.iter().map(|f| f.address()));
        }
        Some(&self.chain)
    }

    /// The stack table's id of `chain` in the current file (0 once ids run out); its nodes
    /// go out with the next [`RecordUnwinder::take_stacks`].
    pub fn intern(&mut self, chain: &[u64]) -> u32 {
        self.stacks.intern(chain).unwrap_or(0)
    }

    /// The `stacks` block of the chains interned since the last one, if any.
    pub fn take_stacks(&mut self) -> Option<Vec<u8>> {
        self.stacks.take_block()
    }

    /// Appends the rewritten sample to `out`; `false` (nothing appended) when it is not a
    /// sample with a user stack.
    fn rewrite(&mut self, raw: &decode::RawRecord<'_>, out: &mut Vec<u8>) -> bool {
        let Ok(located) = self.decoder.locate(raw) else {
            return false;
        };
        let Some(attr) = self.decoder.attrs().get(located.index) else {
            return false;
        };
        let mask = attr.sample_regs_user;
        let Ok(Record::Sample(s)) = self.decoder.decode(raw) else {
            return false;
        };
        let Some((chain_span, stack_span)) = s.chain_and_stack_spans(raw.bytes) else {
            return false;
        };
        let b = raw.bytes;
        let (Some(head), Some(between), Some(stack_bytes), Some(tail)) = (
            b.get(..chain_span.start),
            b.get(chain_span.end..stack_span.start),
            b.get(stack_span.clone()),
            b.get(stack_span.end..),
        ) else {
            return false;
        };
        if self.unwound_chain(&s, mask).is_none() {
            return false;
        }
        // Ids run out after 2^32 nodes, far beyond any recording; the chain is empty then.
        let id = self.stacks.intern(&self.chain).unwrap_or(0);
        let start = out.len();
        out.extend_from_slice(head);
        out.extend_from_slice(&2u64.to_le_bytes());
        out.extend_from_slice(&STACK_REF.to_le_bytes());
        out.extend_from_slice(&u64::from(id).to_le_bytes());
        out.extend_from_slice(between);
        if self.keep_raw {
            out.extend_from_slice(stack_bytes);
        }
        out.extend_from_slice(tail);
        let size = out.len() - start;
        match u16::try_from(size) {
            Ok(size) => {
                if let Some(field) = out.get_mut(start + 6..start + 8) {
                    field.copy_from_slice(&size.to_le_bytes());
                }
                true
            }
            Err(_) => {
                out.truncate(start);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::stacks::StackTable;
    use crate::event::attr::types;

    const MASK: u64 = 0xff_0fff;

    fn attr() -> Attr {
        let mut a = Attr::new(types::SOFTWARE, 0);
        a.sample_type = st::IP
            | st::TID
            | st::TIME
            | st::CALLCHAIN
            | st::PERIOD
            | st::REGS_USER
            | st::STACK_USER;
        a.sample_regs_user = MASK;
        a.sample_stack_user = 64;
        a
    }

    /// A user-mode sample in the kernel's layout: no kernel chain, 20 registers, 64 bytes of
    /// stack.
    fn sample(ip: u64, time: u64) -> Vec<u8> {
        let mut body: Vec<u64> = vec![ip, 7 | (7 << 32), time, 1000, 0, 2];
        for i in 0..MASK.count_ones() {
            body.push(match i {
                6 => 0x7ffd_0000_1000, // bp
                7 => 0x7ffd_0000_0f00, // sp
                8 => ip,
                _ => u64::from(i),
            });
        }
        body.push(64);
        body.extend((0..8).map(|i| 0x1111 * i));
        body.push(64);
        let size = 8 + body.len() * 8;
        let mut r = Vec::with_capacity(size);
        r.extend_from_slice(&kind::SAMPLE.to_le_bytes());
        r.extend_from_slice(&2u16.to_le_bytes());
        r.extend_from_slice(&(size as u16).to_le_bytes());
        for w in body {
            r.extend_from_slice(&w.to_le_bytes());
        }
        r
    }

    #[test]
    fn samples_lose_their_stack_and_point_into_the_table() {
        let mut u = RecordUnwinder::new([(1, attr())], false, std::path::Path::new("/nonexistent"));
        let mut batch = sample(0x401000, 10);
        batch.extend(sample(0x401000, 20));
        let (out, block) = u.process(&batch);
        let mut stored = attr();
        stored.sample_type = stored_sample_type(stored.sample_type, false);
        assert_eq!(stored.sample_type & (st::REGS_USER | st::STACK_USER), 0);
        let d = Decoder::new([(1, stored)]);
        let mut table = StackTable::new();
        table.add_block(&block.expect("a stacks block"));
        let mut n = 0;
        for raw in decode::records(&out) {
            let Ok(Record::Sample(s)) = d.decode(&raw.unwrap()) else {
                panic!("not a sample")
            };
            let chain: Vec<u64> = s.callchain.unwrap().iter().collect();
            assert_eq!(chain[0], STACK_REF);
            let mut words = Vec::new();
            assert!(table.expand(chain[1], &mut words));
            // No mappings: the walk keeps the instruction pointer.
            assert_eq!(words, [context::USER, 0x401000]);
            assert_eq!(s.time, Some(10 * (n + 1)));
            n += 1;
        }
        assert_eq!(n, 2);
        assert_eq!(u.stats().samples, 2);
        // The same chain again adds no node.
        assert!(u.process(&sample(0x401000, 30)).1.is_none());
        // Kept raw, the stack stays and the record still decodes with the opened attr.
        let mut raw =
            RecordUnwinder::new([(1, attr())], true, std::path::Path::new("/nonexistent"));
        let (out, _) = raw.process(&sample(0x401000, 10));
        let Ok(Record::Sample(s)) =
            Decoder::new([(1, attr())]).decode(&decode::records(&out).next().unwrap().unwrap())
        else {
            panic!("not a sample")
        };
        assert_eq!(s.stack_user.unwrap().data.len(), 64);
        assert_eq!(s.callchain.unwrap().get(0), Some(STACK_REF));
    }

    /// Damaged batches never panic, and never grow beyond the chain words the stage adds.
    #[test]
    fn mutated_batches_never_panic() {
        let mut next = crate::testutil::xorshift(0x5eed);
        let mut good = sample(0x401000, 10);
        good.extend(sample(0x402000, 20));
        for _ in 0..3000 {
            let mut b = good.clone();
            for _ in 0..(1 + next() % 6) {
                let at = (next() % b.len() as u64) as usize;
                b[at] = next() as u8;
            }
            if next().is_multiple_of(4) {
                b.truncate((next() % b.len() as u64) as usize);
            }
            let mut u =
                RecordUnwinder::new([(1, attr())], false, std::path::Path::new("/nonexistent"));
            let (out, _) = u.process(&b);
            assert!(out.len() <= b.len() + 64, "{} > {}", out.len(), b.len());
        }
    }
}

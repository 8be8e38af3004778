use super::*;
use crate::data::offcpu::{MISC_AGGREGATED, MISC_PREEMPTED, OFF_CPU_ID, event_meta};
use crate::decode::{context, misc};
use crate::event::attr::{flag, types};

const SWITCHES: u64 = 11;
const STACKS: u64 = 12;
const TRACKING: u64 = 13;

fn attrs() -> (Attr, Attr, Attr) {
    let mut sw = Attr::new(types::SOFTWARE, 9);
    sw.sample_type = sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample::CPU;
    sw.set(flag::SAMPLE_ID_ALL | flag::CONTEXT_SWITCH, true);
    let mut st = Attr::new(types::SOFTWARE, 3);
    st.sample_type = sw.sample_type | sample::PERIOD | sample::CALLCHAIN;
    st.sample_period_or_freq = 1;
    st.set(flag::SAMPLE_ID_ALL, true);
    let mut tr = Attr::new(types::SOFTWARE, 0);
    tr.sample_type = sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME;
    tr.set(flag::SAMPLE_ID_ALL | flag::TASK, true);
    (sw, st, tr)
}

fn recorder(thresh_ns: u64, blocked_only: bool) -> OffCpuRecorder {
    let (sw, st, tr) = attrs();
    OffCpuRecorder::new(
        [
            (SWITCHES, sw, false),
            (STACKS, st, true),
            (TRACKING, tr, false),
        ],
        thresh_ns,
        blocked_only,
    )
}

fn header(out: &mut Vec<u8>, type_: u32, misc: u16, words: usize) {
    out.extend_from_slice(&type_.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&((8 + 8 * words) as u16).to_le_bytes());
}

fn words(out: &mut Vec<u8>, w: &[u64]) {
    for x in w {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn switch(out: &mut Vec<u8>, tid: u32, time: u64, cpu: u32, kind: &str) {
    let m = match kind {
        "out" => misc::SWITCH_OUT,
        "preempt" => misc::SWITCH_OUT | misc::SWITCH_OUT_PREEMPT,
        _ => 0,
    };
    header(out, kind::SWITCH, m, 4);
    words(
        out,
        &[
            u64::from(tid) | u64::from(tid) << 32,
            time,
            u64::from(cpu),
            SWITCHES,
        ],
    );
}

fn stack(out: &mut Vec<u8>, tid: u32, time: u64, frames: &[u64]) {
    let chain: Vec<u64> = [context::KERNEL, 0xffff_ffff_8100_0010]
        .into_iter()
        .chain([context::USER])
        .chain(frames.iter().copied())
        .collect();
    header(out, kind::SAMPLE, misc::KERNEL, 7 + chain.len());
    words(
        out,
        &[
            STACKS,
            0xffff_ffff_8100_0010,
            u64::from(tid) | u64::from(tid) << 32,
            time,
            0,
            1,
        ],
    );
    words(out, &[chain.len() as u64]);
    words(out, &chain);
}

fn exit(out: &mut Vec<u8>, tid: u32, time: u64) {
    header(out, kind::EXIT, 0, 3 + 3);
    words(
        out,
        &[u64::from(tid) | 1 << 32, u64::from(tid) | 1 << 32, time],
    );
    words(
        out,
        &[u64::from(tid) | u64::from(tid) << 32, time, TRACKING],
    );
}

/// The `offcpu-time` samples in `bytes`: (tid, time, ns, count, misc, chain).
fn samples(bytes: &[u8]) -> Vec<(u32, u64, u64, u64, u16, Vec<u64>)> {
    let d = Decoder::new([(OFF_CPU_ID, event_meta(0).attr)]);
    decode::records(bytes)
        .flatten()
        .filter_map(|raw| match d.decode(&raw) {
            Ok(Record::Sample(s)) => Some((
                s.tid?,
                s.time?,
                s.period?,
                s.weight?,
                s.misc,
                s.callchain.map(|c| c.iter().collect()).unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

fn pass(rings: Vec<Vec<u8>>, exits: Vec<u8>) -> Pass {
    Pass {
        rings: rings
            .into_iter()
            .map(|r| (super::RingKind::Switches, r))
            .collect(),
        exits,
        ..Pass::default()
    }
}

#[test]
fn short_intervals_add_up_per_stack_and_long_ones_are_samples_of_their_own() {
    let ms = 1_000_000;
    let mut r = recorder(ms, false);
    let mut cpu0 = Vec::new();
    // Thread 5: 10 µs in read (twice), then 5 ms in read, then a preemption of 20 µs.
    stack(&mut cpu0, 5, 990, &[0x401000, 0x402000]);
    switch(&mut cpu0, 5, 1000, 0, "out");
    switch(&mut cpu0, 5, 11_000, 0, "in");
    stack(&mut cpu0, 5, 19_990, &[0x401000, 0x402000]);
    switch(&mut cpu0, 5, 20_000, 0, "out");
    switch(&mut cpu0, 5, 30_000, 0, "in");
    stack(&mut cpu0, 5, 39_990, &[0x401000, 0x402000]);
    switch(&mut cpu0, 5, 40_000, 0, "out");
    let mut direct = r.pass(&pass(vec![cpu0], Vec::new()), None);
    // Nothing is paired before a later pass shows the rings were drained past it.
    assert!(direct.is_empty());
    let mut cpu1 = Vec::new();
    switch(&mut cpu1, 5, 40_000 + 5 * ms, 1, "in");
    switch(&mut cpu1, 5, 50_000 + 5 * ms, 1, "preempt");
    stack(&mut cpu1, 5, 50_001 + 5 * ms, &[0x403000]);
    switch(&mut cpu1, 5, 70_000 + 5 * ms, 1, "in");
    direct.extend(r.pass(&pass(vec![cpu1], Vec::new()), None));
    let end = r.finish_file(None, true);
    direct.extend(end.direct);
    let d = samples(&direct);
    assert_eq!(d.len(), 1, "{d:?}");
    let (tid, time, ns, count, m, chain) = &d[0];
    assert_eq!((*tid, *time, *ns, *count), (5, 40_000 + 5 * ms, 5 * ms, 1));
    assert_eq!(m & (MISC_AGGREGATED | MISC_PREEMPTED), 0);
    assert_eq!(chain[chain.len() - 2..], [0x401000, 0x402000]);
    let mut a = samples(&end.aggregates);
    a.sort_by_key(|s| s.4);
    assert_eq!(a.len(), 2, "{a:?}");
    // The two reads: one sample, two intervals.
    assert_eq!(
        (a[0].2, a[0].3, a[0].4 & MISC_AGGREGATED != 0),
        (20_000, 2, true)
    );
    // The preemption, with its own stack.
    assert_eq!((a[1].2, a[1].3), (20_000, 1));
    assert_ne!(a[1].4 & MISC_PREEMPTED, 0);
    assert_eq!(a[1].5.last(), Some(&0x403000));
    let s = end.stats;
    assert_eq!(
        (
            s.intervals,
            s.direct,
            s.aggregated,
            s.aggregate_samples,
            s.stacks
        ),
        (4, 1, 3, 2, 4)
    );
    assert_eq!(
        (s.ns, s.direct_ns, s.aggregated_ns),
        (5 * ms + 40_000, 5 * ms, 40_000)
    );
    assert_eq!((s.without_stack, s.dropped), (0, 0));
}

#[test]
fn records_of_two_cpus_pair_in_time_order_whatever_pass_they_came_in() {
    let mut r = recorder(u64::MAX, false);
    // CPU 1's ring was drained before thread 7 left CPU 0, so its switch-in (on CPU 1)
    // comes in the same pass as the switch-out, before it in ring order.
    let mut cpu1 = Vec::new();
    switch(&mut cpu1, 7, 2_000, 1, "in");
    let mut cpu0 = Vec::new();
    stack(&mut cpu0, 7, 995, &[0x401000]);
    switch(&mut cpu0, 7, 1_000, 0, "out");
    r.pass(&pass(vec![cpu1, cpu0], Vec::new()), None);
    // A switch-in that comes a pass after a newer record is still paired (late).
    let mut late = Vec::new();
    switch(&mut late, 7, 3_000, 1, "out");
    r.pass(&pass(vec![late], Vec::new()), None);
    let mut cpu0 = Vec::new();
    switch(&mut cpu0, 8, 3_500, 0, "out");
    switch(&mut cpu0, 8, 3_600, 0, "in");
    r.pass(&pass(vec![cpu0], Vec::new()), None);
    let mut cpu1 = Vec::new();
    switch(&mut cpu1, 7, 3_400, 1, "in");
    r.pass(&pass(vec![cpu1], Vec::new()), None);
    let end = r.finish_file(None, true);
    let mut a = samples(&end.aggregates);
    a.sort_by_key(|s| (s.0, s.2));
    assert_eq!(
        a.iter().map(|s| (s.0, s.2, s.3)).collect::<Vec<_>>(),
        [(7, 400, 1), (7, 1_000, 1), (8, 100, 1)]
    );
    assert_eq!(end.stats.without_stack, 2);
}

#[test]
fn exits_and_lost_records_leave_no_state_and_are_counted() {
    let mut r = recorder(0, true);
    let mut cpu0 = Vec::new();
    switch(&mut cpu0, 9, 100, 0, "out");
    switch(&mut cpu0, 9, 200, 0, "in");
    // The switch-in after this one was lost.
    switch(&mut cpu0, 9, 300, 0, "out");
    switch(&mut cpu0, 9, 400, 0, "out");
    switch(&mut cpu0, 9, 450, 0, "in");
    // A preemption, left out with --off-cpu=blocked.
    switch(&mut cpu0, 9, 500, 0, "preempt");
    switch(&mut cpu0, 9, 600, 0, "in");
    // Its last switch-out is after its exit.
    switch(&mut cpu0, 9, 710, 0, "out");
    let mut exits = Vec::new();
    exit(&mut exits, 9, 700);
    r.pass(&pass(vec![cpu0], exits), None);
    let mut lost = Vec::new();
    header(&mut lost, kind::LOST, 0, 2 + 4);
    words(&mut lost, &[SWITCHES, 3, 9 | 9 << 32, 800, 0, SWITCHES]);
    // The second pass releases the first: everything up to its newest time.
    let mut direct = r.pass(&pass(vec![lost], Vec::new()), None);
    assert_eq!(samples(&direct).len(), 2);
    let end = r.finish_file(None, true);
    direct.extend(&end.direct);
    // Threshold 0: every interval is direct; the LOST record is kept among them, in order.
    let d = samples(&direct);
    assert_eq!(
        d.iter().map(|s| (s.1, s.2)).collect::<Vec<_>>(),
        [(200, 100), (450, 50)]
    );
    let kinds: Vec<u32> = decode::records(&direct)
        .flatten()
        .map(|r| r.header.type_)
        .collect();
    assert_eq!(kinds, [kind::SAMPLE, kind::SAMPLE, kind::LOST]);
    let s = end.stats;
    assert_eq!(
        (s.intervals, s.direct, s.left_out, s.left_out_ns, s.dropped),
        (3, 2, 1, 100, 1)
    );
    assert_eq!((s.switches_lost, s.stacks_lost), (3, 0));
    assert_eq!(r.threads.len(), 0);
    assert_eq!(r.tracker.threads(), 0);
}

#[test]
fn a_gap_drops_the_intervals_open_across_it_and_is_counted() {
    let mut r = recorder(u64::MAX, false);
    let mut cpu0 = Vec::new();
    switch(&mut cpu0, 3, 100, 0, "out");
    switch(&mut cpu0, 3, 200, 0, "in");
    switch(&mut cpu0, 3, 300, 0, "out");
    r.pass(&pass(vec![cpu0], Vec::new()), None);
    // The drain left 40 switch records unread: thread 3's switch-in at ~400 among them.
    let mut after = Vec::new();
    switch(&mut after, 3, 900, 0, "out");
    switch(&mut after, 3, 950, 0, "in");
    let mut p = pass(vec![after], Vec::new());
    (p.gap, p.switches_discarded) = (true, 40);
    r.pass(&p, None);
    let end = r.finish_file(None, true);
    // The interval 100-200 and 900-950; never a made-up 300-950.
    let mut a = samples(&end.aggregates);
    a.sort_by_key(|s| s.2);
    assert_eq!(a.iter().map(|s| s.2).sum::<u64>(), 150, "{a:?}");
    let s = end.stats;
    assert_eq!((s.intervals, s.dropped, s.switches_discarded), (2, 1, 40));
    assert!(
        s.warnings()
            .iter()
            .any(|w| w.contains("40 switch records were left unread") && w.contains("about 20")),
        "{:?}",
        s.warnings()
    );
}

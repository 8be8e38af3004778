//! Helpers of the unit tests.

/// A deterministic pseudo-random sequence (xorshift64) for mutation tests: the same seed gives
/// the same mutants on every run.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed.max(1);
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// A resolved location of `sym` in the file `app` at 0x1000, for output tests.
pub(crate) fn loc(sym: &str) -> crate::symbol::symbolizer::Loc {
    crate::symbol::symbolizer::Loc {
        addr: 0x1000,
        kernel: false,
        dso: "app".into(),
        file_addr: 0,
        sym: Some(sym.into()),
        sym_offset: 0,
        sym_start: 0,
        frames: Vec::new(),
        unresolved: None,
        rel_addr: 0,
        dso_path: std::sync::Arc::default(),
        span: None,
    }
}

/// A sample of the output tests: `period` on `event` at time 0, thread 8 of process 7 on CPU
/// 0, with its call chain (`callers`, innermost first), no cgroup, TopDown or retire latency.
pub(crate) fn view<'a>(
    event: u16,
    leaf: u32,
    callers: &'a [u32],
    period: u64,
) -> crate::analysis::profile::SampleView<'a> {
    crate::analysis::profile::SampleView {
        event,
        cpu: 0,
        pid: 7,
        tid: 8,
        comm: 0,
        cgroup: u32::MAX,
        cgroup_ns: u32::MAX,
        trace: u32::MAX,
        time: 0,
        period,
        samples: 1,
        leaf,
        callers,
        callchain: true,
        td: None,
        retire_lat: None,
        mem: None,
        members: &[],
    }
}

/// The events of a recording of `event` with off-CPU time: `event`, then the `offcpu-time`
/// event the replay makes of switch records.
pub(crate) fn events_with_off_cpu(event: &str) -> Vec<crate::analysis::profile::EventInfo> {
    use crate::analysis::profile::EventInfo;
    vec![
        EventInfo {
            name: event.into(),
            ..Default::default()
        },
        EventInfo {
            index: usize::MAX,
            off_cpu: true,
            name: crate::analysis::replay::OFF_CPU_EVENT.into(),
            ..Default::default()
        },
    ]
}

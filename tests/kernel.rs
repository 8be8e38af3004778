//! The kernel layer on the real kernel with software events: open, ioctls, SET_OUTPUT,
//! sampling-read groups, WEIGHT_STRUCT, and draining a small ring buffer that wraps many times.

mod support;

use std::time::{Duration, Instant};

use hrec::event::Attr;
use hrec::event::attr::{flag, read, sample, types};
use hrec::kernel::{self, EventFd, RingBuffer};

const SAMPLE: u32 = 9;
const LOST: u32 = 2;

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// Splits a byte stream of records into (type, record bytes).
fn records(bytes: &[u8]) -> Vec<(u32, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let ty = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let size = usize::from(u16::from_le_bytes(
            bytes[at + 6..at + 8].try_into().unwrap(),
        ));
        assert!(
            size >= 8 && at + size <= bytes.len(),
            "record at {at} size {size}"
        );
        out.push((ty, &bytes[at..at + size]));
        at += size;
    }
    out
}

fn spin(d: Duration, mut each: impl FnMut()) {
    let end = Instant::now() + d;
    let mut x = 1u64;
    while Instant::now() < end {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        each();
    }
}

fn clock(config: u64, period: u64, st: u64, rf: u64) -> Attr {
    let mut a = Attr::new(types::SOFTWARE, config);
    a.sample_period_or_freq = period;
    a.sample_type = st;
    a.read_format = rf;
    // User space only: works under perf_event_paranoid=2 without root as well.
    a.set(
        flag::DISABLED | flag::SAMPLE_ID_ALL | flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV,
        true,
    );
    a
}

fn open_self(a: &Attr, group: Option<&EventFd>) -> EventFd {
    kernel::open(a, 0, -1, group)
        .unwrap_or_else(|e| panic!("perf_event_open (perf_event_paranoid?): {e}"))
}

#[test]
fn cpu_clock_samples_with_weight_struct() {
    let st = sample::IP | sample::TID | sample::TIME | sample::PERIOD | sample::WEIGHT_STRUCT;
    let fd = open_self(&clock(0, 100_000, st, read::ID | read::LOST), None);
    let mut rb = RingBuffer::new(&fd, 64).unwrap();
    fd.enable(false).unwrap();
    spin(Duration::from_millis(150), || {});
    fd.disable(false).unwrap();
    let mut bytes = Vec::new();
    let d = rb.drain(&mut bytes).unwrap();
    assert_eq!(d.bytes, bytes.len());
    let tid = kernel::gettid();
    let samples: Vec<&[u8]> = records(&bytes)
        .into_iter()
        .filter(|(t, _)| *t == SAMPLE)
        .map(|(_, r)| r)
        .collect();
    assert!(
        samples.len() >= 50,
        "only {} samples in 150 ms at 10 kHz",
        samples.len()
    );
    for s in &samples {
        // header, ip, pid/tid, time, period, weight
        assert_eq!(s.len(), 48);
        assert_eq!(u64_at(s, 16) >> 32, u64::from(tid), "tid");
        assert_eq!(u64_at(s, 32), 100_000, "period");
        assert_eq!(u64_at(s, 40), 0, "software events write a zero weight");
    }
    let times: Vec<u64> = samples.iter().map(|s| u64_at(s, 24)).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "time goes forward");
    assert_eq!(rb.pending(), 0);
}

#[test]
fn small_ring_wraps_and_every_record_survives() {
    let st = sample::IP | sample::TID | sample::TIME | sample::PERIOD;
    let fd = open_self(&clock(0, 20_000, st, read::ID | read::LOST), None);
    let mut rb = RingBuffer::new(&fd, 1).unwrap();
    let ring = kernel::page_size();
    let mut bytes = Vec::new();
    let mut drains = 0;
    fd.enable(false).unwrap();
    spin(Duration::from_millis(300), || {
        rb.drain(&mut bytes).expect("no corruption");
        drains += 1;
    });
    fd.disable(false).unwrap();
    rb.drain(&mut bytes).unwrap();
    assert!(
        bytes.len() > 4 * ring,
        "only {} bytes through a {ring}-byte ring",
        bytes.len()
    );
    let tid = u64::from(kernel::gettid());
    let recs = records(&bytes);
    let mut n = 0;
    for (ty, r) in &recs {
        match *ty {
            SAMPLE => {
                assert_eq!(r.len(), 40);
                assert_eq!(u64_at(r, 16) >> 32, tid);
                n += 1;
            }
            LOST => {}
            other => assert!(other < 32, "unexpected record type {other}"),
        }
    }
    assert!(n > 100 && drains > 10, "{n} samples over {drains} drains");
}

#[test]
fn sampling_read_group_carries_leader_first() {
    // Leader task-clock counts only; member cpu-clock samples and reads the group.
    let rf = read::ID | read::GROUP | read::LOST;
    let st = sample::IP | sample::TID | sample::TIME | sample::READ | sample::ID;
    let leader = open_self(&clock(1, 0, st, rf), None);
    let mut m = clock(0, 200_000, st, rf);
    m.set(flag::DISABLED, false);
    let member = open_self(&m, Some(&leader));
    let mut rb = RingBuffer::new(&member, 16).unwrap();
    leader
        .set_output(&member)
        .expect("SET_OUTPUT into the member's buffer");
    let (lid, mid) = (leader.id().unwrap(), member.id().unwrap());
    assert_ne!(lid, mid);
    leader.enable(true).unwrap();
    spin(Duration::from_millis(100), || {});
    leader.disable(true).unwrap();
    let mut bytes = Vec::new();
    rb.drain(&mut bytes).unwrap();
    let samples: Vec<&[u8]> = records(&bytes)
        .into_iter()
        .filter(|(t, _)| *t == SAMPLE)
        .map(|(_, r)| r)
        .collect();
    assert!(samples.len() >= 20, "{} samples", samples.len());
    let mut last_leader = 0;
    for s in &samples {
        // header 8, ip 8, tid 8, time 8, id 8, then nr + 2 x {value, id, lost}
        assert_eq!(s.len(), 8 + 8 * 4 + 8 + 2 * 24);
        assert_eq!(u64_at(s, 32), mid, "the member samples");
        assert_eq!(u64_at(s, 40), 2, "nr");
        assert_eq!(
            (u64_at(s, 56), u64_at(s, 80)),
            (lid, mid),
            "leader first, then member"
        );
        let leader_value = u64_at(s, 48);
        assert!(leader_value >= last_leader, "cumulative task-clock");
        last_leader = leader_value;
    }
    assert!(last_leader > 10_000_000, "task-clock ran {last_leader} ns");
}

#[test]
fn hardware_cycles_without_pmu_is_enoent() {
    if support::host_has_core_pmu() {
        eprintln!("skipped: this machine has a core PMU, cycles opens");
        return;
    }
    let mut a = Attr::new(types::HARDWARE, 0);
    a.sample_period_or_freq = 4000;
    a.set(
        flag::DISABLED | flag::FREQ | flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV,
        true,
    );
    let e = kernel::open(&a, 0, -1, None).unwrap_err();
    assert_eq!(e.errno(), libc::ENOENT, "{e}");
}

/// Why the recorder makes its epoll set before the events start (`record::drain::watch`): a
/// perf fd's poll reports a ring's wakeup once (the kernel clears it as it reports it), and
/// epoll polls an fd both when it is added and when it delivers. So a ring watched before it
/// passes its watermark is reported by the next wait; one added after its wakeup is not, and,
/// full, it writes nothing more and wakes no one again. cpu-clock samples of this thread with
/// a wakeup at every sample.
#[test]
fn a_ring_wakes_the_epoll_set_it_was_in_before_its_wakeup() {
    use hrec::kernel::process::Epoll;
    use std::os::fd::AsRawFd;
    let st = sample::IP | sample::TID | sample::TIME;
    let open = || {
        let mut a = clock(0, 100_000, st, 0);
        a.wakeup = 1;
        let fd = open_self(&a, None);
        let rb = RingBuffer::new(&fd, 8).unwrap();
        (fd, rb)
    };
    let sample_once = |fd: &EventFd, rb: &RingBuffer| {
        fd.enable(false).unwrap();
        spin(Duration::from_millis(1), || {});
        while rb.pending() == 0 {
            spin(Duration::from_millis(1), || {});
        }
        fd.disable(false).unwrap();
    };
    let mut ready = Vec::new();
    // Watched first: reported (the wait ends at once; the bound is only against a hang).
    let (fd, rb) = open();
    let epoll = Epoll::new().unwrap();
    epoll.add(fd.as_raw_fd(), 7).unwrap();
    sample_once(&fd, &rb);
    epoll.wait(60_000, &mut ready).unwrap();
    assert_eq!(ready, [(7, false)]);
    // Watched after its wakeup: the add consumed it, and nothing is reported (the event is
    // disabled: nothing else can come).
    let (fd, rb) = open();
    sample_once(&fd, &rb);
    let late = Epoll::new().unwrap();
    late.add(fd.as_raw_fd(), 8).unwrap();
    late.wait(200, &mut ready).unwrap();
    assert_eq!(ready, [], "pending {} bytes", rb.pending());
}

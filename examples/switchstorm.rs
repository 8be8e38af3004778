//! Switch-storm example workload: two threads ping-pong a byte through a pair of sockets, so
//! each one blocks in `read` at every round trip (tens of thousands of context switches per
//! second), while a third thread spins on a CPU (sampled by cpu-clock, it shows whether
//! on-CPU samples survive the storm).
//!
//! Usage: `switchstorm [ROUND_TRIPS] [SPIN_MS]` (defaults 20000 and 0). The ping-pong does a
//! fixed number of round trips (fixed work: a recording's bytes per switch compare across
//! runs); the spinner spins until the ping-pong is done and then at least `SPIN_MS` more.
//! It prints:
//! - `round_trips N seconds S`;
//! - per thread, `switches NAME voluntary V involuntary I` from
//!   `/proc/thread-self/status`, read by the thread itself as its last act before it stops
//!   (the kernel's own count of its switch-outs until then);
//! - `spin iterations N`.

use std::hint::black_box;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The calling thread's context switches so far: (voluntary, involuntary).
fn own_switches() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        field("voluntary_ctxt_switches:"),
        field("nonvoluntary_ctxt_switches:"),
    )
}

/// Waits for the peer's byte (blocks: a switch-out) and sends one back.
#[inline(never)]
fn pong(s: &mut UnixStream, n: u64) {
    let mut b = [0u8; 1];
    for _ in 0..n {
        s.read_exact(&mut b).expect("read");
        s.write_all(&b).expect("write");
    }
}

/// Sends a byte and waits for it to come back, `n` times.
#[inline(never)]
fn ping(s: &mut UnixStream, n: u64) {
    let mut b = [7u8; 1];
    for _ in 0..n {
        s.write_all(&b).expect("write");
        s.read_exact(&mut b).expect("read");
    }
}

#[inline(never)]
fn spin(stop: &AtomicBool) -> u64 {
    let mut n = 0u64;
    let mut x = 1u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1024 {
            x = black_box(x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(3));
        }
        n += 1;
    }
    black_box(x);
    n
}

fn main() {
    let mut args = std::env::args().skip(1);
    let trips: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let spin_ms: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let (mut a, mut b) = UnixStream::pair().expect("socketpair");
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("spinner".into())
            .spawn(move || (spin(&stop), own_switches()))
            .expect("spawn")
    };
    let ponger = std::thread::Builder::new()
        .name("ponger".into())
        .spawn(move || {
            pong(&mut b, trips);
            own_switches()
        })
        .expect("spawn");
    let pinger = std::thread::Builder::new()
        .name("pinger".into())
        .spawn(move || {
            let t = Instant::now();
            ping(&mut a, trips);
            (t.elapsed(), own_switches())
        })
        .expect("spawn");
    let (took, ping_sw) = pinger.join().expect("pinger");
    let pong_sw = ponger.join().expect("ponger");
    std::thread::sleep(Duration::from_millis(spin_ms));
    stop.store(true, Ordering::Relaxed);
    let (iterations, spin_sw) = spinner.join().expect("spinner");
    println!("round_trips {trips} seconds {:.3}", took.as_secs_f64());
    for (name, (v, i)) in [
        ("pinger", ping_sw),
        ("ponger", pong_sw),
        ("spinner", spin_sw),
    ] {
        println!("switches {name} voluntary {v} involuntary {i}");
    }
    println!("spin iterations {iterations}");
}

//! Example workload with known hot spots, for recording and for tests.
//!
//! `hot_multiply` (a dependent multiply chain, core bound) takes about three quarters of the
//! time and `hot_scan` (strided loads over 32 MiB, memory bound) about a fifth. Each is
//! `#[inline(never)]` so it shows up as its own symbol; the multiply step is the
//! `#[inline(always)]` function `mix`, an inline frame inside `hot_multiply`. An optional
//! argument scales the run time (default 1 = roughly 0.4 s on a 2-core VM). The split between
//! the two moves with the machine's load (`hot_scan` waits on memory others share), so with a
//! second argument `times` the program prints the CPU time each took (from
//! `/proc/thread-self/schedstat`, wall time where that is missing) on stderr:
//! `hotspots: cpu ns hot_multiply N hot_scan M`.

use std::hint::black_box;

/// Always inlined into `hot_multiply`: its samples carry an inline frame, so
/// `hrec report --sort sym,srcline` shows this function's line inside `hot_multiply`.
#[inline(always)]
fn mix(x: u64, i: u64) -> u64 {
    x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(i)
}

#[inline(never)]
fn hot_multiply(rounds: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..rounds {
        x = mix(x, i);
    }
    x
}

#[inline(never)]
fn hot_scan(buf: &[u64], passes: usize) -> u64 {
    let mut sum = 0u64;
    for p in 0..passes {
        let mut i = p % 8;
        while i < buf.len() {
            sum = sum.wrapping_add(buf[i]);
            i += 8; // one load per 64-byte line
        }
    }
    sum
}

/// This thread's CPU time in ns (the first field of `/proc/thread-self/schedstat`), or the
/// wall time since `start` where the file is missing.
fn cpu_ns(start: std::time::Instant) -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| start.elapsed().as_nanos() as u64)
}

fn main() {
    let scale: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let times = std::env::args().nth(2).as_deref() == Some("times");
    let buf: Vec<u64> = (0..(32 << 20) / 8).collect();
    let mut acc = 0u64;
    let start = std::time::Instant::now();
    let (mut multiply_ns, mut scan_ns) = (0, 0);
    for _ in 0..scale {
        let t = cpu_ns(start);
        acc ^= hot_multiply(black_box(1_500_000_000));
        let u = cpu_ns(start);
        acc ^= hot_scan(black_box(&buf), black_box(48));
        multiply_ns += u - t;
        scan_ns += cpu_ns(start) - u;
    }
    println!("hotspots: {acc:#x}");
    if times {
        eprintln!("hotspots: cpu ns hot_multiply {multiply_ns} hot_scan {scan_ns}");
    }
}

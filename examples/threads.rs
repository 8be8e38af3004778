//! Multi-threaded, multi-process example workload: the main thread starts `THREADS` worker
//! threads and one child process (this program again, with `child`), and every one of them
//! spins for the same time in its own `#[inline(never)]` function, so a recorder that follows
//! threads and children shows samples from each.
//!
//! Usage: `threads [SECONDS]` (default 0.5). Each thread names itself (`worker-N`), and the
//! child names its process `threads-child`, so per-thread counts are easy to read.

use std::hint::black_box;
use std::time::{Duration, Instant};

const THREADS: usize = 3;

#[inline(never)]
fn spin(d: Duration, salt: u64) -> u64 {
    let end = Instant::now() + d;
    let mut x = salt;
    while Instant::now() < end {
        for _ in 0..4096 {
            x = black_box(x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(salt));
        }
    }
    x
}

#[inline(never)]
fn child_work(d: Duration) -> u64 {
    spin(d, 7)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next();
    if first.as_deref() == Some("child") {
        let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0.5);
        black_box(child_work(Duration::from_secs_f64(secs)));
        return;
    }
    let secs: f64 = first.and_then(|s| s.parse().ok()).unwrap_or(0.5);
    let d = Duration::from_secs_f64(secs);
    let exe = std::env::current_exe().expect("own path");
    let mut child = std::process::Command::new(exe)
        .arg("child")
        .arg(secs.to_string())
        .spawn()
        .expect("start the child process");
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn(move || spin(d, i as u64 + 1))
                .expect("start a worker")
        })
        .collect();
    let mut x = spin(d, 99);
    for w in workers {
        x ^= w.join().expect("worker");
    }
    let status = child.wait().expect("child");
    black_box(x);
    std::process::exit(if status.success() { 0 } else { 1 });
}

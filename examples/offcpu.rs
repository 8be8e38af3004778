//! Off-CPU example workload: phases that block for known times, each in its own
//! `#[inline(never)]` function, and the program's own measure of each, so an off-CPU profile
//! can be checked against it.
//!
//! Usage: `offcpu [SCALE]` (default 1.0 scales every wait). It prints one line per blocking
//! function, `blocked FUNCTION calls N ms X`, where X adds up the time measured around each of
//! its calls (the thread is off the CPU for nearly all of it):
//! - `nap` (in `sleep_phase`): 5 sleeps of 20 ms (`nanosleep`);
//! - `take_lock` (in `lock_phase`): 4 waits for a mutex another thread holds for 15 ms each
//!   time (a futex);
//! - `join_sleepy` (in `join_phase`): 1 join of a thread that sleeps 30 ms;
//! - `spin_phase`: 40 ms on the CPU, never blocking (it should get no blocked time).

use std::hint::black_box;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

fn ms(scale: f64, v: f64) -> Duration {
    Duration::from_secs_f64(v * scale / 1000.0)
}

/// Runs `f`, adding the time it took to `total`.
fn timed<T>(total: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let v = f();
    *total += t.elapsed();
    v
}

// Each blocking function does something after its blocking call, so that the call is not a
// tail call (which would leave no frame of the function on the stack).

#[inline(never)]
fn nap(d: Duration) {
    std::thread::sleep(d);
    black_box(d);
}

#[inline(never)]
fn sleep_phase(scale: f64) -> (u32, Duration) {
    let mut blocked = Duration::ZERO;
    for _ in 0..5 {
        timed(&mut blocked, || nap(ms(scale, 20.0)));
    }
    (5, blocked)
}

#[inline(never)]
fn take_lock(lock: &Mutex<u64>) -> std::sync::MutexGuard<'_, u64> {
    let g = lock.lock().unwrap_or_else(|e| e.into_inner());
    black_box(*g);
    g
}

#[inline(never)]
fn hold(lock: &Mutex<u64>, ready: &Barrier, d: Duration) {
    let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
    ready.wait();
    std::thread::sleep(d);
    *g += 1;
}

#[inline(never)]
fn lock_phase(scale: f64) -> (u32, Duration) {
    let lock = Arc::new(Mutex::new(0u64));
    let mut blocked = Duration::ZERO;
    for _ in 0..4 {
        let ready = Arc::new(Barrier::new(2));
        let holder = {
            let (lock, ready) = (lock.clone(), ready.clone());
            std::thread::Builder::new()
                .name("holder".into())
                .spawn(move || hold(&lock, &ready, ms(scale, 15.0)))
                .expect("spawn")
        };
        // The holder has the lock once the barrier opens.
        ready.wait();
        drop(timed(&mut blocked, || take_lock(&lock)));
        holder.join().expect("holder");
    }
    (4, blocked)
}

#[inline(never)]
fn sleepy_child(d: Duration) {
    std::thread::sleep(d);
}

#[inline(never)]
fn join_sleepy(child: std::thread::JoinHandle<()>) {
    let r = child.join();
    black_box(r.is_ok());
    r.expect("join");
}

#[inline(never)]
fn join_phase(scale: f64) -> (u32, Duration) {
    let d = ms(scale, 30.0);
    let child = std::thread::Builder::new()
        .name("sleepy".into())
        .spawn(move || sleepy_child(d))
        .expect("spawn");
    let mut blocked = Duration::ZERO;
    timed(&mut blocked, || join_sleepy(child));
    (1, blocked)
}

#[inline(never)]
fn spin_phase(scale: f64) -> (u32, Duration) {
    let end = Instant::now() + ms(scale, 40.0);
    let mut x = 1u64;
    while Instant::now() < end {
        for _ in 0..4096 {
            x = black_box(x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(3));
        }
    }
    black_box(x);
    (0, Duration::ZERO)
}

fn main() {
    let scale: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    type Phase = fn(f64) -> (u32, Duration);
    let phases: [(&str, Phase); 4] = [
        ("nap", sleep_phase),
        ("take_lock", lock_phase),
        ("join_sleepy", join_phase),
        ("spin_phase", spin_phase),
    ];
    for (name, phase) in phases {
        let (calls, blocked) = phase(scale);
        println!(
            "blocked {name} calls {calls} ms {:.3}",
            blocked.as_secs_f64() * 1000.0
        );
    }
}

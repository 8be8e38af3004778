//! Off-CPU example workload: phases that block for known times, each in its own
//! `#[inline(never)]` function, and the program's own measure of each, so an off-CPU profile
//! can be checked against it.
//!
//! Usage: `offcpu [SCALE]` (default 1.0 scales every wait). It prints one line per blocking
//! function, `blocked FUNCTION calls N ms X`, where N counts the calls that had to wait and X
//! adds up the time each call measures inside itself (the thread is off the CPU for nearly
//! all of it, and whenever it is off the CPU in that time, preempted included, the function
//! is on its stack: a measure around the call would also take in a preemption just before
//! or after it, which a loaded machine makes as long as a time slice). On a loaded machine the main thread may lose the CPU long enough for a lock to be free
//! or a thread to have finished when it gets there: such a call does not wait, and is not
//! counted.
//! - `nap` (in `sleep_phase`): 5 sleeps of 20 ms (`nanosleep`);
//! - `take_lock` (in `lock_phase`): 4 waits for a mutex another thread holds for 15 ms each
//!   time (a futex);
//! - `join_sleepy` (in `join_phase`): 1 join of a thread that sleeps 30 ms;
//! - `spin_phase`: 40 ms on the CPU, never blocking (it should get no blocked time).
//!
//! Then `ran spin_phase ms X` (the wall-clock time of the spin phase: on the CPU, or
//! preempted) and `ran main ms X` (from the start of `main` to its last line), the wall-clock
//! times a combined on- and off-CPU profile should find.

use std::hint::black_box;
use std::sync::{Arc, Barrier, Mutex, TryLockError};
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
fn nap(d: Duration, total: &mut Duration) {
    timed(total, || std::thread::sleep(d));
    black_box(d);
}

#[inline(never)]
fn sleep_phase(scale: f64) -> (u32, Duration) {
    let mut blocked = Duration::ZERO;
    for _ in 0..5 {
        nap(ms(scale, 20.0), &mut blocked);
    }
    (5, blocked)
}

/// The lock, and whether it had to be waited for (it was held when asked for).
#[inline(never)]
fn take_lock<'a>(
    lock: &'a Mutex<u64>,
    total: &mut Duration,
) -> (std::sync::MutexGuard<'a, u64>, bool) {
    let (g, waited) = timed(total, || match lock.try_lock() {
        Ok(g) => (g, false),
        Err(TryLockError::Poisoned(e)) => (e.into_inner(), false),
        Err(TryLockError::WouldBlock) => (lock.lock().unwrap_or_else(|e| e.into_inner()), true),
    });
    black_box(*g);
    (g, waited)
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
    let mut waits = 0;
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
        let (g, waited) = take_lock(&lock, &mut blocked);
        drop(g);
        waits += u32::from(waited);
        holder.join().expect("holder");
    }
    (waits, blocked)
}

#[inline(never)]
fn sleepy_child(d: Duration) {
    std::thread::sleep(d);
}

/// Joins the thread; whether it had to wait (the thread was still running).
#[inline(never)]
fn join_sleepy(child: std::thread::JoinHandle<()>, total: &mut Duration) -> bool {
    timed(total, || {
        let waited = !child.is_finished();
        let r = child.join();
        black_box(r.is_ok());
        r.expect("join");
        waited
    })
}

#[inline(never)]
fn join_phase(scale: f64) -> (u32, Duration) {
    let d = ms(scale, 30.0);
    let child = std::thread::Builder::new()
        .name("sleepy".into())
        .spawn(move || sleepy_child(d))
        .expect("spawn");
    let mut blocked = Duration::ZERO;
    let waited = join_sleepy(child, &mut blocked);
    (u32::from(waited), blocked)
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
    let start = Instant::now();
    let mut spin = Duration::ZERO;
    for (name, phase) in phases {
        let t = Instant::now();
        let (calls, blocked) = phase(scale);
        if name == "spin_phase" {
            spin = t.elapsed();
        }
        println!(
            "blocked {name} calls {calls} ms {:.3}",
            blocked.as_secs_f64() * 1000.0
        );
    }
    println!("ran spin_phase ms {:.3}", spin.as_secs_f64() * 1000.0);
    println!("ran main ms {:.3}", start.elapsed().as_secs_f64() * 1000.0);
}

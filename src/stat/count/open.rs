//! Opening and reading `hrec stat`'s counters: one fd per counter and place, members opened
//! into their leader's group; under `kernel.perf_event_paranoid` a counter the kernel refuses
//! is tried again counting user space only (perf's fallback), and a refusal of that too is one
//! error; an event the kernel does not support is remembered with its errno and printed as
//! `<not supported>`. The `--record-tpebs` samplers (one ring buffer per sampler and place)
//! are opened and drained here too.

use crate::decode::ReadValues;
use crate::event::attr::{flag, read};
use crate::kernel::{self, EventFd};
use crate::stat::tpebs::Collector;

use super::aggregate::Readings;
use super::options::{StatError, TpebsSampler};
use super::plan::Counter;

/// The open `--record-tpebs` samplers: one ring buffer per sampler and task/CPU.
pub(super) struct Samplers {
    pub(super) rings: Vec<(kernel::RingBuffer, EventFd)>,
    names: std::collections::HashMap<u64, String>,
    decoder: crate::decode::Decoder,
    buf: Vec<u8>,
}

impl Samplers {
    pub(super) fn open(
        samplers: &[TpebsSampler],
        places: &[(i32, i32)],
        notes: &mut Vec<String>,
    ) -> Samplers {
        let mut rings = Vec::new();
        let mut names = std::collections::HashMap::new();
        let mut ids = Vec::new();
        for s in samplers {
            for &(pid, cpu) in places {
                let fd = match kernel::open(&s.attr, pid, cpu, None) {
                    Ok(fd) => fd,
                    Err(e) => {
                        notes.push(format!(
                            "--record-tpebs: cannot sample {} ({}), so its retire latency comes from another source",
                            s.event, e.source
                        ));
                        break;
                    }
                };
                let ring = match kernel::RingBuffer::new(&fd, 16) {
                    Ok(r) => r,
                    Err(e) => {
                        notes.push(format!(
                            "--record-tpebs: cannot map a ring buffer for {}: {e}",
                            s.event
                        ));
                        break;
                    }
                };
                if let Ok(id) = fd.id() {
                    names.insert(id, s.event.clone());
                    ids.push((id, s.attr));
                }
                rings.push((ring, fd));
            }
        }
        Samplers {
            rings,
            names,
            decoder: crate::decode::Decoder::new(ids),
            buf: Vec::new(),
        }
    }

    /// Moves every sample in the rings into the collector.
    pub(super) fn drain(&mut self, into: &mut Collector) {
        for (ring, _) in &mut self.rings {
            self.buf.clear();
            if ring.drain(&mut self.buf).is_err() {
                continue;
            }
            for raw in crate::decode::records(&self.buf).flatten() {
                if let Ok(crate::decode::Record::Sample(smp)) = self.decoder.decode(&raw)
                    && let (Some(w), Some(id)) = (smp.weight_struct(), smp.event_id())
                    && let Some(name) = self.names.get(&id)
                {
                    into.add(name, smp.time.unwrap_or(0), w.retire_lat);
                }
            }
        }
    }
}

pub(super) struct Opened {
    /// Per counter: its fds (one per task/CPU); empty when not supported.
    pub(super) fds: Vec<Vec<EventFd>>,
    errors: Vec<Option<i32>>,
}

pub(super) fn open_all(
    counters: &mut [Counter],
    places: &[(i32, i32)],
    notes: &mut Vec<String>,
) -> Result<Opened, StatError> {
    let mut fds: Vec<Vec<EventFd>> = (0..counters.len()).map(|_| Vec::new()).collect();
    let mut errors = vec![None; counters.len()];
    // The counters that fell back to user space, named in one note after the loop.
    let mut user_only: Vec<String> = Vec::new();
    for i in 0..counters.len() {
        let leader = counters[i].leader;
        if leader != i && errors[leader].is_some() {
            errors[i] = errors[leader];
            continue;
        }
        for (k, &(pid, cpu)) in places.iter().enumerate() {
            let group = (leader != i).then(|| &fds[leader][k]);
            let mut attempt = kernel::open(&counters[i].attr, pid, cpu, group);
            if let Err(e) = &attempt
                && matches!(e.errno(), libc::EACCES | libc::EPERM)
                && !counters[i].attr.has(flag::EXCLUDE_KERNEL)
            {
                if counters[i].kernel_tracepoint {
                    return Err(StatError::KernelTracepoint {
                        event: counters[i].name.clone(),
                    });
                }
                // perf's fallback under perf_event_paranoid: count user space only.
                let a = &mut counters[i].attr;
                a.set(flag::EXCLUDE_KERNEL, true);
                a.set(flag::EXCLUDE_HV, true);
                user_only.push(counters[i].name.clone());
                attempt = kernel::open(&counters[i].attr, pid, cpu, group);
            }
            match attempt {
                Ok(fd) => fds[i].push(fd),
                Err(e) => {
                    let errno = e.errno();
                    if matches!(errno, libc::EACCES | libc::EPERM) {
                        return Err(StatError::Denied {
                            event: counters[i].name.clone(),
                            errno,
                            cpu_wide: pid == -1,
                        });
                    }
                    if errno == libc::EMFILE {
                        return Err(StatError::Os {
                            what: format!(
                                "too many open files opening {} (raise it with ulimit -n)",
                                counters[i].name
                            ),
                            source: e.source,
                        });
                    }
                    errors[i] = Some(errno);
                    fds[i].clear();
                    break;
                }
            }
        }
    }
    if !user_only.is_empty() {
        notes.push(format!(
            "counting user space only (kernel.perf_event_paranoid does not allow kernel counting): {}",
            user_only.join(", ")
        ));
    }
    Ok(Opened { fds, errors })
}

pub(super) fn read_all(o: &Opened) -> Readings {
    let mut buf = [0u8; 64];
    let rf = read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING;
    o.fds
        .iter()
        .zip(&o.errors)
        .map(|(fds, err)| {
            if let Some(e) = err {
                return Err(*e);
            }
            Ok(fds
                .iter()
                .map(|fd| {
                    let n = fd.read_raw(&mut buf).ok()?;
                    let v = ReadValues::from_read(&buf[..n], rf).ok()?;
                    Some((
                        v.get(0)?.value,
                        v.time_enabled.unwrap_or(0),
                        v.time_running.unwrap_or(0),
                    ))
                })
                .collect())
        })
        .collect()
}

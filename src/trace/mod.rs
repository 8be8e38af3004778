//! Tracepoints: the kernel's static trace events (`sched:sched_switch`) and the dynamic probe
//! events made through tracefs (`probe_libc:malloc`), as perf finds, records and prints them.
//!
//! * [`tracefs`] finds tracefs under a sysfs root (`kernel/tracing`, else
//!   `kernel/debug/tracing`) and its events: `subsys:event` names and globs expanded in
//!   tracefs' own (directory) order, as perf opens them, each event's `id` (the tracepoint
//!   PMU's `config`) and `format` file. Nothing else reads tracefs, so `list`, the event
//!   language and the recorder agree on what exists and on the one-line refusals.
//! * [`format`] reads a `format` file: the fields of the event's raw record (offset, size,
//!   sign, arrays and `__data_loc` strings) and its print format, kept in the recording so it
//!   reads the same on another machine.

pub mod format;
pub mod print;
pub mod probe;
pub mod tracefs;

pub use format::{EventFormat, Field, FormatError};
pub use tracefs::{TraceError, TraceEvent, Tracefs};

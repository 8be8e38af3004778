//! What a recording is asked to do ([`Session`]: the plan, where the file goes, how it is
//! written) and how it went ([`Outcome`]: the workload's status, the summary line, the
//! trailer). Plain values: [`crate::record::record`] takes the one and returns the other.

use std::path::PathBuf;
use std::sync::{Arc, mpsc};

use crate::data::Trailer;
use crate::event::plan::Plan;
use crate::pmu::Pmus;

use super::switch;

/// What to record and where.
#[derive(Debug, Clone)]
pub struct Session<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// The PMUs it was made from (names and types go into the file).
    pub pmus: &'a Pmus,
    /// `-o`.
    pub output: PathBuf,
    /// `-m`: data pages per buffer; `None` for 512 KiB.
    pub mmap_pages: Option<usize>,
    /// The workload command (for [`Target::Workload`]).
    pub command: Vec<String>,
    /// hrec's own command line, for the file header.
    pub command_line: Vec<String>,
    /// `/proc`.
    pub procfs_root: PathBuf,
    /// `-v`.
    pub verbose: u8,
    /// `--call-graph dwarf,SIZE,raw`: keep the user stack copies after unwinding them.
    pub keep_raw_stacks: bool,
    /// `-z N`: zstd level of the blocks (`None`: [`crate::data::ZSTD_LEVEL`]).
    pub zstd_level: Option<i32>,
    /// `-B/--no-buildid`: no build-ids side block (reports then cannot tell a rebuilt binary).
    pub no_buildid: bool,
    /// The build-id cache that files mapped from another mount namespace or root are copied
    /// into while recording ([`super::identity`]); `None`: no copies (`-N`).
    pub buildid_cache: Option<PathBuf>,
    /// `--switch-output`: a series of files instead of one.
    pub switch_output: Option<switch::SwitchOutput>,
    /// Each finished file of a `--switch-output` series is sent here once it is complete
    /// (`hrec top` reads them as they come).
    pub on_file: Option<mpsc::Sender<PathBuf>>,
    /// Set by the caller to end the recording as a SIGINT would (without a workload to
    /// forward it to: `hrec top`'s end).
    pub stop: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Files read at once on this machine (`hrec top`): no modules, build-ids or kernel
    /// symbols blocks, whose reader takes them from the running system.
    pub live: bool,
}

/// How a recording went.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The workload's exit status (shell convention), or 0 without a workload.
    pub exit_code: i32,
    /// The one summary line (without the `hrec:` prefix).
    pub summary: String,
    /// Warnings to print after it (losses).
    pub warnings: Vec<String>,
    /// The trailer written.
    pub trailer: Trailer,
}

//! Symbolization: from a sampled address to the function, inline chain and source line that
//! were running, or to the reason why that cannot be said.
//!
//! **Address spaces change over time** ([`maps`]). A process maps and unmaps files while it
//! runs, `exec` replaces its whole address space, and a forked child starts with a copy of its
//! parent's. The kernel reports each change as an MMAP/MMAP2, COMM (with `COMM_EXEC`), FORK or
//! EXIT record, so the maps are rebuilt by replaying those records in time order across CPUs
//! and each sample is resolved against the maps valid at its time — never against the final
//! state, which would resolve an address of a since-unmapped library to whatever replaced it.
//!
//! **Runtime addresses are not file addresses** ([`elf`]). A mapping places file offset
//! `pgoff` at address `start`; the ELF program headers say which virtual address (SVMA) that
//! file offset was linked at. Symbol tables and DWARF are indexed by SVMA, so
//! `svma = addr - start + pgoff - p_offset + p_vaddr` for the PT_LOAD segment that holds the
//! offset. This also handles prelinked and non-PIE executables, where SVMA equals the address.
//!
//! **Debug information lives elsewhere** ([`debuginfo`]). Distributions strip binaries and
//! ship DWARF as separate files found by build-id (`/usr/lib/debug/.build-id/xx/rest.debug`),
//! by `.gnu_debuglink` (a name plus CRC32), or with dwz's shared `.gnu_debugaltlink` file.
//!
//! **Kernel addresses** resolve against the kallsyms subset stored in the recording
//! ([`kallsyms`]), not the running kernel's, and JIT code against `/tmp/perf-PID.map`
//! ([`perfmap`]). A perf.data file stores no kernel symbols; the running kernel's are used only
//! when its build-id is the recording's ([`crate::recording::perfdata`]).
//!
//! Every address that does not resolve keeps an [`Unresolved`] reason so the report can say
//! what fraction of samples resolved and why the rest did not.

pub mod binary;
pub mod buildid_cache;
pub mod data;
pub mod datatype;
pub mod debuginfo;
pub mod debuginfod;
mod dwarf;
#[cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]
pub mod elf;
mod inflated;
pub mod kallsyms;
pub mod maps;
pub mod names;
pub mod perfmap;
pub mod symbolizer;

use std::fmt;
use std::sync::Arc;

pub use crate::unwind::FrameAddress;

/// One frame of an address's inline chain, from DWARF.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Function name, demangled (Rust without the hash, C++ without parameters' noise as
    /// `cpp_demangle` prints it). `None` when DWARF names no function here.
    pub function: Option<Arc<str>>,
    /// Source file (as DWARF gives it, joined with the compilation directory when relative).
    pub file: Option<Arc<str>>,
    /// Source line; 0 when unknown.
    pub line: u32,
    /// The line where the function is declared (DWARF's `DW_AT_decl_line` of its
    /// subprogram, through the inlined instance's or out-of-line copy's abstract origin);
    /// 0 when unknown.
    pub decl_line: u32,
}

/// A symbol-table entry (`.symtab`, else `.dynsym`), demangled.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sym {
    /// Demangled name (perf's style: Rust paths without the `::h<hash>` suffix).
    pub name: Arc<str>,
    /// SVMA of the symbol's first byte.
    pub start: u64,
    /// Size in bytes (0 when the table gives none).
    pub size: u64,
}

/// What one file address resolves to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Symbolized {
    /// The containing symbol-table symbol.
    pub sym: Option<Sym>,
    /// Inline chain from DWARF, innermost first; the last frame is the out-of-line function.
    /// Empty when the binary has no DWARF for this address.
    pub frames: Vec<Frame>,
    /// With `sym`: the SVMAs `[lo, hi)` around the address where the symbol table finds the
    /// same symbol.
    pub span: Option<(u64, u64)>,
}

/// Why an address did not resolve to a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unresolved {
    /// No mapping of the process covers the address.
    Unmapped,
    /// An anonymous mapping (JIT code without a `/tmp/perf-PID.map`, or heap/stack).
    Anonymous,
    /// The file could not be found on this machine.
    BinaryMissing,
    /// The file is there but this user may not read it (permissions).
    Unreadable,
    /// The file on disk is not the one that ran: its build-id differs from the recorded one.
    BuildIdMismatch,
    /// The file is not ELF.
    NotElf,
    /// The file has no symbol covering the address (stripped, no debug file found).
    NoSymbols,
    /// A kernel address, but the recording has no kernel symbols (`kptr_restrict`, or
    /// kallsyms was not readable).
    NoKernelSymbols,
    /// A kernel address of a recording made on another kernel (its `[kernel.kallsyms]`
    /// build-id differs from the running kernel's), so this machine's kallsyms cannot name it.
    KernelMismatch,
    /// A kernel address of a recording that names no kernel build-id (perf.data from
    /// `perf record -z`, pipe mode or `--no-buildid`), so this machine's kallsyms cannot be
    /// shown to fit it.
    NoKernelBuildId,
    /// A kernel address of a recording made on this kernel build but loaded at another address
    /// (KASLR, another boot), so this machine's kallsyms would name the wrong functions.
    KernelRelocated,
}

impl Unresolved {
    /// Short label, as the report shows it.
    pub fn label(self) -> &'static str {
        match self {
            Unresolved::Unmapped => "unmapped",
            Unresolved::Anonymous => "anonymous memory (no perf map)",
            Unresolved::BinaryMissing => "binary missing",
            Unresolved::Unreadable => "binary unreadable (permission denied)",
            Unresolved::BuildIdMismatch => "build-id mismatch",
            Unresolved::NotElf => "not ELF",
            Unresolved::NoSymbols => "no symbols",
            Unresolved::NoKernelSymbols => "no kernel symbols",
            Unresolved::KernelMismatch => "kernel differs from the recording's",
            Unresolved::NoKernelBuildId => "no kernel build-id in the recording",
            Unresolved::KernelRelocated => "kernel loaded at another address than in the recording",
        }
    }
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

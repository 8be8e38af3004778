//! Kernel symbols only from the kernel that ran, where it ran. perf.data stores no kernel
//! symbols, only the build-id of `[kernel.kallsyms]` and the address `_text` had; this machine's
//! `/proc/kallsyms` is used only when its kernel build-id (`NT_GNU_BUILD_ID` in
//! `/sys/kernel/notes`) is the recording's and `_text` is where it was. `perf record -z` and
//! pipe mode write no build-ids: for those, the same kernel release (`OSRELEASE` against
//! `/proc/sys/kernel/osrelease`) with `_text` exactly where the recording saw it stands in for
//! the build-id (with KASLR, `_text` moves on every boot, so this is the same boot of the same
//! kernel); without a recorded `_text` nothing fits. Every read of this machine's kernel facts
//! is in this file.
//!
//! `/proc/kallsyms` is read on a second thread while the file opens, through a copy in hrec's
//! cache (`<hrec cache>/kallsyms`, mode 0600, [`crate::cache`]) that is used while the boot id
//! and `/proc/modules` are the ones it was saved with: the kernel takes some 50 ms to write
//! the file.

use std::path::Path;
use std::sync::Arc;

use super::features::BuildIdEntry;
use super::layout::{hex, u32_at};
use crate::symbol::kallsyms::KernelSymbols;

/// Where the running kernel's ELF notes are.
pub(super) const KERNEL_NOTES: &str = "/sys/kernel/notes";
/// The running kernel's symbols.
pub(super) const KALLSYMS: &str = "/proc/kallsyms";
/// The running kernel's release.
pub(super) const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// This machine's kernel release.
pub(super) fn running_release() -> Option<String> {
    let r = std::fs::read_to_string(OSRELEASE).ok()?;
    Some(r.trim().to_string()).filter(|r| !r.is_empty())
}

/// What the recording's kernel build-id says about this machine's kernel symbols.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum KernelCheck {
    /// The recording has no `[kernel.kallsyms]` build-id (no kernel samples, pipe mode, or
    /// `--no-buildid`): this machine's symbols cannot be shown to fit.
    #[default]
    NoBuildId,
    /// The build-ids are equal: kernel symbols come from this machine's `/proc/kallsyms`.
    Matches {
        /// The build-id.
        build_id: String,
    },
    /// No build-id, but the recording's kernel release is this machine's: its symbols are used
    /// when `_text` is where the recording saw it (the same boot).
    SameRelease {
        /// The release.
        release: String,
    },
    /// The recording was made on another kernel.
    Differs {
        /// The recording's kernel build-id.
        recorded: String,
        /// This machine's, when readable.
        running: Option<String>,
    },
}

/// This machine's kernel symbols and where its `_text` is.
type Parsed = (Arc<KernelSymbols>, Option<u64>);

/// This machine's kernel symbols, when they fit the recording.
#[derive(Debug)]
pub(super) enum Kallsyms {
    /// Not used (another kernel, or not asked for).
    None,
    /// Being read and parsed on another thread.
    Pending(std::thread::JoinHandle<Parsed>),
    /// Parsed, and the kernel sits where it sat in the recording.
    Ready(Arc<KernelSymbols>),
    /// The same kernel build, loaded at another address (KASLR after a reboot).
    Relocated {
        /// `_text` in the recording.
        recorded: u64,
        /// `_text` now.
        running: u64,
    },
}

impl Kallsyms {
    /// Reads and parses `kallsyms` (this machine's, `/proc/kallsyms`) on another thread.
    pub(super) fn start(kallsyms: &Path) -> Kallsyms {
        let k = kallsyms.to_path_buf();
        Kallsyms::Pending(std::thread::spawn(move || {
            let text = if k == Path::new(KALLSYMS) {
                cached_kallsyms(&k, crate::cache::dir().as_deref())
            } else {
                std::fs::read(&k).unwrap_or_default()
            };
            let text = String::from_utf8_lossy(&text);
            let start = text.lines().find_map(|l| {
                let mut it = l.split_ascii_whitespace();
                let addr = it.next()?;
                (it.nth(1)? == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
            });
            (Arc::new(KernelSymbols::parse(&text)), start)
        }))
    }

    /// Waits for the reading thread, if it has not finished, and gives the verdict:
    /// `recorded_text` is where the recording's kernel image was (`_text`).
    pub(super) fn settle(&mut self, recorded_text: Option<u64>, text_required: bool) {
        if !matches!(self, Kallsyms::Pending(_)) {
            return;
        }
        let Kallsyms::Pending(h) = std::mem::replace(self, Kallsyms::None) else {
            unreachable!("matched above");
        };
        let (syms, running) = h.join().unwrap_or_default();
        *self = match (recorded_text, running) {
            (Some(recorded), Some(running)) if recorded != running => {
                Kallsyms::Relocated { recorded, running }
            }
            (Some(_), Some(_)) => Kallsyms::Ready(syms),
            // Without a build-id only `_text` ties the recording to this kernel.
            _ if text_required => Kallsyms::None,
            _ => Kallsyms::Ready(syms),
        };
    }
}

/// What `/proc/kallsyms` depends on: this boot (KASLR, the kernel), and the modules loaded
/// (where each sits). BPF programs and trampolines that come and go are not in the key.
fn kallsyms_key() -> Option<String> {
    use std::hash::{Hash, Hasher};
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let modules = std::fs::read("/proc/modules").unwrap_or_default();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    modules.hash(&mut h);
    Some(format!("{} {:016x}", boot.trim(), h.finish()))
}

/// The text of `kallsyms` (this machine's `/proc/kallsyms`), from hrec's cache when it was
/// saved in this boot with the same modules loaded: the kernel takes some 50 ms to write the
/// file's 100 000-odd lines, most of a small perf.data report. Otherwise read and saved
/// (best effort, mode 0600: it holds kernel addresses).
pub(super) fn cached_kallsyms(kallsyms: &Path, dir: Option<&Path>) -> Vec<u8> {
    const MAGIC: &str = "hrec-kallsyms-cache";
    let key = kallsyms_key();
    let file = dir.map(|d| d.join("kallsyms"));
    // Only a regular file is read (a FIFO in its place would block the read).
    if let (Some(key), Some(file)) = (&key, &file)
        && std::fs::metadata(file).is_ok_and(|m| m.is_file())
        && let Ok(bytes) = std::fs::read(file)
    {
        let head = format!("{MAGIC} {key}\n");
        if let Some(text) = bytes.strip_prefix(head.as_bytes()) {
            return text.to_vec();
        }
    }
    let text = std::fs::read(kallsyms).unwrap_or_default();
    if let (Some(key), Some(file)) = (key, file)
        && !text.is_empty()
    {
        crate::cache::save(
            &file,
            0o600,
            &[format!("{MAGIC} {key}\n").as_bytes(), &text],
        );
    }
    text
}

/// The GNU build-id among the ELF notes of a running kernel (`/sys/kernel/notes`).
pub fn running_kernel_build_id(notes: &Path) -> Option<String> {
    let b = std::fs::read(notes).ok()?;
    build_id_from_notes(&b)
}

/// The `NT_GNU_BUILD_ID` note (name "GNU", type 3) in a sequence of ELF notes.
pub fn build_id_from_notes(b: &[u8]) -> Option<String> {
    let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    let mut at = 0usize;
    while let (Some(namesz), Some(descsz), Some(t)) =
        (u32_at(b, at), u32_at(b, at + 4), u32_at(b, at + 8))
    {
        let name_at = at + 12;
        let desc_at = name_at.checked_add(align4(namesz as usize)?)?;
        let next = desc_at.checked_add(align4(descsz as usize)?)?;
        let name = b.get(name_at..name_at + namesz as usize)?;
        if t == 3 && name == b"GNU\0" {
            return Some(hex(b.get(desc_at..desc_at + descsz as usize)?));
        }
        at = next;
    }
    None
}

pub(super) fn kernel_check(
    build_ids: &[BuildIdEntry],
    running: Option<&str>,
    releases: (&str, Option<&str>),
) -> KernelCheck {
    let Some(k) = build_ids
        .iter()
        .find(|e| e.kernel && e.path.starts_with("[kernel.kallsyms]"))
    else {
        return match releases {
            (recorded, Some(running)) if !recorded.is_empty() && recorded == running => {
                KernelCheck::SameRelease {
                    release: recorded.to_string(),
                }
            }
            _ => KernelCheck::NoBuildId,
        };
    };
    if running == Some(k.build_id.as_str()) {
        KernelCheck::Matches {
            build_id: k.build_id.clone(),
        }
    } else {
        KernelCheck::Differs {
            recorded: k.build_id.clone(),
            running: running.map(str::to_string),
        }
    }
}

//! Side information stored next to the samples: the host, the kernel's symbols and modules,
//! and the build-id of every mapped file (the tasks that existed before the recording are in
//! [`super::synth`]).
//!
//! A report may run on another machine or after the binaries changed. The build-id (the
//! `NT_GNU_BUILD_ID` ELF note) lets it check that the file it symbolizes is the one that ran;
//! `/proc/kallsyms` is snapshotted because kernel addresses mean nothing without it (under
//! `kptr_restrict` the addresses read as zero, which the report must say rather than guess).
//! Only the kernel symbols that hold a sampled address are kept, with their successors, the
//! ones no sample fell in as bare end marks (see [`crate::symbol::kallsyms`]).
//!
//! These blocks are written once per file, at its start (the modules) or its end (the
//! build-ids, the kernel symbols, the vdso image), so they are compressed harder than the
//! record blocks (zstd level 19, `write_side_packed`).

use std::path::Path;

/// Host facts for the file header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostInfo {
    /// `/proc/sys/kernel/hostname`
    pub hostname: String,
    /// `/proc/sys/kernel/osrelease`
    pub kernel_release: String,
    /// `model name` from `/proc/cpuinfo`
    pub cpu_model: String,
    /// perf's cpuid string of `/proc/cpuinfo` (`GenuineIntel-6-AA-4`), empty when unknown.
    pub cpuid: String,
}

fn read_trim(p: &Path) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Reads the host facts from a procfs tree.
pub fn host_info(procfs_root: &Path) -> HostInfo {
    let cpuinfo = std::fs::read_to_string(procfs_root.join("cpuinfo")).unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    HostInfo {
        hostname: read_trim(&procfs_root.join("sys/kernel/hostname")),
        kernel_release: read_trim(&procfs_root.join("sys/kernel/osrelease")),
        cpu_model,
        // x86's family, model and stepping; arm64's MIDR, as perf writes it.
        cpuid: crate::pmu::uarch::CpuId::from_cpuinfo(&cpuinfo)
            .map(|c| c.to_string())
            .or_else(|| crate::pmu::vendor::Midr::from_cpuinfo(&cpuinfo).map(|m| m.to_string()))
            .unwrap_or_default(),
    }
}

/// The GNU build-id of an ELF file, as lowercase hex; `None` when the file is gone, not ELF,
/// or has no build-id note.
pub fn build_id(path: &Path) -> Option<String> {
    use object::Object;
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let id = obj.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `build-ids` side block: one `build_id path` line per file that has one; `found`: the
/// build-ids of files found while their process lived, which win over the file at the path.
pub fn build_ids<'a>(
    files: impl IntoIterator<Item = &'a [u8]>,
    found: &std::collections::HashMap<Vec<u8>, String>,
) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for f in files {
        let p = Path::new(std::ffi::OsStr::from_bytes(f));
        if let Some(id) = found.get(f).cloned().or_else(|| build_id(p)) {
            out.push_str(&id);
            out.push(' ');
            out.push_str(&String::from_utf8_lossy(f));
            out.push('\n');
        }
    }
    out
}

/// The part of `/proc/kallsyms` a report of these kernel addresses needs: for every address,
/// the symbol that contains it (the last one starting at or below it) and the one after it
/// (where it ends), plus `_text`/`_stext`/`_etext`, in kallsyms' own line format. A successor
/// that contains no address is written as its bare address, an end mark (its name would say
/// nothing the report shows; half the names of a subset are such successors). A full snapshot
/// is 5 MB (1 MB compressed), more than the samples of a typical recording; the subset is a
/// few KB. Empty when there are no kernel addresses or kallsyms hides them
/// (`kernel.kptr_restrict`: every address reads as 0).
pub fn kallsyms_subset(kallsyms: &str, addrs: &std::collections::BTreeSet<u64>) -> String {
    let mut syms: Vec<(u64, &str)> = kallsyms
        .lines()
        .filter_map(|l| {
            let a = u64::from_str_radix(l.split_whitespace().next()?, 16).ok()?;
            Some((a, l))
        })
        .collect();
    if addrs.is_empty() || syms.iter().all(|(a, _)| *a == 0) {
        return String::new();
    }
    syms.sort_by_key(|(a, _)| *a);
    // Index -> written whole (true) or as an end mark (false).
    let mut keep = std::collections::BTreeMap::new();
    for (i, (_, l)) in syms.iter().enumerate() {
        let name = l.split_whitespace().nth(2).unwrap_or("");
        if matches!(name, "_text" | "_stext" | "_etext") {
            keep.insert(i, true);
        }
    }
    for &a in addrs {
        let i = syms.partition_point(|(s, _)| *s <= a);
        if i > 0 {
            keep.insert(i - 1, true);
        }
        if i < syms.len() {
            keep.entry(i).or_insert(false);
        }
    }
    let named: std::collections::BTreeSet<u64> = keep
        .iter()
        .filter(|&(_, &whole)| whole)
        .map(|(&i, _)| syms[i].0)
        .collect();
    let mut out = String::new();
    for (i, whole) in keep {
        let (a, line) = syms[i];
        if whole {
            out.push_str(line);
        } else if named.contains(&a) {
            // A symbol written whole starts here and marks the end already.
            continue;
        } else {
            out.push_str(&format!("{a:016x}"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_subset_keeps_containing_and_next_symbols() {
        let ks = "ffffffff81000000 T _text\nffffffff81001000 T do_one\nffffffff81002000 t helper\nffffffff81003000 T do_two\nffffffff81004000 T last\nffffffffc0001000 t mod_fn\t[kvm]\n";
        let addrs = [0xffff_ffff_8100_2010u64, 0xffff_ffff_c000_1004]
            .into_iter()
            .collect();
        let sub = kallsyms_subset(ks, &addrs);
        assert_eq!(
            sub,
            "ffffffff81000000 T _text\nffffffff81002000 t helper\nffffffff81003000\nffffffffc0001000 t mod_fn\t[kvm]\n"
        );
        // Read back: helper ends at the end mark, which names nothing.
        let k = crate::symbol::kallsyms::KernelSymbols::parse(&sub);
        let name = |a: u64| k.lookup(a).map(|(s, _)| s.name.to_string());
        assert_eq!(name(0xffff_ffff_8100_2010).as_deref(), Some("helper"));
        assert_eq!(name(0xffff_ffff_8100_3010), None);
        assert_eq!(k.end_of(0xffff_ffff_8100_2000), Some(0xffff_ffff_8100_3000));
        // A successor at the address of a symbol written whole is not marked again.
        let alias = "ffffffff81001000 T a\nffffffff81002000 t b\nffffffff81002000 t b_alias\n";
        let addrs = [0xffff_ffff_8100_1010u64, 0xffff_ffff_8100_2010]
            .into_iter()
            .collect();
        assert_eq!(
            kallsyms_subset(alias, &addrs),
            "ffffffff81001000 T a\nffffffff81002000 t b_alias\n"
        );
        let hidden = "0000000000000000 T _text\n0000000000000000 T do_one\n";
        assert_eq!(kallsyms_subset(hidden, &addrs), "");
        assert_eq!(kallsyms_subset(ks, &Default::default()), "");
    }

    #[test]
    fn own_executable_has_a_build_id() {
        let exe = std::env::current_exe().unwrap();
        let id = build_id(&exe).expect("rustc links test binaries with a build-id");
        assert!(
            id.len() >= 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        assert_eq!(build_id(Path::new("/nonexistent")), None);
    }
}

//! Kernel symbols from the kallsyms text stored in the recording.
//!
//! `/proc/kallsyms` lists `address type name [module]` for every kernel and module symbol,
//! without sizes: a symbol ends where the next one starts. The recorder stores only the
//! symbols that contain sampled kernel addresses together with their successors (see
//! `record::side::kallsyms_subset`), so within a subset the "next symbol" of every sampled
//! address is still its true end. The lookup therefore never answers with a symbol for an
//! address past that end: such an address was not sampled at record time and stays
//! unresolved rather than being attributed to the wrong function.
//!
//! Under `kernel.kptr_restrict` every address reads as 0; such a table is treated as empty,
//! and the report says the recording has no kernel symbols.

use std::sync::Arc;

/// One kernel symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSym {
    /// Start address.
    pub start: u64,
    /// Name.
    pub name: Arc<str>,
    /// Module name without brackets; `None` for the kernel image.
    pub module: Option<Arc<str>>,
}

/// Kernel symbols sorted by address.
#[derive(Debug, Clone, Default)]
pub struct KernelSymbols {
    syms: Vec<KernelSym>,
}

/// The dso name perf gives the kernel image.
pub const KERNEL_DSO: &str = "[kernel.kallsyms]";

impl KernelSymbols {
    /// Parses kallsyms text. Lines that do not parse are skipped; all-zero addresses (hidden by
    /// `kptr_restrict`) give an empty table.
    pub fn parse(text: &str) -> KernelSymbols {
        let mut modules: std::collections::HashMap<&str, Arc<str>> = Default::default();
        let mut syms: Vec<KernelSym> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_ascii_whitespace();
                let start = u64::from_str_radix(it.next()?, 16).ok()?;
                let _type = it.next()?;
                let name = it.next()?;
                let module = it
                    .next()
                    .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'))
                    .map(|m| modules.entry(m).or_insert_with(|| m.into()).clone());
                Some(KernelSym {
                    start,
                    name: name.into(),
                    module,
                })
            })
            .collect();
        if syms.iter().all(|s| s.start == 0) {
            return KernelSymbols::default();
        }
        syms.sort_by_key(|s| s.start);
        KernelSymbols { syms }
    }

    /// No symbols (none stored, or hidden).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// The symbol containing `addr` and the offset into it. The last symbol of the table has
    /// no known end and is only matched exactly at its start.
    pub fn lookup(&self, addr: u64) -> Option<(&KernelSym, u64)> {
        let i = self.syms.partition_point(|s| s.start <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        if i == self.syms.len() && addr != s.start {
            return None;
        }
        Some((s, addr - s.start))
    }
}

impl KernelSym {
    /// The dso perf shows: `[kernel.kallsyms]` or `[module]`.
    pub fn dso(&self) -> String {
        match &self.module {
            Some(m) => format!("[{m}]"),
            None => KERNEL_DSO.to_string(),
        }
    }
}

/// Whether `addr` is in the kernel half of the x86-64 address space.
pub fn is_kernel_address(addr: u64) -> bool {
    addr >= 0xffff_8000_0000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _text
ffffffff81001000 T do_one
ffffffff81001100 t do_two
ffffffff81001200 T do_three
ffffffffc0001000 t mod_fn\t[kvm]
ffffffffc0001080 t mod_next\t[kvm]
";

    #[test]
    fn addresses_resolve_to_the_containing_symbol_with_offset() {
        let k = KernelSymbols::parse(TEXT);
        assert_eq!(k.len(), 6);
        let (s, off) = k.lookup(0xffffffff81001010).unwrap();
        assert_eq!(
            (&*s.name, off, s.dso().as_str()),
            ("do_one", 0x10, "[kernel.kallsyms]")
        );
        let (s, off) = k.lookup(0xffffffff811011ff - 0x100000).unwrap();
        assert_eq!((&*s.name, off), ("do_two", 0xff));
        let (s, _) = k.lookup(0xffffffffc0001004).unwrap();
        assert_eq!((&*s.name, s.dso().as_str()), ("mod_fn", "[kvm]"));
    }

    #[test]
    fn nothing_before_the_first_or_past_the_last_symbol() {
        let k = KernelSymbols::parse(TEXT);
        assert!(k.lookup(0xffffffff80ffffff).is_none());
        assert!(k.lookup(0xffffffffc0001081).is_none());
        assert_eq!(&*k.lookup(0xffffffffc0001080).unwrap().0.name, "mod_next");
    }

    #[test]
    fn hidden_addresses_give_an_empty_table() {
        let k = KernelSymbols::parse("0000000000000000 T _text\n0000000000000000 T foo\n");
        assert!(k.is_empty());
        assert!(k.lookup(0).is_none());
        assert!(KernelSymbols::parse("garbage\n\nffff x\n").is_empty());
    }

    #[test]
    fn kernel_half_of_the_address_space() {
        assert!(is_kernel_address(0xffffffff81000000));
        assert!(!is_kernel_address(0x7fff_ffff_f000));
    }
}

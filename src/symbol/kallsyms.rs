//! Kernel symbols from the kallsyms text stored in the recording.
//!
//! `/proc/kallsyms` lists `address type name [module]` for every kernel and module symbol,
//! without sizes: a symbol ends where the next one starts. The recorder stores only the
//! symbols that contain sampled kernel addresses together with their successors (see
//! `record::side::kallsyms_subset`), so within a subset the "next symbol" of every sampled
//! address is still its true end. The lookup therefore never answers with a symbol for an
//! address past that end: such an address was not sampled at record time and stays
//! unresolved rather than being attributed to the wrong function. A successor that no sampled
//! address falls in is stored as a bare address line (an *end mark*, no type and no name):
//! it only says where the symbol before it ends.
//!
//! Under `kernel.kptr_restrict` every address reads as 0; such a table is treated as empty,
//! and the report says the recording has no kernel symbols.

use std::sync::Arc;

/// One kernel symbol, as a lookup finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSym {
    /// Start address.
    pub start: u64,
    /// Name.
    pub name: Arc<str>,
    /// Module name without brackets; `None` for the kernel image.
    pub module: Option<Arc<str>>,
}

/// A symbol in the table: its start, and where its name lies in the table's text.
#[derive(Debug, Clone, Copy)]
struct Entry {
    start: u64,
    name_at: u32,
    name_len: u16,
    /// Index into the modules plus one; 0 for the kernel image.
    module: u16,
}

/// Kernel symbols sorted by address. A full `/proc/kallsyms` has ~10^5 symbols: the names
/// share one string and each symbol takes 16 bytes, not an allocation of its own.
#[derive(Debug, Clone, Default)]
pub struct KernelSymbols {
    entries: Vec<Entry>,
    names: String,
    modules: Vec<Arc<str>>,
}

/// The dso name perf gives the kernel image.
pub const KERNEL_DSO: &str = "[kernel.kallsyms]";

impl KernelSymbols {
    /// Parses kallsyms text. Lines that do not parse are skipped; all-zero addresses (hidden by
    /// `kptr_restrict`) give an empty table.
    pub fn parse(text: &str) -> KernelSymbols {
        let mut t = KernelSymbols::default();
        let mut module_ids: std::collections::HashMap<&str, u16> = Default::default();
        let mut any_address = false;
        for l in text.lines() {
            let mut it = l.split_ascii_whitespace();
            let (Some(start), Some(_type), Some(name)) = (it.next(), it.next(), it.next()) else {
                // An end mark: a bare address.
                let mut w = l.split_ascii_whitespace();
                if let (Some(start), None) = (w.next(), w.next())
                    && let Ok(start) = u64::from_str_radix(start, 16)
                {
                    any_address |= start != 0;
                    t.entries.push(Entry {
                        start,
                        name_at: 0,
                        name_len: 0,
                        module: 0,
                    });
                }
                continue;
            };
            let Ok(start) = u64::from_str_radix(start, 16) else {
                continue;
            };
            let (Ok(name_at), Ok(name_len)) =
                (u32::try_from(t.names.len()), u16::try_from(name.len()))
            else {
                continue;
            };
            let module = match it
                .next()
                .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'))
            {
                None => 0,
                Some(m) => match module_ids.get(m) {
                    Some(&i) => i,
                    None => {
                        let Ok(i) = u16::try_from(t.modules.len() + 1) else {
                            continue;
                        };
                        t.modules.push(m.into());
                        module_ids.insert(m, i);
                        i
                    }
                },
            };
            any_address |= start != 0;
            t.names.push_str(name);
            t.entries.push(Entry {
                start,
                name_at,
                name_len,
                module,
            });
        }
        if !any_address {
            return KernelSymbols::default();
        }
        // An end mark at a symbol's own address never hides the symbol.
        t.entries.sort_by_key(|e| (e.start, e.name_len != 0));
        t.entries.shrink_to_fit();
        t.names.shrink_to_fit();
        t
    }

    /// No symbols (none stored, or hidden).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of symbols and end marks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The symbol containing `addr` and the offset into it. The last symbol of the table has
    /// no known end and is only matched exactly at its start.
    pub fn lookup(&self, addr: u64) -> Option<(KernelSym, u64)> {
        let (e, name) = self.entry_of(addr)?;
        Some((
            KernelSym {
                start: e.start,
                name: name.into(),
                module: match e.module {
                    0 => None,
                    m => self.modules.get(usize::from(m) - 1).cloned(),
                },
            },
            addr - e.start,
        ))
    }

    /// The entry containing `addr` (as [`KernelSymbols::lookup`] finds it) and its name.
    fn entry_of(&self, addr: u64) -> Option<(&Entry, &str)> {
        let i = self.entries.partition_point(|s| s.start <= addr);
        let e = self.entries.get(i.checked_sub(1)?)?;
        if (i == self.entries.len() && addr != e.start) || e.name_len == 0 {
            return None;
        }
        let at = e.name_at as usize;
        Some((e, self.names.get(at..at + usize::from(e.name_len))?))
    }
}

impl KernelSymbols {
    /// Whether `addr` lies within the table: from its first symbol to its last one's start.
    /// perf names an unresolved kernel address outside every kernel map `[unknown]`, not the
    /// kernel (garbage frames of a call chain).
    pub fn spans(&self, addr: u64) -> bool {
        match (self.entries.first(), self.entries.last()) {
            (Some(f), Some(l)) => (f.start..=l.start).contains(&addr),
            _ => false,
        }
    }

    /// [`KernelSymbols::lookup`]'s name and offset alone, borrowed from the table.
    pub fn lookup_name(&self, addr: u64) -> Option<(&str, u64)> {
        let (e, name) = self.entry_of(addr)?;
        Some((name, addr - e.start))
    }

    /// The kernel image's text, from `_text` (else `_stext`) to `_etext`, when the table has
    /// those symbols (the recorder keeps them in its subset).
    pub fn text_range(&self) -> Option<(u64, u64)> {
        let find = |want: &str| {
            self.entries
                .iter()
                .find(|e| {
                    let at = e.name_at as usize;
                    e.module == 0 && self.names.get(at..at + usize::from(e.name_len)) == Some(want)
                })
                .map(|e| e.start)
        };
        let start = find("_text").or_else(|| find("_stext"))?;
        let end = find("_etext")?;
        (start < end).then_some((start, end))
    }

    /// Where the symbol starting at `start` ends: the next symbol's start (kallsyms has no
    /// sizes); `None` for the last symbol or an address that starts none.
    pub fn end_of(&self, start: u64) -> Option<u64> {
        let i = self.entries.partition_point(|s| s.start <= start);
        (i > 0 && self.entries[i - 1].start == start).then_some(())?;
        self.entries.get(i).map(|e| e.start)
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

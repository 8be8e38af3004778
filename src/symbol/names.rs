//! Function names as perf prints them: one demangling rule for symbol-table names, PLT stubs
//! and DWARF function names alike.
//!
//! perf 6.1 (built without libbfd, as distributions ship it) demangles with libiberty's
//! `cplus_demangle(name, 0)`: no `DMGL_PARAMS`, no `DMGL_ANSI`, no `DMGL_VERBOSE`. What that
//! prints, and what this module reproduces with `cpp_demangle` and `rustc-demangle`:
//!
//! * **C++ (Itanium, `_Z`)**: the function's own parameter list, its return type and its
//!   cv- and ref-qualifiers are dropped; everything inside the name is kept whole, template
//!   arguments that are function types (`std::_Function_handler<unsigned long (unsigned
//!   long), ...>`), lambdas (`{lambda(unsigned long)#2}`) and the parameters of an enclosing
//!   function in a local name (`ledger::Book::Book()::{lambda(unsigned long)#1}`). The
//!   standard abbreviations stay short (`std::string`, as libiberty prints them without
//!   `DMGL_VERBOSE`). Without `DMGL_PARAMS` libiberty stops at the end of the encoding, so a
//!   clone suffix (`.isra.0`, `.part.0`, `.cold`, `.constprop.0`) is not printed.
//! * **Special names** keep their inner function's parameters, as libiberty prints them:
//!   `non-virtual thunk to std::basic_iostream<...>::~basic_iostream()`, `virtual thunk to`,
//!   `covariant return thunk to`, `transaction clone for`; data symbols read `vtable for X`,
//!   `VTT for X`, `typeinfo for X`, `typeinfo name for X`, `guard variable for X`.
//! * **Rust**: legacy symbols (`_ZN...17h<hash>E`) and v0 (`_R...`) without the hash, the
//!   crate disambiguators, the types of const generic arguments and any suffix after the
//!   symbol (`.llvm.123`, `.0`), as libiberty prints them without `DMGL_VERBOSE`.
//! * Anything else (C, assembly, names that do not demangle) is kept as it is.
//!
//! The name is never cut by searching the demangled text: what is dropped is decided on the
//! mangled grammar (the clone suffix, the top-level ref-qualifier) or by the demangler's
//! options.
//!
//! * **Integer literals** in template arguments (`L <type> <value> E`) print as libiberty
//!   prints them: `int` bare, `unsigned int`, `long`, `unsigned long`, `long long` and
//!   `unsigned long long` with C's suffix (`8u`, `-3l`, `5ul`, `7ll`, `9ull`), any other type
//!   as a cast (`(char)97`, `(short)3`), `bool` as `true`/`false`. cpp_demangle casts them
//!   all (`(unsigned int)8`); its casts of those six types are rewritten, and only those
//!   (no other construct of a demangled name prints such a cast).

use std::borrow::Cow;

/// The name perf prints for `raw` (a symbol-table or DWARF linkage name).
pub fn demangle(raw: &str) -> Cow<'_, str> {
    if let Some(rust) = rust(raw) {
        return Cow::Owned(rust);
    }
    if raw.starts_with("_Z")
        && let Some(cpp) = cpp(raw)
    {
        return Cow::Owned(cpp);
    }
    Cow::Borrowed(raw)
}

/// A PLT stub's name: the demangled target and `@plt`, as perf synthesizes it.
pub fn plt(target: &str) -> String {
    format!("{}@plt", demangle(target))
}

/// Rust symbols: v0 always, legacy only with its hash (a hashless `_ZN...E` is C++). What
/// follows the symbol (`.llvm.123`, `.0`) is not printed, as libiberty does not print it.
fn rust(raw: &str) -> Option<String> {
    // v0 identifiers hold no `.`; a legacy symbol's components are length-prefixed (and may
    // hold `.`, as in `$u7b$$u7b$vtable.shim$u7d$`), up to the closing `E`.
    let base = if raw.starts_with("_R") {
        raw.split('.').next().unwrap_or(raw)
    } else {
        raw.get(..legacy_end(raw)?)?
    };
    let d = rustc_demangle::try_demangle(base).ok()?;
    let plain = format!("{d:#}");
    (base.starts_with("_R") || format!("{d}") != plain).then_some(plain)
}

/// The length of a legacy Rust symbol (`_ZN` `<len><ident>`... `E`) at the start of `raw`.
fn legacy_end(raw: &str) -> Option<usize> {
    let b = raw.as_bytes();
    let mut at = raw.strip_prefix("_ZN").map(|_| 3)?;
    loop {
        match b.get(at)? {
            b'E' => return Some(at + 1),
            c if c.is_ascii_digit() => {
                let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
                let len: usize = raw[at..at + digits].parse().ok()?;
                at = at.checked_add(digits)?.checked_add(len)?;
            }
            _ => return None,
        }
    }
}

fn cpp(raw: &str) -> Option<String> {
    // libiberty without DMGL_PARAMS ignores what follows the encoding: clone suffixes.
    let base = raw.split('.').next().unwrap_or(raw);
    if let Some(special) = special(base) {
        return Some(special);
    }
    let mut m = base.to_string();
    // A member function's ref-qualifier (`_ZNKR...`) belongs to its parameter list, which is
    // dropped (cpp_demangle prints it regardless).
    if let Some(rest) = m.strip_prefix("_ZN") {
        let cv = rest
            .bytes()
            .take_while(|b| matches!(b, b'r' | b'V' | b'K'))
            .count();
        if matches!(rest.as_bytes().get(cv), Some(b'R' | b'O')) {
            m.remove(3 + cv);
        }
    }
    let opts = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    let name = demangle_with(&m, &opts).or_else(|| name_only(&m, &opts))?;
    let name = literal_suffixes(&name);
    // In a local name (`_ZZ <function> E <entity>`) cpp_demangle prints the entity's own
    // qualifiers (a lambda's `operator() const`), which belong to its parameter list and
    // which libiberty leaves out with it.
    Some(if m.starts_with("_ZZ") {
        let mut n = name.as_str();
        while let Some(rest) = [" const", " volatile", " restrict", " &&", " &"]
            .iter()
            .find_map(|q| n.strip_suffix(q))
        {
            n = rest;
        }
        n.to_string()
    } else {
        name
    })
}

/// cpp_demangle's integer literal casts as libiberty's suffixes (see the module docs):
/// `(unsigned int)8` is `8u`, `(int)5` is `5`.
fn literal_suffixes(name: &str) -> String {
    const SUFFIX: [(&str, &str); 6] = [
        ("(unsigned long long)", "ull"),
        ("(unsigned long)", "ul"),
        ("(unsigned int)", "u"),
        ("(long long)", "ll"),
        ("(long)", "l"),
        ("(int)", ""),
    ];
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    'scan: while let Some(at) = rest.find('(') {
        out.push_str(&rest[..at]);
        let here = &rest[at..];
        for (cast, suffix) in SUFFIX {
            if let Some(after) = here.strip_prefix(cast) {
                let digits = after
                    .char_indices()
                    .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && c == '-'))
                    .count();
                if digits > 0 && after[..digits].bytes().any(|b| b.is_ascii_digit()) {
                    out.push_str(&after[..digits]);
                    out.push_str(suffix);
                    rest = &after[digits..];
                    continue 'scan;
                }
            }
        }
        out.push('(');
        rest = &here[1..];
    }
    out.push_str(rest);
    out
}

/// A name cpp_demangle cannot parse whole (GCC's `srSt9__is_charIT_E7__valueE` in an
/// `enable_if` return type, which libiberty reads): what is printed is the name, which comes
/// first in the encoding, so the longest prefix that parses gives it; the return type and
/// parameters it leaves out are not printed anyway. Bounded: names this long are not retried.
fn name_only(m: &str, opts: &cpp_demangle::DemangleOptions) -> Option<String> {
    if m.len() > 1024 {
        return None;
    }
    (4..m.len())
        .rev()
        .filter(|&end| m.is_char_boundary(end))
        .find_map(|end| demangle_with(&m[..end], opts))
}

fn demangle_with(mangled: &str, opts: &cpp_demangle::DemangleOptions) -> Option<String> {
    cpp_demangle::Symbol::new(mangled)
        .ok()?
        .demangle_with_options(opts)
        .ok()
}

/// Special names (`_ZT...`, `_ZG...`), printed as libiberty prints them.
fn special(base: &str) -> Option<String> {
    let full = cpp_demangle::DemangleOptions::new();
    // The inner encoding is a function with its parameters, or a name.
    let inner = |rest: &str| demangle_with(&format!("_Z{rest}"), &full);
    let (what, rest) = if let Some(r) = base.strip_prefix("_ZTh") {
        ("non-virtual thunk to ", call_offset_rest(r, false)?)
    } else if let Some(r) = base.strip_prefix("_ZTv") {
        ("virtual thunk to ", call_offset_rest(r, true)?)
    } else if let Some(r) = base.strip_prefix("_ZTc") {
        (
            "covariant return thunk to ",
            skip_call_offset(skip_call_offset(r)?)?,
        )
    } else if let Some(r) = base.strip_prefix("_ZGTt") {
        ("transaction clone for ", r)
    } else if let Some(r) = base.strip_prefix("_ZGV") {
        ("guard variable for ", r)
    } else if let Some(r) = base.strip_prefix("_ZTV") {
        ("vtable for ", r)
    } else if let Some(r) = base.strip_prefix("_ZTT") {
        ("VTT for ", r)
    } else if let Some(r) = base.strip_prefix("_ZTI") {
        ("typeinfo for ", r)
    } else if let Some(r) = base.strip_prefix("_ZTS") {
        ("typeinfo name for ", r)
    } else {
        return None;
    };
    // A type that is not a name (`_ZTIDn`) does not demangle alone: cpp_demangle's own
    // spelling of the whole symbol then.
    match inner(rest) {
        Some(name) => Some(format!("{what}{name}")),
        None => demangle_with(base, &full),
    }
}

/// After `h` (`v` when `virtual`) of a call offset: skips `<number> _` (and for a virtual
/// offset a second `<number> _`); returns the rest.
fn call_offset_rest(r: &str, virtual_: bool) -> Option<&str> {
    let r = skip_number(r)?.strip_prefix('_')?;
    if virtual_ {
        skip_number(r)?.strip_prefix('_')
    } else {
        Some(r)
    }
}

/// Skips one `<call-offset>` (`h <number> _` or `v <number> _ <number> _`).
fn skip_call_offset(r: &str) -> Option<&str> {
    if let Some(r) = r.strip_prefix('h') {
        call_offset_rest(r, false)
    } else {
        call_offset_rest(r.strip_prefix('v')?, true)
    }
}

/// Skips `[n] <digits>`.
fn skip_number(r: &str) -> Option<&str> {
    let r = r.strip_prefix('n').unwrap_or(r);
    let digits = r.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0).then(|| &r[digits..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_names_as_perf_prints_them() {
        let cases = [
            // Integer literals as libiberty prints them (c++filt, perf 6.1).
            (
                "_Z4spinILj8ELln3ELm5ELc97ELb1EEvv",
                "spin<8u, -3l, 5ul, (char)97, true>",
            ),
            (
                "_Z1fILi5ELx7ELy9ELs3ELh2EEvv",
                "f<5, 7ll, 9ull, (short)3, (unsigned char)2>",
            ),
            // Parameters, return type and clone suffix go; templates stay whole.
            (
                "_ZSt16__introsort_loopIN9__gnu_cxx17__normal_iteratorIPmSt6vectorImSaImEEEElNS0_5__ops15_Iter_less_iterEEvT_S9_T0_T1_.isra.0",
                "std::__introsort_loop<__gnu_cxx::__normal_iterator<unsigned long*, std::vector<unsigned long, std::allocator<unsigned long> > >, long, __gnu_cxx::__ops::_Iter_less_iter>",
            ),
            // A function type in a template argument and a lambda in a local name, whole.
            (
                "_ZNSt17_Function_handlerIFmmEZN6ledger4BookC4EvEUlmE0_E9_M_invokeERKSt9_Any_dataOm",
                "std::_Function_handler<unsigned long (unsigned long), ledger::Book::Book()::{lambda(unsigned long)#2}>::_M_invoke",
            ),
            ("_ZN6ledger4Book3runEm", "ledger::Book::run"),
            // A lambda's call operator: its `const` goes with its parameters.
            (
                "_ZZN6ledger4BookC4EvENKUlmE_clEm",
                "ledger::Book::Book()::{lambda(unsigned long)#1}::operator()",
            ),
            ("_ZNK3foo3barEv", "foo::bar"),
            ("_ZN3foo3barEi", "foo::bar"),
            // The ref-qualifier of a member function goes with its parameters.
            (
                "_ZNKRSt7__cxx1115basic_stringbufIcSt11char_traitsIcESaIcEE3strEv",
                "std::__cxx11::basic_stringbuf<char, std::char_traits<char>, std::allocator<char> >::str",
            ),
            ("_ZNKSs11_M_disjunctEPKc", "std::string::_M_disjunct"),
            ("_Znwm", "operator new"),
            // An expression cpp_demangle cannot parse, in the return type perf does not print.
            (
                "_ZSteqIcEN9__gnu_cxx11__enable_ifIXsrSt9__is_charIT_E7__valueEbE6__typeERKNSt7__cxx1112basic_stringIS3_St11char_traitsIS3_ESaIS3_EEESE_",
                "std::operator==<char>",
            ),
            // Special names keep the inner function's parameters.
            (
                "_ZThn16_NSdD1Ev",
                "non-virtual thunk to std::basic_iostream<char, std::char_traits<char> >::~basic_iostream()",
            ),
            (
                "_ZTv0_n24_NSdD0Ev",
                "virtual thunk to std::basic_iostream<char, std::char_traits<char> >::~basic_iostream()",
            ),
            (
                "_ZGTtNKSt11logic_error4whatEv",
                "transaction clone for std::logic_error::what() const",
            ),
            (
                "_ZTVN10__cxxabiv117__class_type_infoE",
                "vtable for __cxxabiv1::__class_type_info",
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(demangle(raw), want, "{raw}");
        }
        assert_eq!(plt("_Znwm"), "operator new@plt");
        assert_eq!(plt("malloc"), "malloc@plt");
    }

    #[test]
    fn rust_names_without_hashes_and_others_as_they_are() {
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(
            demangle("_ZN3std2rt10lang_start17h9a6ab6e2b1c6d8d3E.llvm.1234"),
            "std::rt::lang_start"
        );
        assert_eq!(
            demangle("_RNvCs15kBYyAo9fc_7mycrate7example"),
            "mycrate::example"
        );
        // Without a hash a `_ZN...E` name is C++.
        assert_eq!(demangle("_ZN3foo3barE"), "foo::bar");
        for raw in [
            "main",
            "_Zgarbage",
            "_",
            "",
            "_ZTh",
            "_ZThn_",
            "_ZTc",
            "__libc_start_main",
        ] {
            assert_eq!(demangle(raw), raw);
        }
        // Legacy components may hold `.`; what follows the closing `E` is not printed.
        assert_eq!(
            demangle(
                "_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17hd6710e64549662baE.llvm.1134"
            ),
            "core::ops::function::FnOnce::call_once{{vtable.shim}}"
        );
        assert_eq!(demangle("_RNvNtCs1_3std2io6OUTPUT.0"), "std::io::OUTPUT");
    }

    /// Names come from files: any bytes, any length, never a panic (a length prefix past the
    /// end, a multi-byte character where a component ends, deep nesting).
    #[test]
    fn hostile_names_never_panic() {
        let mut next = crate::testutil::xorshift(0x9e37_79b9_7f4a_7c15_u64);
        let alphabet = "_ZNRKEIvSsTthcGVr0123456789.$éx";
        let chars: Vec<char> = alphabet.chars().collect();
        for round in 0..20_000 {
            let prefix = ["_ZN", "_Z", "_R", "_ZT", "_ZGTt", "_ZTh", ""][round % 7];
            let len = (next() % 64) as usize;
            let tail: String = (0..len)
                .map(|_| chars[(next() % chars.len() as u64) as usize])
                .collect();
            let raw = format!("{prefix}{tail}");
            let _ = demangle(&raw);
        }
        let deep = format!("_Z{}v", "PFv".repeat(2000));
        let _ = demangle(&deep);
        assert_eq!(
            demangle("_ZN99999999999999999999abcE"),
            "_ZN99999999999999999999abcE"
        );
    }
}

//! A tracepoint record as text: the event's print format (`print fmt:` of its format file)
//! evaluated over the record's bytes, as perf script prints it (perf 6.1's libtraceevent).
//!
//! The print fmt is C: a quoted printf format and its arguments, expressions over the
//! record's fields (`REC->prev_pid`), casts, operators, ternaries and the kernel's helpers
//! (`__print_flags`, `__print_symbolic`, `__get_str`, `__print_hex`, `__print_array`, ...).
//! It is parsed once ([`Printer::new`]) and evaluated for each record. The rules are
//! libtraceevent's, which differ from C's in places that show in the output:
//!
//! * a field reads as an unsigned number of its size (`int dfd` of -100 is `0xffffff9c`
//!   under `0x%08lx`); a conversion casts it by its length modifiers (none: `int`, `l`/`z`:
//!   `long`, `ll`: `long long`, `h`: `short`, `hh`: `char`) before printf prints it;
//! * a cast masks to the type's width and never sign-extends; arithmetic, comparisons and
//!   shifts are 64-bit unsigned;
//! * the expression tree is libtraceevent's, not C's: an operator takes one operand on its
//!   right, a chain of equal priority groups to the right (`a - b - c` is `a - (b - c)`),
//!   and a right operand that is an operator of lower priority, parenthesised or not, is
//!   rotated above it (`x & (A | B)` is `(x & A) | B`: timer_start's `flags=` shows it);
//!   `(type)` is a cast only when an operand, not an operator, follows it;
//! * a name the kernel did not expand (`IOPRIO_CLASS_NONE`) is 0 in an expression, and as a
//!   flag/symbol table value is -1 unless libtraceevent knows it (softirq and hrtimer
//!   names): such entries never match, so the value prints as `0x..`; `__print_flags` of 0
//!   prints the first entry whose value is negative (writeback's `state=I_DIRTY_SYNC`);
//! * `%p` prints as glibc's `%p` (`(nil)` for 0); `%pS`/`%pF` as `sym+0xoff` and
//!   `%ps`/`%pf` as `sym` through the kernel's symbols, else `0x..`; `%pM`, `%pI4`, `%pI6`,
//!   `%pI6c`, `%pU` from the field's bytes; letters after `%p` it does not know follow the
//!   pointer as text;
//! * `%s` of an 8-byte non-array field prints it in hex; of another field, its own bytes up
//!   to a NUL; a string or name argument, its text;
//! * a print fmt libtraceevent cannot parse (an unknown function, too few arguments) prints
//!   `[FAILED TO PARSE]` and then ` name=value` for each of the event's own fields.
//!
//! perf 6.1 on the reference machine does not load libtraceevent's plugins (sched_switch,
//! hrtimer, kmem, futex, tlb, jbd2's `jiffies_to_msecs`): its `perf script` prints every
//! event through its print fmt, so there are no per-event overrides here.
//!
//! A `%s` of a `const char *` field resolves through the kernel's printk formats
//! ([`KernelSymbols::printk_string`], rcu:rcu_utilization), else prints the address in hex
//! as libtraceevent does for an unknown one. Bytes that are not UTF-8 print as U+FFFD.
//!
//! Nothing here panics on any record: out-of-range fields are 0 or empty, parser nesting
//! and the text of one record are bounded.

#![cfg_attr(
    not(test),
    deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]

mod ast;
mod eval;
mod lex;
mod printf;

use super::format::{EventFormat, Field};
use ast::{Piece, Program, Width};
use eval::Rec;

/// The most text printed for one record.
const MAX_OUT: usize = 1 << 16;

/// Kernel symbols for `%pS`-style arguments: the function containing an address and the
/// address's offset in it.
pub trait KernelSymbols {
    /// `(name, offset)` of the kernel function containing `addr`.
    fn symbol(&self, addr: u64) -> Option<(&str, u64)>;

    /// The kernel string at exactly `addr`, from the recording's printk formats (tracefs'
    /// `printk_formats`, quotes stripped), for `%s` of a `const char *` field
    /// (rcu:rcu_utilization); without it the address prints in hex.
    fn printk_string(&self, _addr: u64) -> Option<&str> {
        None
    }
}

/// No kernel symbols.
#[derive(Debug)]
pub struct NoSymbols;

impl KernelSymbols for NoSymbols {
    fn symbol(&self, _addr: u64) -> Option<(&str, u64)> {
        None
    }
}

/// The printer of one event.
#[derive(Debug, Clone)]
pub struct Printer {
    format: EventFormat,
    /// The parsed print fmt; `None` when libtraceevent fails to parse it.
    program: Option<Program>,
}

impl Printer {
    /// The printer of event `system:format.name`.
    pub fn new(_system: &str, format: &EventFormat) -> Printer {
        Printer {
            program: ast::parse(&format.print_fmt, format),
            format: format.clone(),
        }
    }

    /// Appends the text of record `raw` (the sample's `PERF_SAMPLE_RAW` bytes).
    pub fn print(&self, raw: &[u8], syms: &dyn KernelSymbols, out: &mut String) {
        let mut buf = Vec::new();
        match &self.program {
            Some(p) => self.run(p, raw, syms, &mut buf),
            None => {
                buf.extend_from_slice(b"[FAILED TO PARSE]");
                for f in self.format.fields.iter().filter(|f| !f.common) {
                    buf.extend_from_slice(format!(" {}=", f.name).as_bytes());
                    print_field(f, raw, &mut buf);
                    if buf.len() > MAX_OUT {
                        break;
                    }
                }
            }
        }
        buf.truncate(MAX_OUT);
        out.push_str(&String::from_utf8_lossy(&buf));
    }

    fn run(&self, p: &Program, raw: &[u8], syms: &dyn KernelSymbols, out: &mut Vec<u8>) {
        let rec = Rec {
            raw,
            fields: &self.format.fields,
        };
        let num = |i: usize| {
            p.args
                .get(i)
                .map_or(0, |e| eval::eval_num(e, raw, Some(&self.format.fields)))
        };
        let dim = |w: &Option<Width>| match w {
            Some(Width::Fixed(n)) => Some(i64::try_from(*n).unwrap_or(i64::MAX)),
            Some(Width::Arg(i)) => Some(i64::from(num(*i) as i32)),
            None => None,
        };
        for piece in &p.pieces {
            if out.len() > MAX_OUT {
                return;
            }
            let (spec, arg) = match piece {
                Piece::Text(t) => {
                    out.extend_from_slice(t);
                    continue;
                }
                Piece::Conv(spec, arg) => (spec, *arg),
            };
            let Some(e) = p.args.get(arg) else { continue };
            let dims = printf::Dims {
                width: dim(&spec.width),
                precision: dim(&spec.precision),
            };
            match spec.conv {
                b's' => {
                    let put = |o: &mut Vec<u8>, s: &[u8]| printf::string(o, spec, dims, s);
                    eval::print_str(e, rec, syms, 0, out, &put);
                }
                b'p' => eval::print_ptr(e, &spec.ptr, rec, syms, out),
                _ => printf::int(out, spec, dims, num(arg)),
            }
        }
    }
}

/// One field as libtraceevent prints it by itself (`tep_print_field`: perf's dynamic sort
/// keys where the print format shows no `NAME=VALUE` of it).
pub fn field_text(f: &Field, raw: &[u8]) -> String {
    let mut out = Vec::new();
    print_field(f, raw, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// One field as libtraceevent prints it after `[FAILED TO PARSE]`.
fn print_field(f: &Field, raw: &[u8], out: &mut Vec<u8>) {
    if f.array.is_some() {
        let b = f.bytes(raw).unwrap_or_default();
        let text = b.split(|c| *c == 0).next().unwrap_or_default();
        let printable = !text.is_empty()
            && text
                .iter()
                .all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace());
        if f.is_string() && printable {
            out.extend_from_slice(text);
        } else {
            let hex: Vec<String> = b.iter().map(|c| format!("{c:02x}")).collect();
            out.extend_from_slice(format!("ARRAY[{}]", hex.join(", ")).as_bytes());
        }
        return;
    }
    let at = f.offset as usize;
    let v = raw
        .get(at..at.saturating_add(f.size as usize))
        .and_then(|b| super::format::number(b, false))
        .unwrap_or(0);
    let is_long = matches!(f.type_.as_str(), "long" | "unsigned long");
    let text = if f.type_.ends_with('*') {
        format!("0x{v:x}")
    } else if f.signed {
        match f.size {
            4 if is_long => format!("0x{:x}", v as u32),
            4 => (v as i32).to_string(),
            2 => format!("{:2}", v as i16),
            1 => (v as i8).to_string(),
            _ => (v as i64).to_string(),
        }
    } else if is_long {
        format!("0x{v:x}")
    } else {
        v.to_string()
    };
    out.extend_from_slice(text.as_bytes());
}

#[cfg(test)]
mod tests;

//! The text of a tracepoint sample: its event's print format (kept in the recording, perf's
//! tracing data or hrec's `trace_format`) evaluated over the sample's raw bytes
//! ([`crate::trace::print`]), with the recording's kernel symbols for `%pS` arguments and its
//! printk formats for `%s` of kernel strings. `script` prints it after a sample's common
//! fields; `report --sort trace` keys rows by it (perf's "Trace output" column, the default
//! sort of a recording of tracepoints alone); `--sort FIELD` keys rows by one field of it.
//!
//! **A field's value** is what perf's dynamic sort keys show: the `FIELD=VALUE` word of the
//! printed text, where the print format shows the field that way, else the field as
//! libtraceevent prints a field by itself (`tep_print_field`: numbers in decimal, `long`
//! and pointer fields in hex, strings as text). perf takes any word that merely *begins*
//! with the field's name, so a format printing `fd: 0x3` gives perf an empty cell for
//! `fd`; hrec takes only `FIELD=` and prints the field itself otherwise (`0x3`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::recording::Recording;
use crate::symbol::kallsyms::KernelSymbols as Kallsyms;
use crate::trace::format::EventFormat;
use crate::trace::print::{KernelSymbols, Printer};

/// One tracepoint event's format and its printer.
#[derive(Debug)]
struct Event {
    format: EventFormat,
    printer: Printer,
}

/// The printers of a recording's tracepoints, by event index ([`crate::data::Meta::events`]).
#[derive(Debug)]
pub struct TraceText {
    events: Vec<Option<Event>>,
    kallsyms: Arc<Kallsyms>,
    printk: HashMap<u64, String>,
}

impl TraceText {
    /// The printers of `rec`'s tracepoint events; `None` when it has none (no event with a
    /// kept format).
    pub fn new(rec: &Recording) -> Option<TraceText> {
        let meta = rec.meta();
        let events: Vec<Option<Event>> = meta
            .events
            .iter()
            .map(|e| {
                let format = EventFormat::parse(e.trace_format.as_deref()?).ok()?;
                let system = e.name.split(':').next().unwrap_or_default();
                let printer = Printer::new(system, &format);
                Some(Event { format, printer })
            })
            .collect();
        events.iter().any(Option::is_some).then(|| TraceText {
            events,
            kallsyms: rec.kernel_symbols(),
            printk: crate::trace::tracefs::parse_printk_formats(&meta.trace_printk),
        })
    }

    /// Whether event `ev` is a tracepoint with a format to print it by.
    pub fn is_tracepoint(&self, ev: usize) -> bool {
        self.events.get(ev).is_some_and(Option::is_some)
    }

    /// Appends the text of a sample of event `ev` with raw data `raw` to `out`; false (and
    /// nothing appended) when `ev` is no tracepoint.
    pub fn print(&self, ev: usize, raw: &[u8], out: &mut String) -> bool {
        let Some(Some(e)) = self.events.get(ev) else {
            return false;
        };
        e.printer.print(raw, &self.symbols(), out);
        true
    }

    /// [`TraceText::print`], then what `--sort FIELD` keys read: a NUL, and for each of the
    /// event's own fields (not the common ones) its value (see the module docs) and its
    /// bytes in hex, joined as [`fields`] splits them.
    pub fn print_with_fields(&self, ev: usize, raw: &[u8], out: &mut String) -> bool {
        let Some(Some(e)) = self.events.get(ev) else {
            return false;
        };
        use std::fmt::Write;
        let start = out.len();
        e.printer.print(raw, &self.symbols(), out);
        let end = out.len();
        out.push(FIELDS);
        for (i, f) in e.format.fields.iter().filter(|f| !f.common).enumerate() {
            if i > 0 {
                out.push(NEXT);
            }
            // The value from the text written above (copied: `out` grows meanwhile); it
            // never holds the separators (the kernel's text has none that matter here, and
            // any that do are dropped).
            let value = match word_value(out.get(start..end).unwrap_or_default(), &f.name) {
                Some(v) => v.to_string(),
                None => crate::trace::print::field_text(f, raw),
            };
            out.extend(value.chars().filter(|c| ![FIELDS, NEXT, BYTES].contains(c)));
            out.push(BYTES);
            for b in f.bytes(raw).unwrap_or_default() {
                let _ = write!(out, "{b:02x}");
            }
        }
        true
    }

    fn symbols(&self) -> Symbols<'_> {
        Symbols(&self.kallsyms, &self.printk)
    }
}

/// Between a sample's text and its fields ([`TraceText::print_with_fields`]).
const FIELDS: char = '\0';
/// Between two fields.
const NEXT: char = '\u{1f}';
/// Between a field's value and its bytes.
const BYTES: char = '\u{1e}';

/// The text part of a string of [`TraceText::print_with_fields`] (all of any other).
pub fn text(s: &str) -> &str {
    s.split(FIELDS).next().unwrap_or_default()
}

/// The fields of a string of [`TraceText::print_with_fields`]: each one's value and bytes
/// (hex), in the event's order; none for a string without them.
pub fn fields(s: &str) -> impl Iterator<Item = (&str, &str)> {
    s.split_once(FIELDS)
        .map(|(_, f)| f)
        .into_iter()
        .flat_map(|f| f.split(NEXT))
        .map(|f| f.split_once(BYTES).unwrap_or((f, "")))
}

/// The recording's kernel symbols and printk formats, as the printer asks for them.
struct Symbols<'a>(&'a Kallsyms, &'a HashMap<u64, String>);

impl KernelSymbols for Symbols<'_> {
    fn symbol(&self, addr: u64) -> Option<(&str, u64)> {
        self.0.lookup_name(addr)
    }

    fn printk_string(&self, addr: u64) -> Option<&str> {
        self.1.get(&addr).map(String::as_str)
    }
}

/// A field's value in a sample's printed `text`: the `VALUE` of its word `NAME=VALUE`, if it
/// has one (else the field is printed alone; see the module docs).
fn word_value<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    text.split(' ')
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

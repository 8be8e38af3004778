//! Variables and parameters by where they live at a PC: the DWARF half of typing an access
//! through a register (perf 6.8+'s `find_data_type` for heap and stack accesses).
//!
//! **The rule.** An instruction that accesses memory at `base + disp` (its memory operand,
//! [`super::access`]) reads a variable's type when, at that PC, DWARF says the variable lives
//! there:
//! * in register `base` itself (`DW_OP_regN`, directly or through a location list entry
//!   covering the PC): the variable is a pointer, the access reads what it points to at
//!   offset `disp` (`p->b` is `struct rec +0x8 (b)`);
//! * in memory at `reg + off` (`DW_OP_bregN off`, `DW_OP_fbreg off` with a frame base of
//!   `DW_OP_bregN`/`DW_OP_regN`, or `DW_OP_fbreg off` with a frame base of
//!   `DW_OP_call_frame_cfa`, the CFA being `reg + c` at the PC by the call frame information):
//!   a variable on the stack, the access reads the variable itself at offset
//!   `disp - off` (less `c` for the CFA).
//!
//! Only the scopes (functions, inlined calls, lexical blocks) whose ranges hold the PC count,
//! the innermost first; the access's offset must fall inside the type read (a negative or
//! too large offset is not typed: it is some other object next to it). A variable of an
//! inlined call takes its name and type from its abstract origin. Other locations (a value
//! computed on the DWARF stack, pieces, entry values) hold no address and never match.
//!
//! Each unit's variables are read once, on the first PC asked for in its ranges.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use gimli::{AttributeValue, DebugInfoOffset, Reader as _};

use super::super::dwarf::Reader;

/// Where a variable lives at a PC, as far as an access can be typed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// In DWARF register `n`.
    Reg(u16),
    /// In memory at DWARF register `n` plus the offset.
    Mem(u16, i64),
    /// In memory at the CFA plus the offset.
    Cfa(i64),
}

/// A variable or parameter of a scope.
#[derive(Debug)]
struct Local {
    /// The ranges of its innermost scope.
    ranges: Vec<(u64, u64)>,
    /// How deep its scope is (inner scopes first).
    depth: isize,
    location: Location,
    /// The enclosing function's `DW_AT_frame_base`.
    frame_base: Option<gimli::Expression<Reader>>,
    name: Arc<str>,
    ty: DebugInfoOffset,
}

#[derive(Debug)]
enum Location {
    Expr(gimli::Expression<Reader>),
    List(gimli::LocationListsOffset),
}

/// A unit, parsed, with its locals.
type UnitLocals = Arc<(gimli::Unit<Reader>, Vec<Local>)>;

/// The units of a DWARF and, once asked for, each one's locals.
pub(super) struct Locals {
    dwarf: gimli::Dwarf<Reader>,
    /// `(begin, end, unit)`, by `begin`.
    ranges: Vec<(u64, u64, usize)>,
    headers: Vec<gimli::UnitHeader<Reader>>,
    read: RefCell<HashMap<usize, UnitLocals>>,
}

impl std::fmt::Debug for Locals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locals")
            .field("units", &self.headers.len())
            .finish()
    }
}

/// Scopes deeper than this are not read (a corrupt file may nest without end).
const MAX_SCOPES: usize = 256;

impl Locals {
    /// The units of `dwarf` and their ranges; nothing of their entries is read yet.
    pub(super) fn new(dwarf: gimli::Dwarf<Reader>) -> Locals {
        let mut headers = Vec::new();
        let mut ranges = Vec::new();
        let mut units = dwarf.units();
        while let Ok(Some(header)) = units.next() {
            let Ok(unit) = dwarf.unit(header.clone()) else {
                continue;
            };
            if let Ok(mut rs) = dwarf.unit_ranges(&unit) {
                while let Ok(Some(r)) = rs.next() {
                    if r.begin < r.end {
                        ranges.push((r.begin, r.end, headers.len()));
                    }
                }
            }
            headers.push(header);
        }
        ranges.sort_unstable();
        Locals {
            dwarf,
            ranges,
            headers,
            read: RefCell::new(HashMap::new()),
        }
    }

    /// The locals whose scopes hold `pc`, innermost first, each with where it lives there
    /// (`None`: nowhere an access can be typed by).
    pub(super) fn at(&self, pc: u64) -> Vec<(Arc<str>, DebugInfoOffset, Place)> {
        let end = self.ranges.partition_point(|r| r.0 <= pc);
        let mut units: Vec<usize> = self.ranges[..end]
            .iter()
            .filter(|r| pc < r.1)
            .map(|r| r.2)
            .collect();
        units.dedup();
        let mut found = Vec::new();
        for u in units {
            let Some(read) = self.unit(u) else { continue };
            let (unit, locals) = &*read;
            let mut hits: Vec<(isize, &Local, Place)> = locals
                .iter()
                .filter(|l| l.ranges.iter().any(|&(b, e)| b <= pc && pc < e))
                .filter_map(|l| Some((l.depth, l, self.place(unit, l, pc)?)))
                .collect();
            // Stable: within one depth, the order of the file.
            hits.sort_by_key(|h| std::cmp::Reverse(h.0));
            found.extend(hits.into_iter().map(|(_, l, p)| (l.name.clone(), l.ty, p)));
        }
        found
    }

    fn unit(&self, u: usize) -> Option<UnitLocals> {
        if let Some(r) = self.read.borrow().get(&u) {
            return Some(r.clone());
        }
        let unit = self.dwarf.unit(self.headers.get(u)?.clone()).ok()?;
        let locals = self.read_locals(&unit);
        let r = Arc::new((unit, locals));
        self.read.borrow_mut().insert(u, r.clone());
        Some(r)
    }

    fn read_locals(&self, unit: &gimli::Unit<Reader>) -> Vec<Local> {
        struct Scope {
            depth: isize,
            ranges: Vec<(u64, u64)>,
            frame_base: Option<gimli::Expression<Reader>>,
        }
        let mut scopes: Vec<Scope> = Vec::new();
        let mut locals = Vec::new();
        let mut entries = unit.entries();
        while let Ok(Some(entry)) = entries.next_dfs() {
            let depth = entry.depth();
            while scopes.last().is_some_and(|s| s.depth >= depth) {
                scopes.pop();
            }
            match entry.tag() {
                gimli::DW_TAG_subprogram
                | gimli::DW_TAG_inlined_subroutine
                | gimli::DW_TAG_lexical_block
                    if scopes.len() < MAX_SCOPES =>
                {
                    let mut ranges = Vec::new();
                    if let Ok(mut rs) = self.dwarf.die_ranges(unit, entry) {
                        while let Ok(Some(r)) = rs.next() {
                            ranges.push((r.begin, r.end));
                        }
                    }
                    let frame_base = match entry.attr_value(gimli::DW_AT_frame_base) {
                        Some(AttributeValue::Exprloc(e)) => Some(e),
                        _ => scopes.last().and_then(|s| s.frame_base.clone()),
                    };
                    // A lexical block without ranges is its function's.
                    if ranges.is_empty()
                        && entry.tag() == gimli::DW_TAG_lexical_block
                        && let Some(s) = scopes.last()
                    {
                        ranges = s.ranges.clone();
                    }
                    scopes.push(Scope {
                        depth,
                        ranges,
                        frame_base,
                    });
                }
                gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter => {
                    let Some(scope) = scopes.last().filter(|s| s.depth < depth) else {
                        continue;
                    };
                    let location = match entry.attr_value(gimli::DW_AT_location) {
                        Some(AttributeValue::Exprloc(e)) => Location::Expr(e),
                        Some(v) => match self.dwarf.attr_locations_offset(unit, v) {
                            Ok(Some(o)) => Location::List(o),
                            _ => continue,
                        },
                        None => continue,
                    };
                    let Some((name, ty)) = self.name_and_type(unit, entry) else {
                        continue;
                    };
                    locals.push(Local {
                        ranges: scope.ranges.clone(),
                        depth,
                        location,
                        frame_base: scope.frame_base.clone(),
                        name,
                        ty,
                    });
                }
                _ => {}
            }
        }
        locals
    }

    /// A variable's name and type, from its own attributes or its abstract origin's (a
    /// concrete instance of an inlined call's parameter names neither).
    fn name_and_type(
        &self,
        unit: &gimli::Unit<Reader>,
        entry: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Option<(Arc<str>, DebugInfoOffset)> {
        let mut at = entry.clone();
        for _ in 0..4 {
            let ty = match at.attr_value(gimli::DW_AT_type) {
                Some(AttributeValue::UnitRef(o)) => o.to_debug_info_offset(&unit.header),
                Some(AttributeValue::DebugInfoRef(o)) => Some(o),
                _ => None,
            };
            if let Some(ty) = ty {
                let name = at
                    .attr_value(gimli::DW_AT_name)
                    .and_then(|v| self.dwarf.attr_string(unit, v).ok())
                    .and_then(|s| s.to_string_lossy().ok().map(|s| Arc::from(s.as_ref())))
                    .unwrap_or_else(|| Arc::from(""));
                return Some((name, ty));
            }
            let Some(AttributeValue::UnitRef(origin)) = at.attr_value(gimli::DW_AT_abstract_origin)
            else {
                return None;
            };
            at = unit.entry(origin).ok()?;
        }
        None
    }

    /// Where `local` lives at `pc`.
    fn place(&self, unit: &gimli::Unit<Reader>, local: &Local, pc: u64) -> Option<Place> {
        let expr = match &local.location {
            Location::Expr(e) => e.clone(),
            Location::List(o) => {
                let mut list = self.dwarf.locations(unit, *o).ok()?;
                let mut found = None;
                while let Ok(Some(e)) = list.next() {
                    if e.range.begin <= pc && pc < e.range.end {
                        found = Some(e.data);
                        break;
                    }
                }
                found?
            }
        };
        let enc = unit.encoding();
        match single_op(&expr, enc)? {
            gimli::Operation::Register { register } => Some(Place::Reg(register.0)),
            gimli::Operation::RegisterOffset {
                register, offset, ..
            } => Some(Place::Mem(register.0, offset)),
            gimli::Operation::FrameOffset { offset } => {
                match single_op(local.frame_base.as_ref()?, enc)? {
                    gimli::Operation::RegisterOffset {
                        register,
                        offset: o,
                        ..
                    } => Some(Place::Mem(register.0, o.checked_add(offset)?)),
                    gimli::Operation::Register { register } => Some(Place::Mem(register.0, offset)),
                    gimli::Operation::CallFrameCFA => Some(Place::Cfa(offset)),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// The one operation of `expr`, `None` when it has another number of them.
fn single_op(
    expr: &gimli::Expression<Reader>,
    enc: gimli::Encoding,
) -> Option<gimli::Operation<Reader>> {
    let mut ops = expr.clone().operations(enc);
    let first = ops.next().ok()??;
    ops.next().ok()?.is_none().then_some(first)
}

//! Data types of data addresses: which variable an address falls in and which member of the
//! variable's type an access there hits (perf 6.8+'s `type` and `typeoff` sort keys and
//! `annotate --data-type`).
//!
//! An access is typed by its data address when a variable at a fixed address holds it, else
//! by the instruction that made it: its memory operand's base register and the variable or
//! parameter that DWARF puts in (or at) that register at its PC (`locals`, [`access`]),
//! as perf 6.8+ does.
//!
//! **The rule for variables at fixed addresses** (global and static variables):
//! DWARF describes each as a `DW_TAG_variable` (at any depth: a function's static locals
//! too) whose `DW_AT_location` is the single operation `DW_OP_addr A`, with a `DW_AT_type`.
//! Its extent is the type's byte size (`DW_AT_byte_size`, through typedefs and qualifiers;
//! an array's is its element's times its count), so an address in `[A, A + size)` is an
//! access of that variable at offset `addr - A`. A declaration (`DW_AT_declaration`, an
//! `extern` in a header) has no location and is not one. Variables are kept sorted by
//! address; where two overlap (an alias), the first in the file is kept.
//!
//! **Naming the type and member.** The type is named as perf's `die_get_typename_from_type`
//! spells it: `struct S`, `union U`, `enum E` (`struct ` alone when anonymous), a base type's
//! or typedef's own name, `T*` for pointers, `T[]` for arrays (perf 6.10+) and
//! `(function_type)` for a function, with `const` and `volatile` left out (the type the
//! access reads, not the declaration's qualifiers). An array variable is an access of its
//! element: the type is the element's and the offset is into the element (`addr - A` modulo
//! the element size), so every element of `struct rec table[64]` adds to `struct rec`'s rows,
//! as perf's data-type profile counts types, not variables. The member is the struct or union
//! member whose bytes hold the offset, joined with `.` to the members inside it (an anonymous
//! struct or union adds no name; an array member goes on into its element), as perf's
//! `typeoff` prints it: `struct rec +0x8 (b)`; an offset in no member (padding, a base type)
//! is `no field`.
//!
//! **Read on first use, bounded.** A binary's variables and their types are read whole on its
//! first typed data address (`Binary::data_type`); an access typed by its instruction is
//! looked up by the instruction's file offset (`Binary::access_type`), which the replay keeps
//! with the data address. How deep types nest is bounded, so a corrupt file whose types refer
//! to themselves ends a lookup, not the process.

use std::collections::HashMap;
use std::sync::Arc;

use gimli::{AttributeValue, DebugInfoOffset, Reader as _};

use super::dwarf::Reader;

pub mod access;
mod locals;
pub mod track;

use access::Operand;
use locals::{Locals, Place};
use track::Step;

/// A type as the lookups need it.
#[derive(Debug, Clone, Default)]
struct Type {
    /// The DWARF tag.
    tag: u16,
    /// Its own name (a struct's tag name, a typedef's name); `None` when anonymous.
    name: Option<Arc<str>>,
    /// `DW_AT_byte_size`.
    size: Option<u64>,
    /// The type it refers to (typedef, qualifier, pointer, array element).
    target: Option<DebugInfoOffset>,
    /// Array: the element count of each dimension (a missing count is 0).
    dims: Vec<u64>,
    /// Struct, union or class: members as (name, offset, type).
    members: Vec<(Option<Arc<str>>, u64, DebugInfoOffset)>,
}

/// What a register points into, while replaying the instructions before an access
/// ([`DataTypes::at_tracked`]): `offset` bytes into an object of type `ty`, reached from
/// variable `var`.
#[derive(Debug, Clone)]
struct Held {
    var: Arc<str>,
    ty: DebugInfoOffset,
    offset: i64,
}

/// A variable at a fixed address.
#[derive(Debug, Clone)]
struct Var {
    start: u64,
    size: u64,
    name: Arc<str>,
    ty: DebugInfoOffset,
}

/// A type's members as perf's `annotate --data-type` lists them: each member at its offset
/// from the start of the outermost type, its size and its type (typedefs and qualifiers
/// looked through, as perf's `die_get_real_type`), with the members of a struct or union
/// member inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Offset from the start of the type annotated.
    pub offset: u64,
    /// Bytes (0 when DWARF gives no size).
    pub size: u64,
    /// Its type, as [`TypeHit::type_name`] spells types.
    pub type_name: String,
    /// The member's name; `None` for the type itself and for anonymous members.
    pub name: Option<Arc<str>>,
    /// A struct or union member's own members.
    pub children: Vec<Member>,
}

/// An address as an access of a variable's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeHit {
    /// The variable.
    pub var: Arc<str>,
    /// Its type as perf names it (an array's element type).
    pub type_name: String,
    /// The offset into that type.
    pub offset: u64,
    /// The member the offset falls in (`a.b`), `None` when none (`no field`).
    pub field: Option<String>,
    /// The type's layout (the type itself, with its members as children).
    pub layout: Arc<Member>,
}

impl TypeHit {
    /// perf's `typeoff` cell: `struct rec +0x8 (b)`, `int +0 (no field)`.
    pub fn typeoff(&self) -> String {
        let off = if self.offset == 0 {
            "0".to_string()
        } else {
            format!("{:#x}", self.offset)
        };
        format!(
            "{} +{off} ({})",
            self.type_name,
            self.field.as_deref().unwrap_or("no field")
        )
    }
}

/// The variables at fixed addresses of one binary's DWARF and the types they use, and the
/// DWARF itself for the variables that live in registers and on the stack ([`locals`]).
#[derive(Debug, Default)]
pub struct DataTypes {
    vars: Vec<Var>,
    types: HashMap<DebugInfoOffset, Type>,
    locals: Option<Locals>,
    /// The layouts built so far.
    layouts: std::cell::RefCell<HashMap<DebugInfoOffset, Arc<Member>>>,
}

/// How deep a type may nest (typedef chains, members of members) before a lookup gives up:
/// DWARF can describe cycles (a struct holding a pointer to itself is fine, a corrupt file
/// pointing a typedef at itself is not).
const MAX_DEPTH: usize = 32;

/// The most members a layout lists (nested ones included).
const MAX_MEMBERS: usize = 4096;

impl DataTypes {
    /// Reads every variable with a `DW_OP_addr` location and every type of `dwarf`. Units or
    /// entries that do not parse are skipped.
    pub(super) fn from_dwarf(dwarf: gimli::Dwarf<Reader>) -> DataTypes {
        let mut t = DataTypes::default();
        let mut units = dwarf.units();
        while let Ok(Some(header)) = units.next() {
            let Ok(unit) = dwarf.unit(header) else {
                continue;
            };
            t.read_unit(&dwarf, &unit);
        }
        // Sizes once every unit's types are read (a type may be in another unit).
        let mut vars = std::mem::take(&mut t.vars);
        for v in &mut vars {
            v.size = t.size_of(v.ty, 0).unwrap_or(0);
        }
        vars.retain(|v| v.size > 0);
        t.vars = vars;
        t.vars.sort_by_key(|v| v.start);
        let mut kept: Vec<Var> = Vec::with_capacity(t.vars.len());
        for v in std::mem::take(&mut t.vars) {
            if kept
                .last()
                .is_none_or(|k| k.start.saturating_add(k.size) <= v.start)
            {
                kept.push(v);
            }
        }
        t.vars = kept;
        t.locals = Some(Locals::new(dwarf));
        t
    }

    fn read_unit(&mut self, dwarf: &gimli::Dwarf<Reader>, unit: &gimli::Unit<Reader>) {
        let mut entries = unit.entries();
        // The struct/union whose members are being read, by depth.
        let mut parents: Vec<(isize, DebugInfoOffset)> = Vec::new();
        while let Ok(Some(entry)) = entries.next_dfs() {
            let depth = entry.depth();
            while parents.last().is_some_and(|&(d, _)| d >= depth) {
                parents.pop();
            }
            let Some(at) = entry.offset().to_debug_info_offset(&unit.header) else {
                continue;
            };
            let name = || -> Option<Arc<str>> {
                let v = entry.attr_value(gimli::DW_AT_name)?;
                let s = dwarf.attr_string(unit, v).ok()?;
                Some(Arc::from(s.to_string_lossy().ok()?.as_ref()))
            };
            let type_of = || -> Option<DebugInfoOffset> {
                match entry.attr_value(gimli::DW_AT_type)? {
                    AttributeValue::UnitRef(o) => o.to_debug_info_offset(&unit.header),
                    AttributeValue::DebugInfoRef(o) => Some(o),
                    _ => None,
                }
            };
            let udata = |a: gimli::DwAt| entry.attr_value(a)?.udata_value();
            match entry.tag() {
                gimli::DW_TAG_variable => {
                    if let (Some(start), Some(ty)) = (fixed_address(dwarf, unit, entry), type_of())
                    {
                        self.vars.push(Var {
                            start,
                            // Set once every unit is read ([`DataTypes::from_dwarf`]).
                            size: 0,
                            name: name().unwrap_or_else(|| Arc::from("")),
                            ty,
                        });
                    }
                }
                gimli::DW_TAG_member => {
                    if let (Some(&(_, parent)), Some(ty)) = (parents.last(), type_of()) {
                        // A union's members all start at 0 (no location).
                        let offset = udata(gimli::DW_AT_data_member_location).unwrap_or(0);
                        let member = (name(), offset, ty);
                        if let Some(p) = self.types.get_mut(&parent) {
                            p.members.push(member);
                        }
                    }
                }
                gimli::DW_TAG_subrange_type => {
                    if let Some(&(_, parent)) = parents.last()
                        && let Some(p) = self.types.get_mut(&parent)
                        && p.tag == gimli::DW_TAG_array_type.0
                    {
                        let count = udata(gimli::DW_AT_count)
                            .or_else(|| {
                                udata(gimli::DW_AT_upper_bound).map(|u| u.saturating_add(1))
                            })
                            .unwrap_or(0);
                        p.dims.push(count);
                    }
                }
                tag @ (gimli::DW_TAG_structure_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_class_type
                | gimli::DW_TAG_enumeration_type
                | gimli::DW_TAG_base_type
                | gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_atomic_type
                | gimli::DW_TAG_pointer_type
                | gimli::DW_TAG_reference_type
                | gimli::DW_TAG_rvalue_reference_type
                | gimli::DW_TAG_subroutine_type
                | gimli::DW_TAG_array_type) => {
                    self.types.insert(
                        at,
                        Type {
                            tag: tag.0,
                            name: name(),
                            size: udata(gimli::DW_AT_byte_size),
                            target: type_of(),
                            ..Type::default()
                        },
                    );
                    if entry.has_children() {
                        parents.push((depth, at));
                    }
                }
                _ => {}
            }
        }
    }

    /// Variables read.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// No variables.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The variable holding `svma` and what of its type an access there hits.
    pub fn lookup(&self, svma: u64) -> Option<TypeHit> {
        self.at_operand(svma, Operand::Absolute(svma), |_| None)
    }

    /// What the instruction at `pc` whose memory operand is `op` reads: a global's type by
    /// its address ([`DataTypes::lookup`]), else the type of the variable the operand's base
    /// register holds or points into at `pc` ([`locals`]); `cfa` gives the CFA rule at a PC
    /// for stack variables located from it.
    pub fn at_operand(
        &self,
        pc: u64,
        op: Operand,
        cfa: impl Fn(u64) -> Option<(u16, i64)>,
    ) -> Option<TypeHit> {
        let (name, ty, offset) = self.locate(pc, op, &cfa)?;
        self.hit(&name, ty, offset)
    }

    /// What the instruction whose memory operand is `op` reads when its base register holds
    /// a pointer that the instructions before it (`steps`, [`track`]) put there: a pointer
    /// loaded from a typed place (a variable, a member, a global) points to its pointee's
    /// start; an address taken with `lea` points into the place's own type; copies keep what
    /// a register points into, `add`/`sub` move along it, anything else forgets it. An offset
    /// outside the type pointed into is not typed.
    pub fn at_tracked(
        &self,
        op: Operand,
        steps: &[Step],
        cfa: impl Fn(u64) -> Option<(u16, i64)>,
    ) -> Option<TypeHit> {
        let Operand::Based(reg, disp) = op else {
            return None;
        };
        let mut regs: [Option<Held>; 16] = Default::default();
        for s in steps {
            let held = match *s {
                Step::Load { ip, dst, src } => (
                    dst,
                    self.tracked(&regs, ip, src, &cfa).and_then(|h| {
                        let value = self.value_at(h.ty, h.offset as u64, 0)?;
                        Some(Held {
                            var: h.var,
                            ty: self.pointee(value)?,
                            offset: 0,
                        })
                    }),
                ),
                Step::Addr { ip, dst, src } => (dst, self.tracked(&regs, ip, src, &cfa)),
                Step::Copy { dst, src } => (dst, regs.get(usize::from(src)).cloned().flatten()),
                Step::Add { dst, imm } => (
                    dst,
                    regs.get(usize::from(dst)).cloned().flatten().map(|h| Held {
                        offset: h.offset.wrapping_add(imm),
                        ..h
                    }),
                ),
                Step::Clobber(dst) => (dst, None),
            };
            if let Some(r) = regs.get_mut(usize::from(held.0)) {
                *r = held.1;
            }
        }
        let h = self.within(regs.get(usize::from(reg))?.as_ref()?, disp)?;
        self.hit(&h.var, h.ty, h.offset as u64)
    }

    /// The place the memory operand `src` of the instruction at `ip` names: through a
    /// register that `regs` knows to point into a type, else as [`DataTypes::locate`] finds
    /// it (the register's DWARF variable at `ip`, a stack slot, a global).
    fn tracked(
        &self,
        regs: &[Option<Held>; 16],
        ip: u64,
        src: Operand,
        cfa: &dyn Fn(u64) -> Option<(u16, i64)>,
    ) -> Option<Held> {
        if let Operand::Based(r, disp) = src
            && let Some(Some(h)) = regs.get(usize::from(r))
        {
            return self.within(h, disp);
        }
        let (var, ty, offset) = self.locate(ip, src, cfa)?;
        Some(Held {
            var,
            ty,
            offset: i64::try_from(offset).ok()?,
        })
    }

    /// `h` moved along by `disp`, when that stays inside its type.
    fn within(&self, h: &Held, disp: i64) -> Option<Held> {
        let offset = h.offset.checked_add(disp)?;
        let size = self.size_of(h.ty, 0)?;
        (u64::try_from(offset).is_ok_and(|o| o < size)).then(|| Held {
            offset,
            ..h.clone()
        })
    }

    /// The variable, its type and the offset into it that the memory operand `op` of the
    /// instruction at `pc` names, by DWARF alone (see [`DataTypes::at_operand`]).
    fn locate(
        &self,
        pc: u64,
        op: Operand,
        cfa: &dyn Fn(u64) -> Option<(u16, i64)>,
    ) -> Option<(Arc<str>, DebugInfoOffset, u64)> {
        let (reg, disp) = match op {
            Operand::Absolute(a) => {
                let i = self.vars.partition_point(|v| v.start <= a);
                let var = self.vars.get(i.checked_sub(1)?)?;
                let offset = a - var.start;
                return (offset < var.size).then(|| (var.name.clone(), var.ty, offset));
            }
            Operand::Based(reg, disp) => (reg, disp),
        };
        for (name, ty, place) in self.locals.as_ref()?.at(pc) {
            let (ty, offset) = match place {
                Place::Reg(r) if r == reg => match self.pointee(ty) {
                    Some(t) => (t, disp),
                    None => continue,
                },
                Place::Mem(r, at) if r == reg => (ty, disp.wrapping_sub(at)),
                Place::Cfa(at) => match cfa(pc) {
                    Some((r, c)) if r == reg => (ty, disp.wrapping_sub(c).wrapping_sub(at)),
                    _ => continue,
                },
                _ => continue,
            };
            let Ok(offset) = u64::try_from(offset) else {
                continue;
            };
            if self.size_of(ty, 0).is_some_and(|s| offset < s) {
                return Some((name, ty, offset));
            }
        }
        None
    }

    /// The type of the scalar (a pointer, a number) at exactly `offset` into `ty`: through
    /// members and array elements; `None` when the offset is inside one rather than at its
    /// start.
    fn value_at(&self, ty: DebugInfoOffset, offset: u64, depth: usize) -> Option<DebugInfoOffset> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let real = self.real(ty)?;
        let t = self.types.get(&real)?;
        match gimli::DwTag(t.tag) {
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type => {
                let &(_, at, mty) = t.members.iter().find(|&&(_, at, mty)| {
                    offset >= at
                        && self
                            .size_of(mty, depth + 1)
                            .is_some_and(|s| offset - at < s)
                })?;
                self.value_at(mty, offset - at, depth + 1)
            }
            gimli::DW_TAG_array_type => {
                let elem = t.target?;
                let size = self.size_of(elem, depth + 1).filter(|&s| s > 0)?;
                self.value_at(elem, offset % size, depth + 1)
            }
            _ => (offset == 0).then_some(real),
        }
    }

    /// What a pointer of type `ty` points to; `None` when `ty` is no pointer (or `void*`).
    fn pointee(&self, ty: DebugInfoOffset) -> Option<DebugInfoOffset> {
        let t = self.types.get(&self.real(ty)?)?;
        match gimli::DwTag(t.tag) {
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => t.target,
            _ => None,
        }
    }

    /// An access at `offset` into variable `var` of type `ty` (an array's: into its element).
    fn hit(&self, var: &Arc<str>, ty: DebugInfoOffset, offset: u64) -> Option<TypeHit> {
        let mut offset = offset;
        let mut ty = self.strip(ty, 0)?;
        for _ in 0..MAX_DEPTH {
            let t = self.types.get(&ty)?;
            if t.tag != gimli::DW_TAG_array_type.0 {
                break;
            }
            let elem = self.strip(t.target?, 0)?;
            let size = self.size_of(elem, 0).filter(|&s| s > 0)?;
            offset %= size;
            ty = elem;
        }
        let mut path: Vec<Arc<str>> = Vec::new();
        self.member_at(ty, offset, &mut path, 0);
        Some(TypeHit {
            var: var.clone(),
            type_name: self.name_of(ty, 0),
            offset,
            field: (!path.is_empty()).then(|| path.join(".")),
            layout: self.layout(ty),
        })
    }

    /// The layout of `ty` (built once per type).
    fn layout(&self, ty: DebugInfoOffset) -> Arc<Member> {
        if let Some(l) = self.layouts.borrow().get(&ty) {
            return l.clone();
        }
        let l = Arc::new(Member {
            offset: 0,
            size: self.size_of(ty, 0).unwrap_or(0),
            type_name: self.name_of(ty, 0),
            name: None,
            children: self.members_of(ty, 0, 0, &mut { MAX_MEMBERS }),
        });
        self.layouts.borrow_mut().insert(ty, l.clone());
        l
    }

    /// The members of `ty` (through typedefs and qualifiers) placed at `base`, at most
    /// `budget` of them in all (a corrupt file can make a type contain itself many times
    /// over).
    fn members_of(
        &self,
        ty: DebugInfoOffset,
        base: u64,
        depth: usize,
        budget: &mut usize,
    ) -> Vec<Member> {
        let Some(t) = self.real(ty).and_then(|r| self.types.get(&r)) else {
            return Vec::new();
        };
        if depth >= MAX_DEPTH
            || !matches!(
                gimli::DwTag(t.tag),
                gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type
            )
        {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (name, at, mty) in &t.members {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            let real = self.real(*mty).unwrap_or(*mty);
            let offset = base.saturating_add(*at);
            out.push(Member {
                offset,
                size: self.size_of(real, 0).unwrap_or(0),
                // The member's own type as declared (a typedef's name, as perf names it).
                type_name: self.name_of(*mty, 0),
                name: name.clone(),
                children: self.members_of(real, offset, depth + 1, budget),
            });
        }
        out
    }

    /// `ty` with typedefs and qualifiers looked through.
    fn real(&self, ty: DebugInfoOffset) -> Option<DebugInfoOffset> {
        let mut ty = ty;
        for _ in 0..MAX_DEPTH {
            let t = self.types.get(&ty)?;
            match gimli::DwTag(t.tag) {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_atomic_type => ty = t.target?,
                _ => return Some(ty),
            }
        }
        None
    }

    /// `ty` without typedefs' and qualifiers' wrapping where they name nothing of their own:
    /// qualifiers are dropped, a typedef is kept (its name is the type's name).
    fn strip(&self, mut ty: DebugInfoOffset, depth: usize) -> Option<DebugInfoOffset> {
        for _ in depth..MAX_DEPTH {
            let t = self.types.get(&ty)?;
            match gimli::DwTag(t.tag) {
                gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_atomic_type => ty = t.target?,
                _ => return Some(ty),
            }
        }
        None
    }

    /// The byte size of `ty`.
    fn size_of(&self, ty: DebugInfoOffset, depth: usize) -> Option<u64> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let t = self.types.get(&ty)?;
        if let Some(s) = t.size {
            return Some(s);
        }
        match gimli::DwTag(t.tag) {
            gimli::DW_TAG_array_type => {
                let elem = self.size_of(t.target?, depth + 1)?;
                t.dims.iter().try_fold(elem, |acc, &n| acc.checked_mul(n))
            }
            _ => self.size_of(t.target?, depth + 1),
        }
    }

    /// C's spelling of `ty`.
    fn name_of(&self, ty: DebugInfoOffset, depth: usize) -> String {
        let Some(t) = self.types.get(&ty).filter(|_| depth < MAX_DEPTH) else {
            return "(unknown)".to_string();
        };
        // An anonymous struct is `struct ` with nothing after, as perf prints it.
        let own = || t.name.as_deref().unwrap_or("").to_string();
        let target = |d| match t.target {
            Some(o) => self.name_of(o, d),
            None => "void".to_string(),
        };
        match gimli::DwTag(t.tag) {
            gimli::DW_TAG_structure_type => format!("struct {}", own()),
            gimli::DW_TAG_union_type => format!("union {}", own()),
            gimli::DW_TAG_class_type => format!("class {}", own()),
            gimli::DW_TAG_enumeration_type => format!("enum {}", own()),
            gimli::DW_TAG_pointer_type => format!("{}*", target(depth + 1)),
            gimli::DW_TAG_reference_type => format!("{}&", target(depth + 1)),
            gimli::DW_TAG_rvalue_reference_type => format!("{}&&", target(depth + 1)),
            gimli::DW_TAG_array_type => format!("{}[]", target(depth + 1)),
            gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type | gimli::DW_TAG_atomic_type => {
                target(depth + 1)
            }
            gimli::DW_TAG_subroutine_type => "(function_type)".to_string(),
            _ if t.name.is_none() => "(unknown)".to_string(),
            _ => own(),
        }
    }

    /// Pushes onto `path` the names of the members of `ty` holding `offset`, outermost first.
    fn member_at(&self, ty: DebugInfoOffset, offset: u64, path: &mut Vec<Arc<str>>, depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        let Some(t) = self.types.get(&ty) else {
            return;
        };
        match gimli::DwTag(t.tag) {
            gimli::DW_TAG_typedef
            | gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_atomic_type => {
                if let Some(target) = t.target {
                    self.member_at(target, offset, path, depth + 1);
                }
            }
            gimli::DW_TAG_array_type => {
                if let Some(elem) = t.target
                    && let Some(size) = self.size_of(elem, depth + 1).filter(|&s| s > 0)
                {
                    self.member_at(elem, offset % size, path, depth + 1);
                }
            }
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type => {
                let hit = t.members.iter().find(|&&(_, at, mty)| {
                    offset >= at
                        && self
                            .size_of(mty, depth + 1)
                            .is_some_and(|s| offset - at < s)
                });
                if let Some((name, at, mty)) = hit {
                    if let Some(n) = name {
                        path.push(n.clone());
                    }
                    self.member_at(*mty, offset - at, path, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// The address of a variable whose location is the one operation `DW_OP_addr A` (or
/// `DW_OP_addrx`), else `None` (a register, a stack slot, a TLS offset, a declaration).
fn fixed_address(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<u64> {
    let AttributeValue::Exprloc(expr) = entry.attr_value(gimli::DW_AT_location)? else {
        return None;
    };
    let mut ops = expr.operations(unit.encoding());
    let first = ops.next().ok()??;
    if ops.next().ok()?.is_some() {
        return None;
    }
    match first {
        gimli::Operation::Address { address } => Some(address),
        gimli::Operation::AddressIndex { index } => dwarf.address(unit, index).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbol::elf::fixtures::gcc;

    const PROG: &str = r#"
struct inner { short x; short y; };
struct rec { long a; int b; struct inner in; union { int u; float f; }; char pad[3]; };
typedef struct rec rec_t;
struct rec one = { 1, 2 };
rec_t table[64];
const volatile int counter = 5;
static double lonely;
long *ptr;
typedef struct inner inner_t;
struct holder { inner_t h; const long z; } hold;

int use(int i)
{
    static int calls;
    calls++;
    lonely += i;
    return table[i].b + one.in.y + counter + calls + (ptr != 0) + hold.h.x;
}

int main(int argc, char **argv) { (void)argv; return use(argc); }
"#;

    fn types_of(bin: &std::path::Path) -> (DataTypes, object::File<'static>) {
        let bytes: &'static [u8] = Box::leak(std::fs::read(bin).unwrap().into_boxed_slice());
        let obj = object::File::parse(bytes).unwrap();
        let file = std::fs::File::open(bin).unwrap();
        let dwarf = crate::symbol::dwarf::sections_of(&file).unwrap();
        (DataTypes::from_dwarf(dwarf), obj)
    }

    fn addr(obj: &object::File<'_>, name: &str) -> u64 {
        use object::{Object as _, ObjectSymbol as _};
        obj.symbols()
            .find(|s| {
                s.name() == Ok(name) || s.name().is_ok_and(|n| n.starts_with(&format!("{name}.")))
            })
            .unwrap_or_else(|| panic!("no symbol {name}"))
            .address()
    }

    /// Every variable, its members, array elements, qualifiers and a static local, named as
    /// the rule says, from gcc's DWARF 5 (and DWARF 4).
    #[test]
    fn variables_and_members_by_address() {
        for dwarf in ["-gdwarf-5", "-gdwarf-4"] {
            let dir = tempfile::tempdir().unwrap();
            let bin = gcc(dir.path(), "types", PROG, &["-O1", dwarf]);
            let (t, obj) = types_of(&bin);
            let hit = |a: u64| t.lookup(a).map(|h| (h.var.to_string(), h.typeoff()));
            let one = addr(&obj, "one");
            assert_eq!(hit(one), Some(("one".into(), "struct rec +0 (a)".into())));
            assert_eq!(
                hit(one + 8),
                Some(("one".into(), "struct rec +0x8 (b)".into()))
            );
            assert_eq!(
                hit(one + 14),
                Some(("one".into(), "struct rec +0xe (in.y)".into()))
            );
            assert_eq!(
                hit(one + 16),
                Some(("one".into(), "struct rec +0x10 (u)".into()))
            );
            assert_eq!(
                hit(one + 21),
                Some(("one".into(), "struct rec +0x15 (pad)".into()))
            );
            assert_eq!(
                hit(one + 23),
                Some(("one".into(), "struct rec +0x17 (no field)".into()))
            );
            // sizeof(struct rec) is 24: element 5 of the typedef'd array, its member b.
            let table = addr(&obj, "table");
            assert_eq!(
                hit(table + 5 * 24 + 8),
                Some(("table".into(), "rec_t +0x8 (b)".into()))
            );
            assert_ne!(hit(table + 64 * 24).map(|h| h.0), Some("table".to_string()));
            let counter = addr(&obj, "counter");
            assert_eq!(
                hit(counter),
                Some(("counter".into(), "int +0 (no field)".into()))
            );
            assert_eq!(
                hit(addr(&obj, "lonely") + 4),
                Some(("lonely".into(), "double +0x4 (no field)".into()))
            );
            assert_eq!(
                hit(addr(&obj, "ptr")),
                Some(("ptr".into(), "long int* +0 (no field)".into()))
            );
            assert_eq!(
                hit(addr(&obj, "calls")),
                Some(("calls".into(), "int +0 (no field)".into()))
            );
            assert_eq!(t.lookup(0), None);
            // The layout `annotate --data-type` lists: members at their offsets, nested ones
            // inside, an anonymous union as perf names it.
            let layout = t.lookup(one).unwrap().layout;
            let members: Vec<_> = layout
                .children
                .iter()
                .map(|m| {
                    let inner: Vec<_> = m.children.iter().map(|c| c.offset).collect();
                    (
                        m.offset,
                        m.size,
                        m.type_name.as_str(),
                        m.name.as_deref(),
                        inner,
                    )
                })
                .collect();
            assert_eq!(
                members,
                [
                    (0, 8, "long int", Some("a"), vec![]),
                    (8, 4, "int", Some("b"), vec![]),
                    (12, 4, "struct inner", Some("in"), vec![12, 14]),
                    (16, 4, "union ", None, vec![16, 16]),
                    (20, 3, "char[]", Some("pad"), vec![]),
                ]
            );
            assert_eq!((layout.size, layout.type_name.as_str()), (24, "struct rec"));
            // A member's type as declared, as perf 6.12 lists it: the typedef's name (its
            // members still listed inside), no qualifiers.
            let hold = t.lookup(addr(&obj, "hold")).unwrap().layout;
            let members: Vec<_> = hold
                .children
                .iter()
                .map(|m| (m.type_name.as_str(), m.size, m.children.len()))
                .collect();
            assert_eq!(members, [("inner_t", 4, 2), ("long int", 8, 0)]);
        }
    }

    const ACCESS: &str = r#"
struct node { char head[64]; long hot; int warm; };
struct pair { long a; long b; };
__attribute__((noinline)) void fill(struct node *n, long count)
{
    for (long i = 0; i < count; i++) {
        n->hot = i;
        n++;
    }
}
__attribute__((noinline)) long stack_sum(int k)
{
    volatile struct pair p;
    p.a = k;
    p.b = k * 2;
    return p.a + p.b;
}
struct list { long len; struct node *first; };
struct node *head;
__attribute__((noinline)) long chase(struct list *l)
{
    struct node *local = l->first;
    return l->first->warm + head->warm + (&local->hot)[1];
}
int main(int argc, char **argv)
{
    (void)argv;
    struct node n[2];
    struct list l = { 2, n };
    head = n;
    fill(n, argc);
    return (int)stack_sum(argc) + (int)chase(&l);
}
"#;

    /// Each memory-accessing instruction of function `name` in `bin`, as GNU assembler text,
    /// with what [`Binary::access_type`] names it.
    fn accesses(bin: &std::path::Path, name: &str) -> Vec<(String, Option<String>)> {
        use iced_x86::{Decoder, DecoderOptions, Formatter as _, GasFormatter};
        let b = crate::symbol::binary::Binary::load(
            bin,
            None,
            &crate::symbol::debuginfo::SearchPaths::default(),
        )
        .unwrap();
        let bytes: &'static [u8] = Box::leak(std::fs::read(bin).unwrap().into_boxed_slice());
        let obj = object::File::parse(bytes).unwrap();
        let start = addr(&obj, name);
        let load = b
            .loads
            .iter()
            .find(|l| start >= l.vaddr && start - l.vaddr < l.filesz)
            .unwrap();
        let code = b.code(start, 64).unwrap();
        let mut out = Vec::new();
        let mut f = GasFormatter::new();
        for insn in Decoder::with_ip(64, &code, start, DecoderOptions::NONE).iter() {
            if insn.op_count() == 0
                || !(0..insn.op_count()).any(|i| insn.op_kind(i) == iced_x86::OpKind::Memory)
            {
                continue;
            }
            let mut text = String::new();
            f.format(&insn, &mut text);
            let offset = load.offset + (insn.ip() - load.vaddr);
            out.push((text, b.access_type(offset).map(|h| h.typeoff())));
            if insn.mnemonic() == iced_x86::Mnemonic::Ret {
                break;
            }
        }
        out
    }

    /// Accesses through a pointer held in a register (a location list at -O1) and to a stack
    /// variable located from the CFA (at -O1 through %rsp, at -O0 through %rbp), typed as the
    /// rule says; an access through a register no variable is in at the PC is not typed.
    #[test]
    fn accesses_through_registers_and_the_stack() {
        let dir = tempfile::tempdir().unwrap();
        let o1 = gcc(dir.path(), "o1", ACCESS, &["-O1", "-g"]);
        let o0 = gcc(dir.path(), "o0", ACCESS, &["-O0", "-g"]);
        let has = |list: &[(String, Option<String>)], insn: &str, want: Option<&str>| {
            assert!(
                list.iter().any(|(t, h)| t == insn && h.as_deref() == want),
                "{insn}: {list:?}"
            );
        };
        let fill = accesses(&o1, "fill");
        has(
            &fill,
            "mov %rax,0x40(%rdi)",
            Some("struct node +0x40 (hot)"),
        );
        let sum = accesses(&o1, "stack_sum");
        has(&sum, "mov %rax,-0x18(%rsp)", Some("struct pair +0 (a)"));
        has(&sum, "mov %rdi,-0x10(%rsp)", Some("struct pair +0x8 (b)"));
        let sum = accesses(&o0, "stack_sum");
        has(&sum, "mov %edi,-0x14(%rbp)", Some("int +0 (no field)"));
        has(&sum, "mov %rax,-0x10(%rbp)", Some("struct pair +0 (a)"));
        has(&sum, "mov %rax,-8(%rbp)", Some("struct pair +0x8 (b)"));
        let fill = accesses(&o0, "fill");
        has(
            &fill,
            "mov %rdi,-0x18(%rbp)",
            Some("struct node* +0 (no field)"),
        );
        // %rax holds a copy of `n` that DWARF at -O0 does not describe: the load before it
        // in the block types it.
        has(
            &fill,
            "mov %rdx,0x40(%rax)",
            Some("struct node +0x40 (hot)"),
        );
        // A pointer member loaded through a pointer, a global pointer, and an address taken
        // with lea and moved along, all in %rax.
        let chase = accesses(&o0, "chase");
        has(&chase, "mov 8(%rax),%rax", Some("struct list +0x8 (first)"));
        has(
            &chase,
            "mov 0x48(%rax),%eax",
            Some("struct node +0x48 (warm)"),
        );
        has(
            &chase,
            "mov 0x48(%rax),%edx",
            Some("struct node +0x48 (warm)"),
        );
        has(&chase, "mov (%rax),%rax", Some("struct node +0x48 (warm)"));
    }
}

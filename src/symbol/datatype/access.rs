//! The machine half of typing an access through a register: the memory operand of the
//! instruction at a PC (x86-64, iced-x86) and the CFA rule there (`.eh_frame`).
//!
//! * **The operand.** The first explicit memory operand of the instruction, as
//!   `base + disp` (the index register, if any, is left out: `base[i].field` reads the field
//!   at `disp` of the element the index picks). `lea` and the hinting `nop`/`prefetch` forms
//!   access nothing. A RIP-relative operand, or one with neither base nor index, is an
//!   absolute address (a global's). The base register is named by its DWARF number (x86-64
//!   psABI: rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8-r15 8-15) so that it
//!   compares with DWARF locations; a 32-bit base (`(%eax)`) is its 64-bit register.
//! * **The CFA.** A stack variable located at `DW_OP_fbreg` from a frame base of
//!   `DW_OP_call_frame_cfa` lies at the CFA plus its offset; the call frame information gives
//!   the CFA at the PC as `register + offset`, so an access through that register is the
//!   variable's at `disp - offset - fbreg`.

use gimli::{RunTimeEndian, UnwindSection as _};
use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};

/// What an instruction's memory operand adds up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// A fixed address (RIP-relative or absolute).
    Absolute(u64),
    /// DWARF register plus displacement.
    Based(u16, i64),
}

/// The memory operand of the instruction in `bytes` at `pc`; `None` when it has none, does
/// not decode, or accesses nothing.
pub fn operand(bytes: &[u8], pc: u64) -> Option<Operand> {
    let insn = Decoder::with_ip(64, bytes, pc, DecoderOptions::NONE).decode();
    if insn.is_invalid() {
        return None;
    }
    operand_of(&insn)
}

/// The memory operand of a decoded instruction (see [`operand`]).
pub(super) fn operand_of(insn: &Instruction) -> Option<Operand> {
    if matches!(
        insn.mnemonic(),
        Mnemonic::Lea
            | Mnemonic::Nop
            | Mnemonic::Prefetchnta
            | Mnemonic::Prefetcht0
            | Mnemonic::Prefetcht1
            | Mnemonic::Prefetcht2
            | Mnemonic::Prefetchw
    ) {
        return None;
    }
    address(insn)
}

/// What the memory operand of `insn` adds up, whatever the instruction does with it (`lea`
/// only computes it).
pub(super) fn address(insn: &Instruction) -> Option<Operand> {
    (0..insn.op_count()).find(|&i| insn.op_kind(i) == OpKind::Memory)?;
    let base = insn.memory_base();
    let disp = insn.memory_displacement64();
    match base {
        Register::RIP | Register::EIP => Some(Operand::Absolute(disp)),
        Register::None if insn.memory_index() == Register::None => Some(Operand::Absolute(disp)),
        Register::None => None,
        r => Some(Operand::Based(dwarf_reg(r)?, disp as i64)),
    }
}

/// The DWARF number of a general-purpose register (x86-64 psABI), any width.
pub(super) fn dwarf_reg(r: Register) -> Option<u16> {
    Some(match r.full_register() {
        Register::RAX => 0,
        Register::RDX => 1,
        Register::RCX => 2,
        Register::RBX => 3,
        Register::RSI => 4,
        Register::RDI => 5,
        Register::RBP => 6,
        Register::RSP => 7,
        Register::R8 => 8,
        Register::R9 => 9,
        Register::R10 => 10,
        Register::R11 => 11,
        Register::R12 => 12,
        Register::R13 => 13,
        Register::R14 => 14,
        Register::R15 => 15,
        _ => return None,
    })
}

/// A binary's `.eh_frame`, for the CFA at a PC.
#[derive(Debug)]
pub struct Cfi {
    bytes: Vec<u8>,
    endian: RunTimeEndian,
    eh_frame: u64,
    text: u64,
}

/// The most bytes of `.eh_frame` read (a larger one is not a real program's).
const MAX_EH_FRAME: u64 = 256 << 20;

impl Cfi {
    /// The `.eh_frame` of the ELF file at `path`; `None` without one.
    pub fn load(path: &std::path::Path) -> Option<Cfi> {
        use object::{Object as _, ObjectSection as _};
        let file = std::fs::File::open(path).ok()?;
        let read = object::read::ReadCache::new(file);
        let obj = object::File::parse(&read).ok()?;
        let eh = obj.section_by_name(".eh_frame")?;
        if eh.size() > MAX_EH_FRAME {
            return None;
        }
        let bytes = eh.data().ok()?.to_vec();
        let text = obj.section_by_name(".text").map_or(0, |s| s.address());
        let endian = if obj.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        Some(Cfi {
            bytes,
            endian,
            eh_frame: eh.address(),
            text,
        })
    }

    /// The CFA at `pc` as `(DWARF register, offset)`, when the rule is that simple.
    pub fn cfa(&self, pc: u64) -> Option<(u16, i64)> {
        let eh = gimli::EhFrame::new(&self.bytes, self.endian);
        let bases = gimli::BaseAddresses::default()
            .set_eh_frame(self.eh_frame)
            .set_text(self.text);
        let mut ctx = Box::new(gimli::UnwindContext::new());
        let row = eh
            .unwind_info_for_address(&bases, &mut ctx, pc, gimli::EhFrame::cie_from_offset)
            .ok()?;
        match row.cfa() {
            gimli::CfaRule::RegisterAndOffset { register, offset } => Some((register.0, *offset)),
            gimli::CfaRule::Expression(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operands as the rule reads them, from bytes gcc emits.
    #[test]
    fn memory_operands() {
        // mov %rax,0x40(%rdi)
        assert_eq!(
            operand(&[0x48, 0x89, 0x47, 0x40], 0x1000),
            Some(Operand::Based(5, 0x40))
        );
        // mov -0x18(%rsp),%rax
        assert_eq!(
            operand(&[0x48, 0x8b, 0x44, 0x24, 0xe8], 0x1000),
            Some(Operand::Based(7, -0x18))
        );
        // mov 0x2edb(%rip),%eax at 0x1000 (6 bytes): 0x1006 + 0x2edb
        assert_eq!(
            operand(&[0x8b, 0x05, 0xdb, 0x2e, 0x00, 0x00], 0x1000),
            Some(Operand::Absolute(0x1006 + 0x2edb))
        );
        // mov (%eax),%ecx (address-size prefix): rax
        assert_eq!(operand(&[0x67, 0x8b, 0x08], 0), Some(Operand::Based(0, 0)));
        // mov 0x8(%rbx,%r12,8),%rdx: the base, the index left out
        assert_eq!(
            operand(&[0x4a, 0x8b, 0x54, 0xe3, 0x08], 0),
            Some(Operand::Based(3, 8))
        );
        // lea 0x8(%rdi),%rax; nopw 0x0(%rax,%rax,1); add %rdx,%rax; garbage
        assert_eq!(operand(&[0x48, 0x8d, 0x47, 0x08], 0), None);
        assert_eq!(operand(&[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00], 0), None);
        assert_eq!(operand(&[0x48, 0x01, 0xd0], 0), None);
        assert_eq!(operand(&[0x0f, 0xff], 0), None);
        assert_eq!(operand(&[], 0), None);
    }
}

//! The machine half of typing an access through a register that DWARF does not describe at
//! the PC (perf 6.9+'s instruction tracking): what the instructions before the PC put in
//! each register, as data-flow steps.
//!
//! Unoptimized code keeps its variables on the stack and loads a pointer into a scratch
//! register just before it dereferences it (`mov -0x18(%rbp),%rax; mov %rdx,0x40(%rax)`);
//! DWARF says where `n` lives (the stack slot), not that `%rax` holds a copy of it. The
//! access is typed by replaying the instructions from the start of its basic block:
//!
//! * **The block.** The function is decoded whole; every near branch target in it starts a
//!   block, and the replay starts at the last start at or before the PC, with no register
//!   known (a block entered from several places may hold anything in them; a conditional
//!   branch's fall-through has only its one way in, so it does not start a block).
//! * **The steps.** `mov mem, r64` loads a value from a place that may be typed; `lea mem,
//!   r64` takes its address; `mov r64, r64` copies; `add`/`sub` of an immediate moves a
//!   pointer along; a `call` overwrites the caller-saved registers (rax, rcx, rdx, rsi, rdi,
//!   r8-r11, as the psABI allows the callee to); any other write to a general register,
//!   of any width, makes it unknown.
//!
//! What the steps mean in types is the DWARF half ([`super::DataTypes::at_tracked`]).

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess,
    OpKind, Register,
};

use super::access::{Operand, address, dwarf_reg};

/// What one instruction does to the registers, as far as types go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Register `dst` is loaded with the 8 bytes at `src`, by the instruction at `ip`.
    Load { ip: u64, dst: u16, src: Operand },
    /// Register `dst` is set to the address `src` adds up (`lea`), at `ip`.
    Addr { ip: u64, dst: u16, src: Operand },
    /// Register `dst` is set to register `src`.
    Copy { dst: u16, src: u16 },
    /// Register `dst` is moved along by `imm` bytes.
    Add { dst: u16, imm: i64 },
    /// Register `dst` is overwritten with something untracked.
    Clobber(u16),
}

/// The registers a call may overwrite (x86-64 psABI's caller-saved), by DWARF number.
const CALLER_SAVED: [u16; 9] = [0, 1, 2, 4, 5, 8, 9, 10, 11];

/// The most instructions replayed (a block longer than this is not a real one).
const MAX_STEPS: usize = 4096;

/// The steps from the start of the basic block holding `pc` up to `pc` (not included), in
/// the function whose bytes `code` start at `start`; `None` when `pc` is not the start of
/// one of its instructions.
pub fn steps(code: &[u8], start: u64, pc: u64) -> Option<Vec<Step>> {
    let end = start.checked_add(code.len() as u64)?;
    let insns: Vec<Instruction> = Decoder::with_ip(64, code, start, DecoderOptions::NONE)
        .iter()
        .take_while(|i| !i.is_invalid())
        .collect();
    let at = insns.iter().position(|i| i.ip() == pc)?;
    let targets: std::collections::HashSet<u64> = insns
        .iter()
        .filter(|i| {
            matches!(
                i.flow_control(),
                FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch
            )
        })
        .map(|i| i.near_branch_target())
        .filter(|t| (start..=pc).contains(t) && *t < end)
        .collect();
    // The last block start at or before the PC, at most MAX_STEPS instructions back.
    let first = at.saturating_sub(MAX_STEPS);
    let block = (first..=at)
        .rev()
        .find(|&k| targets.contains(&insns[k].ip()))
        .unwrap_or(first);
    let mut info = InstructionInfoFactory::new();
    let mut out = Vec::new();
    for insn in &insns[block..at] {
        step(insn, &mut info, &mut out);
    }
    Some(out)
}

/// The steps of one instruction, pushed onto `out`.
fn step(insn: &Instruction, info: &mut InstructionInfoFactory, out: &mut Vec<Step>) {
    let reg64 = |i: u32| {
        (insn.op_kind(i) == OpKind::Register && insn.op_register(i).is_gpr64())
            .then(|| dwarf_reg(insn.op_register(i)))
            .flatten()
    };
    let imm = || match insn.op1_kind() {
        OpKind::Immediate8to64 | OpKind::Immediate32to64 | OpKind::Immediate8 => {
            Some(insn.immediate(1) as i64)
        }
        _ => None,
    };
    if insn.op_count() == 2
        && let Some(dst) = reg64(0)
    {
        let ip = insn.ip();
        let memory = insn.op1_kind() == OpKind::Memory;
        let known = match insn.mnemonic() {
            Mnemonic::Mov if memory => address(insn).map(|src| Step::Load { ip, dst, src }),
            Mnemonic::Lea => address(insn).map(|src| Step::Addr { ip, dst, src }),
            Mnemonic::Mov => reg64(1).map(|src| Step::Copy { dst, src }),
            Mnemonic::Add => imm().map(|imm| Step::Add { dst, imm }),
            Mnemonic::Sub => imm().map(|imm| Step::Add {
                dst,
                imm: imm.wrapping_neg(),
            }),
            _ => None,
        };
        if let Some(s) = known {
            out.push(s);
            return;
        }
    }
    if insn.flow_control() == FlowControl::Call || insn.flow_control() == FlowControl::IndirectCall
    {
        out.extend(CALLER_SAVED.iter().map(|&r| Step::Clobber(r)));
    }
    for used in info.info(insn).used_registers() {
        let written = matches!(
            used.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        );
        if written
            && used.register() != Register::RSP
            && let Some(r) = dwarf_reg(used.register())
        {
            out.push(Step::Clobber(r));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gcc -O0's `fill` (see the module docs): the replay starts at the loop body's block,
    /// loads `%rax` and `%rdx` from the stack, and stops before the store through `%rax`.
    #[test]
    fn the_block_before_the_pc() {
        #[rustfmt::skip]
        let code = [
            0x55,                                     // 1149 push %rbp
            0x48, 0x89, 0xe5,                         // 114a mov %rsp,%rbp
            0x48, 0x89, 0x7d, 0xe8,                   // 114d mov %rdi,-0x18(%rbp)
            0x48, 0x89, 0x75, 0xe0,                   // 1151 mov %rsi,-0x20(%rbp)
            0x48, 0xc7, 0x45, 0xf8, 0, 0, 0, 0,       // 1155 movq $0x0,-0x8(%rbp)
            0xeb, 0x19,                               // 115d jmp 1178
            0x48, 0x8b, 0x45, 0xe8,                   // 115f mov -0x18(%rbp),%rax
            0x48, 0x8b, 0x55, 0xf8,                   // 1163 mov -0x8(%rbp),%rdx
            0x48, 0x89, 0x50, 0x40,                   // 1167 mov %rdx,0x40(%rax)
            0x48, 0x81, 0x45, 0xe8, 0, 0x10, 0, 0,    // 116b addq $0x1000,-0x18(%rbp)
            0x48, 0x83, 0x45, 0xf8, 0x01,             // 1173 addq $0x1,-0x8(%rbp)
            0x48, 0x8b, 0x45, 0xf8,                   // 1178 mov -0x8(%rbp),%rax
            0x48, 0x3b, 0x45, 0xe0,                   // 117c cmp -0x20(%rbp),%rax
            0x7c, 0xdd,                               // 1180 jl 115f
            0x90,                                     // 1182 nop
            0x5d,                                     // 1183 pop %rbp
            0xc3,                                     // 1184 ret
        ];
        assert_eq!(
            steps(&code, 0x1149, 0x1167),
            Some(vec![
                Step::Load {
                    ip: 0x115f,
                    dst: 0,
                    src: Operand::Based(6, -0x18)
                },
                Step::Load {
                    ip: 0x1163,
                    dst: 1,
                    src: Operand::Based(6, -8)
                },
            ])
        );
        // Before the first branch target: from the function's start (the push writes only
        // %rsp, which is never a tracked pointer; the copy into %rbp is one).
        assert_eq!(
            steps(&code, 0x1149, 0x114d),
            Some(vec![Step::Copy { dst: 6, src: 7 }])
        );
        // The compare's block starts at the jump target 0x1178.
        assert_eq!(
            steps(&code, 0x1149, 0x117c),
            Some(vec![Step::Load {
                ip: 0x1178,
                dst: 0,
                src: Operand::Based(6, -8)
            }])
        );
        // Not an instruction's start.
        assert_eq!(steps(&code, 0x1149, 0x1168), None);
        assert_eq!(steps(&code, 0x1149, 0x2000), None);
    }

    /// lea, add and sub of immediates, a 32-bit write, and a call's clobbers.
    #[test]
    fn what_each_instruction_does() {
        #[rustfmt::skip]
        let code = [
            0x48, 0x8d, 0x47, 0x08,                   // 0 lea 0x8(%rdi),%rax
            0x48, 0x83, 0xc0, 0x10,                   // 4 add $0x10,%rax
            0x48, 0x83, 0xeb, 0x08,                   // 8 sub $0x8,%rbx
            0x89, 0xc1,                               // c mov %eax,%ecx
            0xe8, 0, 0, 0, 0,                         // e call 13
            0xc3,                                     // 13 ret
        ];
        let s = steps(&code, 0, 0x13).unwrap();
        assert_eq!(
            &s[..4],
            &[
                Step::Addr {
                    ip: 0,
                    dst: 0,
                    src: Operand::Based(5, 8)
                },
                Step::Add { dst: 0, imm: 0x10 },
                Step::Add { dst: 3, imm: -8 },
                Step::Clobber(2),
            ]
        );
        for r in CALLER_SAVED {
            assert!(s[4..].contains(&Step::Clobber(r)), "{r}: {s:?}");
        }
        // A call's target is another function's entry: it starts no block here.
        assert!(s.len() > 4 + CALLER_SAVED.len() - 1, "{s:?}");
    }
}

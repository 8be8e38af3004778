//! Frames whose CFA is defined off a register other than rsp and rbp, which framehop cannot
//! follow: it keeps only rip, rsp and rbp, and for such a frame it silently applies its
//! frame-pointer rule instead, which skips the caller that did not set rbp.
//!
//! glibc's lazy-binding trampolines (`_dl_runtime_resolve_xsave`/`_xsavec`/`_fxsave` in
//! `ld-linux-x86-64.so.2`) are the common case: after aligning rsp they set `CFA = rbx + 32`,
//! so every sample taken while a library function is bound (`_dl_fixup`, the symbol lookup,
//! an IFUNC resolver, and all of them on every call under `LD_BIND_NOT=1`) lost the function
//! that made the call. perf's unwinders (libunwind, libdw) track every register and show it.
//!
//! **What is done.** When a file is read, the FDEs of its `.eh_frame` whose instructions set
//! the CFA off another register are noted ([`odd_cfa_ranges`]: one pass over the
//! instructions, no table built). A walk that meets such a frame is walked again from the
//! sampled registers with every frame's own CFI evaluated here ([`Tracked`]), so that the
//! callee-saved registers (rbx, rbp, r12 to r15) are restored frame by frame as the rules
//! say, up to the frame that needs one of them. A frame these rules cannot do (no FDE, a CFA
//! expression such as the PLT's, a register whose value is not known) takes framehop's step,
//! with the other registers kept as they were: the ABI's callee-saved registers are the same
//! in the caller unless a rule says otherwise.

use std::ops::Range;

use gimli::{
    BaseAddresses, CallFrameInstruction, CfaRule, CieOrFde, EhFrame, EhFrameHdr, EndianSlice,
    LittleEndian, Register, RegisterRule, UnwindContext, UnwindSection as _,
};

/// DWARF's x86-64 register numbers: rsp, rbp, and the return address column.
const RSP: u16 = 7;
const RBP: u16 = 6;
const RA: u16 = 16;
/// The registers a function must preserve (SysV x86-64): rbx, rbp, r12 to r15.
const CALLEE_SAVED: [u16; 6] = [3, 6, 12, 13, 14, 15];
/// perf's x86 register number of each DWARF register 0 to 16 (rax, rdx, rcx, rbx, rsi, rdi,
/// rbp, rsp, r8 to r15, and the return address, which is the sampled ip).
const PERF_OF_DWARF: [u32; 17] = [0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8];
/// FDEs noted per file, at most (a file full of them is not what this is for).
const MAX_ODD: usize = 4096;

/// The `.eh_frame` of one file and the addresses its pointer encodings are relative to.
pub(super) struct Section<'a> {
    pub bytes: &'a [u8],
    pub svma: u64,
    pub text: Option<u64>,
    pub got: Option<u64>,
    /// `.eh_frame_hdr` (its search table finds an FDE without a scan).
    pub hdr: Option<(&'a [u8], u64)>,
}

impl Section<'_> {
    fn bases(&self) -> BaseAddresses {
        let mut b = BaseAddresses::default().set_eh_frame(self.svma);
        if let Some(t) = self.text {
            b = b.set_text(t);
        }
        if let Some(g) = self.got {
            b = b.set_got(g);
        }
        if let Some((_, h)) = self.hdr {
            b = b.set_eh_frame_hdr(h);
        }
        b
    }

    fn eh_frame(&self) -> EhFrame<EndianSlice<'_, LittleEndian>> {
        let mut s = EhFrame::new(self.bytes, LittleEndian);
        s.set_address_size(8);
        s
    }
}

/// The address ranges (in the file's own addresses) of the FDEs of `section` that define the
/// CFA off a register other than rsp and rbp. Damaged bytes end the scan, keeping what it
/// found.
pub(super) fn odd_cfa_ranges(section: &Section<'_>) -> Vec<Range<u64>> {
    let eh_frame = section.eh_frame();
    let bases = section.bases();
    let mut entries = eh_frame.entries(&bases);
    let mut odd = Vec::new();
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(EhFrame::cie_from_offset) else {
            continue;
        };
        let mut instructions = fde.instructions(&eh_frame, &bases);
        while let Ok(Some(i)) = instructions.next() {
            let register = match i {
                CallFrameInstruction::DefCfa { register, .. }
                | CallFrameInstruction::DefCfaSf { register, .. }
                | CallFrameInstruction::DefCfaRegister { register } => register.0,
                _ => continue,
            };
            if register != RSP && register != RBP {
                let start = fde.initial_address();
                odd.push(start..start.saturating_add(fde.len()));
                break;
            }
        }
        if odd.len() >= MAX_ODD {
            break;
        }
    }
    odd.sort_by_key(|r| r.start);
    odd
}

/// Sets DWARF register `r` of `regs`.
fn set(regs: &mut [Option<u64>; 17], r: u16, v: Option<u64>) {
    if let Some(slot) = regs.get_mut(usize::from(r)) {
        *slot = v;
    }
}

/// A walk that evaluates the CFI itself, with every general register it can know.
pub(super) struct Tracked {
    /// DWARF registers 0 to 16 (16: the instruction pointer).
    regs: [Option<u64>; 17],
    ctx: Box<UnwindContext<usize>>,
}

/// What one frame of a [`Tracked`] walk gave.
pub(super) enum Step {
    /// The caller's return address; the registers are the caller's.
    Caller(u64),
    /// The return address is undefined: the root of the stack.
    Root,
    /// A read outside the copied stack.
    Cut,
    /// These rules cannot do this frame: framehop's step, then [`Tracked::after_framehop`].
    Unknown,
}

impl Tracked {
    /// From the sampled user registers: `reg(n)` is perf's register `n`.
    pub fn from_sample(reg: impl Fn(u32) -> Option<u64>) -> Tracked {
        Tracked {
            regs: PERF_OF_DWARF.map(reg),
            ctx: Box::new(UnwindContext::new()),
        }
    }

    /// The frame at `lookup` (the ip, or a return address less one), found at `svma` in the
    /// file whose `.eh_frame` is `section`.
    pub fn step(
        &mut self,
        section: &Section<'_>,
        svma: u64,
        read_stack: &mut impl FnMut(u64) -> Result<u64, ()>,
    ) -> Step {
        let eh_frame = section.eh_frame();
        let bases = section.bases();
        let fde = match section.hdr {
            Some((hdr, _)) => EhFrameHdr::new(hdr, LittleEndian)
                .parse(&bases, 8)
                .ok()
                .and_then(|h| {
                    h.table()?
                        .fde_for_address(&eh_frame, &bases, svma, EhFrame::cie_from_offset)
                        .ok()
                }),
            None => eh_frame
                .fde_for_address(&bases, svma, EhFrame::cie_from_offset)
                .ok(),
        };
        let Some(fde) = fde else {
            return Step::Unknown;
        };
        let regs = self.regs;
        let get = |r: u16| regs.get(usize::from(r)).copied().flatten();
        let Ok(row) = fde.unwind_info_for_address(&eh_frame, &bases, &mut self.ctx, svma) else {
            return Step::Unknown;
        };
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => match get(register.0) {
                Some(v) => v.wrapping_add_signed(*offset),
                None => return Step::Unknown,
            },
            CfaRule::Expression(_) => return Step::Unknown,
        };
        let mut cut = false;
        let mut rule_value = |rule: Option<RegisterRule<usize>>, old: Option<u64>| match rule {
            None | Some(RegisterRule::SameValue) => Ok(old),
            Some(RegisterRule::Undefined) => Ok(None),
            Some(RegisterRule::Offset(n)) => match read_stack(cfa.wrapping_add_signed(n)) {
                Ok(v) => Ok(Some(v)),
                Err(()) => {
                    cut = true;
                    Err(())
                }
            },
            Some(RegisterRule::ValOffset(n)) => Ok(Some(cfa.wrapping_add_signed(n))),
            Some(RegisterRule::Register(r)) => Ok(get(r.0)),
            Some(_) => Err(()),
        };
        let ra = match row.register(Register(RA)) {
            Some(RegisterRule::Undefined) => return Step::Root,
            None => return Step::Unknown,
            rule => match rule_value(rule, None) {
                Ok(Some(ra)) => ra,
                Ok(None) => return Step::Unknown,
                Err(()) if cut => return Step::Cut,
                Err(()) => return Step::Unknown,
            },
        };
        let mut next = [None; 17];
        for r in CALLEE_SAVED {
            // A saved register out of the copy is unknown, not the end of the walk.
            let v = rule_value(row.register(Register(r)), get(r)).unwrap_or_default();
            set(&mut next, r, v);
        }
        set(&mut next, RSP, Some(cfa));
        set(&mut next, RA, Some(ra));
        self.regs = next;
        Step::Caller(ra)
    }

    /// After framehop did a frame: its rip, rsp and rbp; the other callee-saved registers
    /// kept, the rest unknown.
    pub fn after_framehop(&mut self, ip: u64, sp: u64, bp: u64) {
        let mut next = [None; 17];
        for r in CALLEE_SAVED {
            set(&mut next, r, self.get(r));
        }
        set(&mut next, RBP, Some(bp));
        set(&mut next, RSP, Some(sp));
        set(&mut next, RA, Some(ip));
        self.regs = next;
    }

    /// rsp: the last frame's CFA.
    pub fn sp(&self) -> u64 {
        self.get(RSP).unwrap_or(0)
    }

    /// rbp as the rules left it (for framehop's next step).
    pub fn bp(&self) -> Option<u64> {
        self.get(RBP)
    }

    fn get(&self, r: u16) -> Option<u64> {
        self.regs.get(usize::from(r)).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built `.eh_frame`: one CIE (CFA = rsp + 8, ra at CFA - 8) and one FDE for
    /// 0x1000..0x1100 that pushes rbx, sets CFA = rbx + 32 at 0x1004, saves rbx at CFA - 32.
    fn trampoline() -> Vec<u8> {
        let mut cie = vec![
            0, 0, 0, 0, // CIE id
            1, // version
            b'z', b'R', 0,    // augmentation
            1,    // code alignment
            0x78, // data alignment -8
            16,   // return address column
            1,    // augmentation length
            0x03, // FDE pointer encoding: udata4, absolute
            0x0c, 7, 8, // DW_CFA_def_cfa rsp, 8
            0x90, 1, // DW_CFA_offset ra, 1 * -8
        ];
        while (cie.len() + 4) % 8 != 0 {
            cie.push(0);
        }
        let mut out = (cie.len() as u32).to_le_bytes().to_vec();
        out.extend(&cie);
        let fde_at = out.len();
        let mut fde = Vec::new();
        fde.extend(((fde_at + 4) as u32).to_le_bytes()); // CIE pointer (back from here)
        fde.extend(0x1000u32.to_le_bytes());
        fde.extend(0x100u32.to_le_bytes());
        fde.push(0); // augmentation length
        fde.extend([0x41, 0x0e, 16]); // advance 1; def_cfa_offset 16
        fde.extend([0x83, 2]); // rbx at CFA - 16
        fde.extend([0x43, 0x0c, 3, 32]); // advance 3; def_cfa rbx, 32
        while (fde.len() + 4) % 8 != 0 {
            fde.push(0);
        }
        out.extend((fde.len() as u32).to_le_bytes());
        out.extend(fde);
        out.extend(0u32.to_le_bytes());
        out
    }

    /// The trampoline's FDE is noted, and a walk through it restores rbx from the callee's
    /// save slot and finds the return address off rbx.
    #[test]
    fn a_cfa_off_rbx_is_followed() {
        let bytes = trampoline();
        let section = Section {
            bytes: &bytes,
            svma: 0x5000,
            text: None,
            got: None,
            hdr: None,
        };
        assert_eq!(odd_cfa_ranges(&section), vec![0x1000..0x1100]);
        // In the trampoline at 0x1010: rbx = 0x7000, the frame's CFA is 0x7020: the return
        // address 0x4242 at 0x7018, the caller's rbx 0x99 at 0x7010.
        let stack = |a: u64| match a {
            0x7018 => Ok(0x4242),
            0x7010 => Ok(0x99),
            _ => Err(()),
        };
        let mut t = Tracked::from_sample(|r| match r {
            1 => Some(0x7000),
            7 => Some(0x6f00),
            8 => Some(0x1010),
            6 => Some(0x1234),
            _ => None,
        });
        let mut read = stack;
        assert!(matches!(
            t.step(&section, 0x1010, &mut read),
            Step::Caller(0x4242)
        ));
        assert_eq!(t.get(3), Some(0x99));
        assert_eq!(t.get(RSP), Some(0x7020));
        // rbp, not named by the rules, is the same in the caller.
        assert_eq!(t.bp(), Some(0x1234));
        // Outside every FDE: framehop's step.
        assert!(matches!(t.step(&section, 0x2000, &mut read), Step::Unknown));
        // rbx unknown: this frame cannot be done here.
        let mut t = Tracked::from_sample(|r| (r == 8).then_some(0x1010));
        assert!(matches!(t.step(&section, 0x1010, &mut read), Step::Unknown));
    }

    /// Damaged bytes end the scan and the steps, never a panic.
    #[test]
    fn damaged_rules_never_panic() {
        let good = trampoline();
        let mut next = crate::testutil::xorshift(7);
        for _ in 0..3000 {
            let mut b = good.clone();
            for _ in 0..(1 + next() % 6) {
                let at = (next() % b.len() as u64) as usize;
                b[at] = next() as u8;
            }
            b.truncate(1 + (next() % b.len() as u64) as usize);
            let section = Section {
                bytes: &b,
                svma: 0x5000,
                text: Some(0x1000),
                got: None,
                hdr: None,
            };
            let _ = odd_cfa_ranges(&section);
            let seed = next();
            let mut t = Tracked::from_sample(|r| Some(seed.rotate_left(r) % 0x10000));
            let _ = t.step(&section, 0x1000 + next() % 0x200, &mut |a| {
                if a % 8 == 0 { Ok(a ^ 0x55) } else { Err(()) }
            });
        }
    }
}

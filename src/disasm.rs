//! x86-64 disassembly of a function's bytes, in objdump's text as `perf annotate` shows it:
//! AT&T syntax by default (`-M intel` for Intel's), lowercase hex, the mnemonic padded to
//! seven columns, a direct branch or call as `target <symbol+offset>`, and a RIP-relative
//! operand followed by objdump's `# target <symbol+offset>` comment. Each instruction also
//! gives its branch target and whether it ends a basic block (a jump, call, return or
//! undecodable byte), which `annotate` uses to split a function into basic blocks.
//!
//! Decoding is iced-x86's. The bytes come from a file hrec did not write and may be anything:
//! undecodable bytes become one `(bad)` instruction of one byte, as objdump prints them, and
//! the work is bounded by the number of bytes given (at most one instruction per byte).

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction, IntelFormatter,
    OpKind,
};

/// Assembler syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// AT&T, objdump's and perf's default.
    #[default]
    Att,
    /// Intel (`-M intel`).
    Intel,
}

impl std::str::FromStr for Syntax {
    type Err = String;

    fn from_str(s: &str) -> Result<Syntax, String> {
        match s {
            "att" | "att-mnemonic" => Ok(Syntax::Att),
            "intel" | "intel-mnemonic" => Ok(Syntax::Intel),
            _ => Err(format!("-M {s}: the disassembler style is att or intel")),
        }
    }
}

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    /// Its address (the ELF virtual address of the bytes given).
    pub address: u64,
    /// Its length in bytes.
    pub len: usize,
    /// objdump's text of it.
    pub text: String,
    /// Where a direct jump, conditional jump or call goes.
    pub target: Option<u64>,
    /// It ends a basic block (a jump, call, return, or an undecodable byte).
    pub ends_block: bool,
}

/// Names an address for `<symbol+offset>`: `(name, offset)`, or `None` when nothing covers it.
pub type Namer<'a> = dyn Fn(u64) -> Option<(String, u64)> + 'a;

/// Decodes `bytes`, whose first byte is at `address`, into instructions in objdump's text;
/// `name` names branch targets and RIP-relative operands.
pub fn disassemble(bytes: &[u8], address: u64, syntax: Syntax, name: &Namer<'_>) -> Vec<Insn> {
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    let mut formatter: Box<dyn Formatter> = match syntax {
        Syntax::Att => Box::new(GasFormatter::new()),
        Syntax::Intel => Box::new(IntelFormatter::new()),
    };
    let o = formatter.options_mut();
    o.set_uppercase_hex(false);
    o.set_small_hex_numbers_in_decimal(false);
    o.set_hex_prefix("0x");
    o.set_hex_suffix("");
    o.set_leading_zeros(false);
    o.set_first_operand_char_index(7);
    o.set_rip_relative_addresses(true);
    o.set_show_branch_size(false);
    o.set_branch_leading_zeros(false);
    o.set_show_zero_displacements(true);
    if syntax == Syntax::Intel {
        o.set_uppercase_keywords(true);
        o.set_memory_size_options(iced_x86::MemorySizeOptions::Always);
    }
    let at = |a: u64| match name(a) {
        Some((n, 0)) => format!("{a:x} <{n}>"),
        Some((n, off)) => format!("{a:x} <{n}+{off:#x}>"),
        None => format!("{a:x}"),
    };
    let mut out = Vec::new();
    let mut insn = Instruction::default();
    let mut text = String::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut insn);
        let len = insn.len();
        if insn.is_invalid() {
            out.push(Insn {
                address: insn.ip(),
                len: len.max(1),
                text: "(bad)".to_string(),
                target: None,
                ends_block: true,
            });
            if len == 0 {
                break;
            }
            continue;
        }
        text.clear();
        let direct = matches!(
            insn.op0_kind(),
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
        ) && insn.op_count() == 1;
        let target = direct.then(|| insn.near_branch_target());
        match target {
            Some(t) => {
                formatter.format_mnemonic(&insn, &mut text);
                let pad = 7usize.saturating_sub(text.len()).max(1);
                text.extend(std::iter::repeat_n(' ', pad));
                text.push_str(&at(t));
            }
            None => {
                // objdump writes the scale of an index register, `1` too, and only then.
                let indexed = insn.memory_index() != iced_x86::Register::None;
                formatter.options_mut().set_always_show_scale(indexed);
                if insn.mnemonic() == iced_x86::Mnemonic::Nop && insn.has_segment_prefix() {
                    // Padding with a segment prefix: objdump writes the prefix first.
                    let mut m = String::from(seg_name(insn.segment_prefix()));
                    formatter.format_mnemonic(&insn, &mut m);
                    let mut ops = String::new();
                    formatter.format_all_operands(&insn, &mut ops);
                    text.push_str(&format!("{m:<6} {ops}"));
                } else {
                    formatter.format(&insn, &mut text);
                }
                if insn.is_ip_rel_memory_operand() {
                    let t = insn.ip_rel_memory_address();
                    text.push_str("        # ");
                    text.push_str(&at(t));
                }
            }
        }
        let ends_block = !matches!(insn.flow_control(), FlowControl::Next);
        out.push(Insn {
            address: insn.ip(),
            len,
            text: text.trim_end().to_string(),
            target,
            ends_block,
        });
    }
    out
}

/// A segment register's name as an objdump prefix (`cs `).
fn seg_name(r: iced_x86::Register) -> &'static str {
    use iced_x86::Register as R;
    match r {
        R::CS => "cs ",
        R::DS => "ds ",
        R::ES => "es ",
        R::SS => "ss ",
        R::FS => "fs ",
        R::GS => "gs ",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of perf's annotate example on this machine (`branchy` of a gcc -O2 program
    /// at 0x12b0) and objdump's text of them, as perf annotate printed it.
    #[test]
    fn att_text_is_objdumps() {
        let bytes: &[u8] = &[
            0x48, 0x85, 0xff, // test %rdi,%rdi
            0x74, 0x63, // je 1318
            0x48, 0xba, 0x44, 0x7a, 0xbf, 0xcb, 0x8d, 0x40, 0x39, 0x01, // movabs
            0x31, 0xf6, // xor %esi,%esi
            0x0f, 0x1f, 0x00, // nopl (%rax)
            0x48, 0xc1, 0xe1, 0x0d, // shl $0xd,%rcx
            0x48, 0x0f, 0x45, 0xc1, // cmovne %rcx,%rax
            0xf6, 0xc2, 0x02, // test $0x2,%dl
            0x0f, 0x1f, 0x44, 0x00, 0x00, // nopl 0x0(%rax,%rax,1)
            0x48, 0x8d, 0x3d, 0x10, 0x00, 0x00, 0x00, // lea 0x10(%rip),%rdi
            0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, // cs nopw
            0xc3, // ret
        ];
        let name = |a: u64| {
            (0x12b0..0x131b)
                .contains(&a)
                .then(|| ("branchy".to_string(), a - 0x12b0))
        };
        let v = disassemble(bytes, 0x12b0, Syntax::Att, &name);
        let text: Vec<&str> = v.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            text,
            [
                "test   %rdi,%rdi",
                "je     1318 <branchy+0x68>",
                "movabs $0x139408dcbbf7a44,%rdx",
                "xor    %esi,%esi",
                "nopl   (%rax)",
                "shl    $0xd,%rcx",
                "cmovne %rcx,%rax",
                "test   $0x2,%dl",
                "nopl   0x0(%rax,%rax,1)",
                "lea    0x10(%rip),%rdi        # 12eb <branchy+0x3b>",
                "cs nopw 0x0(%rax,%rax,1)",
                "ret",
            ]
        );
        assert_eq!(v[1].target, Some(0x1318));
        assert!(v[1].ends_block && !v[0].ends_block && v[11].ends_block);
        let addrs: Vec<u64> = v.iter().map(|i| i.address).collect();
        assert_eq!(addrs[..3], [0x12b0, 0x12b3, 0x12b5]);
    }

    #[test]
    fn intel_syntax_and_bad_bytes() {
        let v = disassemble(&[0x48, 0x8b, 0x08], 0x1000, Syntax::Intel, &|_| None);
        assert_eq!(v[0].text, "mov    rcx,QWORD PTR [rax]");
        // A lone prefix byte at the end does not decode: `(bad)`, one byte, then nothing.
        let v = disassemble(&[0x90, 0x0f], 0x10, Syntax::Att, &|_| None);
        assert_eq!(v.len(), 2);
        assert_eq!((v[1].address, v[1].text.as_str()), (0x11, "(bad)"));
    }

    /// Arbitrary bytes never panic, and every byte is covered once (fuzzing the decoder
    /// wrapper with random input).
    #[test]
    fn random_bytes_decode_to_covering_instructions() {
        let mut next = crate::testutil::xorshift(0x5eed);
        for round in 0..2000 {
            let len = (next() % 64) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let base = 0x40_0000 + round;
            let v = disassemble(&bytes, base, Syntax::Att, &|a| {
                Some(("f".into(), a.wrapping_sub(base)))
            });
            let covered: usize = v.iter().map(|i| i.len).sum();
            assert!(covered >= len && v.len() <= len, "{bytes:02x?}");
            let mut at = base;
            for i in &v {
                assert_eq!(i.address, at, "{bytes:02x?}");
                at += i.len as u64;
            }
        }
    }
}

//! The tokens of the formula language. A name may hold `.`, `:` and `#`, and a `[N]` followed
//! by `.` stays in it (`system.sockets[0].cpus.count`); a number is decimal with an optional
//! fraction and exponent and may not run into a name (`1e`, `2x` are errors); a two-character
//! comparison may have blanks inside (Intel writes `> =`); a lone `=` is no operator.

use super::error::ExprError;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Num(f64),
    Ident(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    Ne,
    Amp,
    Pipe,
    Bang,
    Eof,
}

impl Tok {
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Num(v) => format!("number {v}"),
            Tok::Ident(s) => format!("'{s}'"),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::Plus => "'+'".into(),
            Tok::Minus => "'-'".into(),
            Tok::Star => "'*'".into(),
            Tok::Slash => "'/'".into(),
            Tok::Lt => "'<'".into(),
            Tok::Le => "'<='".into(),
            Tok::Gt => "'>'".into(),
            Tok::Ge => "'>='".into(),
            Tok::EqEq => "'=='".into(),
            Tok::Ne => "'!='".into(),
            Tok::Amp => "'&'".into(),
            Tok::Pipe => "'|'".into(),
            Tok::Bang => "'!'".into(),
            Tok::Eof => "end of formula".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) start: usize,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'#'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'#')
}

/// If `b[i..]` is `[digits]` followed by `.` and a name character, the length of `[digits]`.
/// That keeps dotted names with an index inside (`system.sockets[0].cpus.count`) whole.
fn inner_index_len(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut j = i + 1;
    while b.get(j).is_some_and(u8::is_ascii_digit) {
        j += 1;
    }
    if j == i + 1 || b.get(j) != Some(&b']') {
        return None;
    }
    let after = b.get(j + 1).copied()?;
    let after2 = b.get(j + 2).copied()?;
    (after == b'.' && is_ident_start(after2)).then_some(j + 1 - i)
}

pub(super) fn lex(input: &str) -> Result<Vec<Token>, ExprError> {
    let b = input.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        // A two-character operator may have blanks between its characters: Intel writes
        // `> =`. Returns the index after the '=' when one follows.
        let eq_after = |from: usize| {
            let mut j = from;
            while b.get(j).is_some_and(u8::is_ascii_whitespace) {
                j += 1;
            }
            (b.get(j) == Some(&b'=')).then_some(j + 1)
        };
        let tok = match c {
            b'(' => Tok::LParen,
            b')' => Tok::RParen,
            b'[' => Tok::LBracket,
            b']' => Tok::RBracket,
            b',' => Tok::Comma,
            b'+' => Tok::Plus,
            b'-' => Tok::Minus,
            b'*' => Tok::Star,
            b'/' => Tok::Slash,
            b'<' | b'>' | b'=' | b'!' => {
                if let Some(next) = eq_after(i + 1) {
                    i = next;
                    out.push(Token {
                        tok: match c {
                            b'<' => Tok::Le,
                            b'>' => Tok::Ge,
                            b'=' => Tok::EqEq,
                            _ => Tok::Ne,
                        },
                        start,
                    });
                    continue;
                }
                match c {
                    b'<' => Tok::Lt,
                    b'>' => Tok::Gt,
                    b'!' => Tok::Bang,
                    _ => {
                        return Err(ExprError::new(
                            input,
                            start,
                            "'=' is not an operator here; compare with '=='",
                        ));
                    }
                }
            }
            b'&' => {
                if b.get(i + 1) == Some(&b'&') {
                    i += 1;
                }
                Tok::Amp
            }
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 1;
                }
                Tok::Pipe
            }
            b'0'..=b'9' | b'.' => {
                let (v, end) = lex_number(input, i)?;
                i = end;
                out.push(Token {
                    tok: Tok::Num(v),
                    start,
                });
                continue;
            }
            c if is_ident_start(c) => {
                let mut j = i + 1;
                loop {
                    if b.get(j).is_some_and(|&c| is_ident_char(c)) {
                        j += 1;
                    } else if let Some(n) = inner_index_len(b, j) {
                        j += n;
                    } else {
                        break;
                    }
                }
                // The name characters are ASCII, so these are char boundaries.
                let name = input[i..j].to_string();
                i = j;
                out.push(Token {
                    tok: Tok::Ident(name),
                    start,
                });
                continue;
            }
            _ => {
                let ch = input[i..].chars().next().unwrap_or('?');
                return Err(ExprError::new(
                    input,
                    start,
                    format!("unexpected character {ch:?}"),
                ));
            }
        };
        i += 1;
        out.push(Token { tok, start });
    }
    out.push(Token {
        tok: Tok::Eof,
        start: b.len(),
    });
    Ok(out)
}

/// A decimal literal with optional fraction and exponent, starting at `i`.
fn lex_number(input: &str, i: usize) -> Result<(f64, usize), ExprError> {
    let b = input.as_bytes();
    let digits = |mut j: usize| {
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        j
    };
    let mut j = digits(i);
    let int_digits = j - i;
    let mut frac_digits = 0;
    if b.get(j) == Some(&b'.') {
        let k = digits(j + 1);
        frac_digits = k - (j + 1);
        j = k;
    }
    if int_digits == 0 && frac_digits == 0 {
        return Err(ExprError::new(input, i, "a lone '.' is not a number"));
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(b.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let e = digits(k);
        if e == k {
            return Err(ExprError::new(
                input,
                i,
                format!("bad number {:?}: exponent without digits", &input[i..e]),
            ));
        }
        j = e;
    }
    if b.get(j).is_some_and(|&c| is_ident_char(c)) {
        let mut k = j;
        while b.get(k).is_some_and(|&c| is_ident_char(c)) {
            k += 1;
        }
        return Err(ExprError::new(
            input,
            i,
            format!("bad number {:?}", &input[i..k]),
        ));
    }
    let text = &input[i..j];
    let v: f64 = text
        .parse()
        .map_err(|_| ExprError::new(input, i, format!("bad number {text:?}")))?;
    Ok((v, j))
}

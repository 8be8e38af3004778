//! The tokenizer of a print fmt: strings, character literals, identifiers and numbers
//! (libtraceevent's "items"), operators and delimiters.

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    /// A `"..."` string, its backslash escapes kept (they are interpreted when printed).
    Str(String),
    /// A `'c'` character literal (its raw text between the quotes).
    Char(String),
    /// An identifier or number: a run of `[A-Za-z0-9_]`.
    Item(String),
    /// An operator or delimiter: `->`, `<<`, `(`, `,`, `{`, ...
    Op(&'static str),
}

/// The longest token list read from a print fmt.
const MAX_TOKENS: usize = 1 << 16;

const OPS: [&str; 32] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", ",", "{", "}", "[", "]", "?",
    ":", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "!", "~", ".", "=",
];

/// Splits `text` into tokens; `None` when it holds a byte no print fmt has.
pub(super) fn tokenize(text: &str) -> Option<Vec<Tok>> {
    let b = text.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    let ident = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    while let Some(&c) = b.get(i) {
        if toks.len() >= MAX_TOKENS {
            return None;
        }
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' || c == b'\'' {
            let start = i + 1;
            let mut j = start;
            while let Some(&x) = b.get(j).filter(|x| **x != c) {
                j += if x == b'\\' { 2 } else { 1 };
            }
            let body = text.get(start..j.min(b.len()))?.to_string();
            toks.push(if c == b'"' {
                Tok::Str(body)
            } else {
                Tok::Char(body)
            });
            i = j + 1;
        } else if ident(&c) {
            let start = i;
            while b.get(i).is_some_and(ident) {
                i += 1;
            }
            toks.push(Tok::Item(text.get(start..i)?.to_string()));
        } else {
            let rest = b.get(i..)?;
            let op = OPS.iter().find(|op| rest.starts_with(op.as_bytes()))?;
            toks.push(Tok::Op(op));
            i += op.len();
        }
    }
    Some(toks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let t = tokenize(r#""a\"b" 'c', REC->x<<2"#).unwrap();
        assert_eq!(
            t,
            [
                Tok::Str(r#"a\"b"#.into()),
                Tok::Char("c".into()),
                Tok::Op(","),
                Tok::Item("REC".into()),
                Tok::Op("->"),
                Tok::Item("x".into()),
                Tok::Op("<<"),
                Tok::Item("2".into()),
            ]
        );
        assert_eq!(tokenize("a @ b"), None);
    }
}

//! A tracepoint's `format` file: the layout of its raw record and how the kernel prints it.
//!
//! ```text
//! name: sched_switch
//! ID: 372
//! format:
//!         field:unsigned short common_type;       offset:0;       size:2; signed:0;
//!         ...
//!
//!         field:char prev_comm[16];       offset:8;       size:16;        signed:0;
//!         field:__data_loc char[] name;   offset:24;      size:4; signed:0;
//!
//! print fmt: "prev_comm=%s ...", REC->prev_comm, ...
//! ```
//!
//! Each field is a C declaration with its place in the record (`PERF_SAMPLE_RAW`'s bytes):
//! `type name`, `type name[N]` (a fixed array), or `__data_loc type[] name` /
//! `__rel_loc type[] name` (a 4-byte word holding the length in its upper 16 bits and the
//! offset in its lower 16: from the record's start, or for `__rel_loc` from the end of the
//! word). The fields before the blank line are the common ones (`common_type`, `common_pid`,
//! ...). A file that is not this shape is refused with its line, never half read.

/// The largest format file read (the kernel's are a few KB).
pub const MAX_FORMAT_LEN: usize = 1 << 20;
/// The most fields an event may have.
pub const MAX_FIELDS: usize = 4096;

/// One event's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// `name:`.
    pub name: String,
    /// `ID:`.
    pub id: u64,
    /// The common fields, then the event's own, in the file's order.
    pub fields: Vec<Field>,
    /// What follows `print fmt: `: the quoted format and its arguments.
    pub print_fmt: String,
}

/// A field of the raw record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name (`prev_comm`).
    pub name: String,
    /// Its type without the name and array bounds (`char`, `unsigned long`, `pid_t`; for a
    /// dynamic array the element type, `char`).
    pub type_: String,
    /// Byte offset in the record.
    pub offset: u32,
    /// Bytes (for a dynamic array, of its 4-byte location word).
    pub size: u32,
    /// `signed:1`.
    pub signed: bool,
    /// `Some(N)` for a fixed array `[N]`, `Some(0)` for a dynamic one.
    pub array: Option<u32>,
    /// How a dynamic array is found.
    pub dynamic: Option<DynamicLoc>,
    /// One of the common fields (before the blank line).
    pub common: bool,
}

/// Where a dynamic array's location word counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DynamicLoc {
    /// `__data_loc`: from the record's start.
    Data,
    /// `__rel_loc`: from the end of the location word.
    Rel,
}

impl Field {
    /// Whether the field holds text: an array of `char` (fixed or dynamic).
    pub fn is_string(&self) -> bool {
        self.array.is_some() && matches!(self.type_.as_str(), "char" | "const char")
    }

    /// The bytes of this field in `raw` (for a dynamic array, the array it points at);
    /// `None` when the record is too short for them.
    pub fn bytes<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        let at = self.offset as usize;
        let own = raw.get(at..at.checked_add(self.size as usize)?)?;
        let Some(kind) = self.dynamic else {
            return Some(own);
        };
        let word = u32::from_le_bytes(own.get(..4)?.try_into().ok()?);
        let (len, off) = ((word >> 16) as usize, (word & 0xffff) as usize);
        let start = match kind {
            DynamicLoc::Data => off,
            DynamicLoc::Rel => at + 4 + off,
        };
        raw.get(start..start.checked_add(len)?)
    }

    /// The field as a number (sign-extended when signed); `None` for an array or a size that
    /// is not 1, 2, 4 or 8, or a record too short.
    pub fn value(&self, raw: &[u8]) -> Option<u64> {
        if self.array.is_some() {
            return None;
        }
        number(self.bytes(raw)?, self.signed)
    }
}

/// A 1, 2, 4 or 8-byte little-endian number, sign-extended when `signed`.
pub fn number(b: &[u8], signed: bool) -> Option<u64> {
    Some(match (b.len(), signed) {
        (1, false) => u64::from(b[0]),
        (1, true) => b[0] as i8 as i64 as u64,
        (2, false) => u64::from(u16::from_le_bytes(b.try_into().ok()?)),
        (2, true) => i16::from_le_bytes(b.try_into().ok()?) as i64 as u64,
        (4, false) => u64::from(u32::from_le_bytes(b.try_into().ok()?)),
        (4, true) => i32::from_le_bytes(b.try_into().ok()?) as i64 as u64,
        (8, _) => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// A format file that is not a format file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad tracepoint format, line {line}: {what}")]
pub struct FormatError {
    /// 1-based.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

impl EventFormat {
    /// Reads a format file.
    pub fn parse(text: &str) -> Result<EventFormat, FormatError> {
        let bad = |line: usize, what: &str| FormatError {
            line,
            what: what.to_string(),
        };
        if text.len() > MAX_FORMAT_LEN {
            return Err(bad(0, "longer than 1 MiB"));
        }
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        let mut print_fmt: Option<String> = None;
        let mut common = true;
        let mut in_fields = false;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let t = line.trim();
            // The print format runs to the end of the file: a few of the kernel's have a
            // line break inside their text (ext4's fsmap events).
            if let Some(p) = &mut print_fmt {
                p.push('\n');
                p.push_str(line);
                continue;
            }
            if let Some(v) = line.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("ID:") {
                id = Some(v.trim().parse().map_err(|_| bad(n, "ID is not a number"))?);
            } else if line.starts_with("format:") {
                in_fields = true;
            } else if let Some(v) = line.strip_prefix("print fmt:") {
                print_fmt = Some(v.trim_start().to_string());
                in_fields = false;
            } else if t.is_empty() {
                // The blank line after the common fields.
                if in_fields && !fields.is_empty() {
                    common = false;
                }
            } else if in_fields && t.starts_with("field:") {
                if fields.len() >= MAX_FIELDS {
                    return Err(bad(n, "more than 4096 fields"));
                }
                let mut f = parse_field(t).map_err(|what| bad(n, &what))?;
                f.common = common;
                fields.push(f);
            } else {
                return Err(bad(n, &format!("unexpected {t:?}")));
            }
        }
        let print_fmt = print_fmt.ok_or_else(|| bad(1, "no print fmt: line"))?;
        Ok(EventFormat {
            name: name.ok_or_else(|| bad(1, "no name: line"))?,
            id: id.ok_or_else(|| bad(1, "no ID: line"))?,
            fields,
            print_fmt: print_fmt.trim_end().to_string(),
        })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// `field:DECL; offset:N; size:N; signed:N;`
fn parse_field(t: &str) -> Result<Field, String> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in t.split(';') {
        let part = part.trim();
        let Some((k, v)) = part.split_once(':') else {
            continue;
        };
        let num = || {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{k} is not a number"))
        };
        match k {
            "field" | "field special" => decl = Some(v.trim()),
            "offset" => offset = Some(num()?),
            "size" => size = Some(num()?),
            "signed" => signed = num()? != 0,
            _ => {}
        }
    }
    let decl = decl.ok_or("no field declaration")?;
    let offset = offset.ok_or("no offset")?;
    let size = size.ok_or("no size")?;
    let (dynamic, decl) = if let Some(rest) = decl.strip_prefix("__data_loc ") {
        (Some(DynamicLoc::Data), rest.trim())
    } else if let Some(rest) = decl.strip_prefix("__rel_loc ") {
        (Some(DynamicLoc::Rel), rest.trim())
    } else {
        (None, decl)
    };
    // The name is the last word; a fixed array's bounds follow it, a dynamic array's the type.
    let (head, array) = match decl.strip_suffix(']') {
        Some(d) => {
            let (h, n) = d.rsplit_once('[').ok_or("unbalanced [")?;
            let n = n.trim();
            let len = if n.is_empty() {
                0
            } else {
                // Bounds may be a number or a macro the kernel expanded; a non-number is
                // taken from the size.
                n.parse::<u32>().unwrap_or(0)
            };
            (h.trim(), Some(len))
        }
        None => (decl, None),
    };
    // The name: the trailing run of identifier characters (ASCII, one byte each).
    let name_len = head
        .bytes()
        .rev()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let name_start = head.len() - name_len;
    let (type_, name) = (head[..name_start].trim().to_string(), &head[name_start..]);
    // `__data_loc char[] name`: the element type carries the `[]`.
    let (type_, array) = match type_.strip_suffix("[]") {
        Some(t) => (t.trim().to_string(), Some(0)),
        None => (type_, array),
    };
    if name.is_empty() || type_.is_empty() {
        return Err(format!("no type and name in {decl:?}"));
    }
    if dynamic.is_some() && size != 4 {
        return Err(format!("dynamic field {name} of {size} bytes, not 4"));
    }
    Ok(Field {
        name: name.to_string(),
        type_,
        offset,
        size,
        signed,
        array,
        dynamic,
        common: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] filename;\toffset:28;\tsize:4;\tsigned:0;
\tfield:const char * name;\toffset:32;\tsize:8;\tsigned:0;
\tfield:__rel_loc u8[] buf;\toffset:40;\tsize:4;\tsigned:0;

print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid
";

    #[test]
    fn fields_keep_their_layout() {
        let f = EventFormat::parse(SWITCH).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
        assert_eq!(
            f.print_fmt,
            "\"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid"
        );
        let names: Vec<(&str, &str, bool)> = f
            .fields
            .iter()
            .map(|x| (x.name.as_str(), x.type_.as_str(), x.common))
            .collect();
        assert_eq!(
            names,
            [
                ("common_type", "unsigned short", true),
                ("common_flags", "unsigned char", true),
                ("common_preempt_count", "unsigned char", true),
                ("common_pid", "int", true),
                ("prev_comm", "char", false),
                ("prev_pid", "pid_t", false),
                ("filename", "char", false),
                ("name", "const char *", false),
                ("buf", "u8", false),
            ]
        );
        let comm = f.field("prev_comm").unwrap();
        assert_eq!((comm.offset, comm.size, comm.array), (8, 16, Some(16)));
        assert!(comm.is_string());
        let file = f.field("filename").unwrap();
        assert_eq!(
            (file.array, file.dynamic),
            (Some(0), Some(DynamicLoc::Data))
        );
        assert!(file.is_string());
        assert_eq!(f.field("buf").unwrap().dynamic, Some(DynamicLoc::Rel));
        assert!(f.field("prev_pid").unwrap().signed);
    }

    #[test]
    fn values_and_dynamic_arrays_come_from_the_record() {
        let f = EventFormat::parse(SWITCH).unwrap();
        let mut raw = vec![0u8; 44];
        raw[24..28].copy_from_slice(&(-2i32).to_le_bytes());
        // filename: 3 bytes at 44; buf: 2 bytes 1 after its word's end (44 + 1).
        raw[28..32].copy_from_slice(&((3u32 << 16) | 44).to_le_bytes());
        raw[40..44].copy_from_slice(&((2u32 << 16) | 1).to_le_bytes());
        raw.extend_from_slice(b"ab\0");
        assert_eq!(f.field("prev_pid").unwrap().value(&raw), Some(-2i64 as u64));
        assert_eq!(f.field("filename").unwrap().bytes(&raw), Some(&b"ab\0"[..]));
        assert_eq!(f.field("buf").unwrap().bytes(&raw), Some(&b"b\0"[..]));
        // Out of the record: nothing, never a panic.
        assert_eq!(f.field("prev_pid").unwrap().value(&raw[..20]), None);
        raw[28..32].copy_from_slice(&((300u32 << 16) | 44).to_le_bytes());
        assert_eq!(f.field("filename").unwrap().bytes(&raw), None);
    }

    /// ext4's fsmap events have a line break inside their print format's text.
    #[test]
    fn a_print_format_runs_to_the_end_of_the_file() {
        let f = EventFormat::parse(
            "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"a=%d\n b\", REC->a\n",
        )
        .unwrap();
        assert_eq!(f.print_fmt, "\"a=%d\n b\", REC->a");
    }

    #[test]
    fn a_bad_file_names_its_line() {
        let e = EventFormat::parse("name: x\nID: y\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad tracepoint format, line 2: ID is not a number"
        );
        let e = EventFormat::parse("name: x\nID: 1\nformat:\n\tfield:int;\toffset:0;\tsize:4;\n")
            .unwrap_err();
        assert_eq!(e.line, 4);
        let e = EventFormat::parse("name: x\nID: 1\nformat:\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad tracepoint format, line 1: no print fmt: line"
        );
    }
}

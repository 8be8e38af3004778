//! The kernel interface: `perf_event_open`, the ioctls hrec needs, and the mmap ring buffer.
//!
//! This is the only module with `unsafe`. It knows nothing about what events mean: it turns an
//! [`Attr`] into the C struct, opens it, and moves raw record bytes out of the ring buffer.
//!
//! Ring-buffer protocol (perf-abi.md 6.3): the kernel writes records into the data area and then
//! publishes `data_head`; the reader loads `data_head` once per batch with acquire ordering,
//! copies every complete record between its tail and that head (a record that wraps past the
//! end of the area is reassembled), then stores the new `data_tail` once with release ordering,
//! which hands the space back to the kernel. Record sizes come from the kernel but are checked,
//! not trusted: a size below the 8-byte header, not 8-byte aligned, or running past the head
//! is reported as corruption and the rest of the batch is dropped instead of misparsed.
//!
//! Small helpers for the vdso, which is no file on disk: [`own_vdso`] reads this process's
//! image (the kernel maps the same one into every process), [`image_build_id`] names an image,
//! [`memfd_with`] puts an image into an in-memory file so path-based readers (the symbolizer)
//! can open it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{MmapOptions, MmapRaw};
use perf_event_open_sys as sys;
use sys::bindings::{__BindgenBitfieldUnit, perf_event_attr, perf_event_mmap_page};

use crate::event::Attr;

pub mod process;

/// `PERF_FLAG_FD_CLOEXEC`: perf always passes it.
const FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `PERF_IOC_FLAG_GROUP`.
const IOC_FLAG_GROUP: libc::c_uint = 1;

/// A failed `perf_event_open`, with the errno so callers can pick a fallback.
#[derive(Debug, thiserror::Error)]
#[error("perf_event_open failed: {source}")]
pub struct OpenError {
    /// The OS error.
    #[source]
    pub source: io::Error,
}

impl OpenError {
    /// The raw errno (`EINVAL`, `ENOENT`, `EACCES`, `EMFILE`, ...).
    pub fn errno(&self) -> i32 {
        self.source.raw_os_error().unwrap_or(0)
    }
}

/// Converts hrec's plain attr into the kernel struct.
pub fn to_sys(a: &Attr) -> perf_event_attr {
    let mut s = perf_event_attr::default();
    s.type_ = a.type_;
    s.size = a.size;
    s.config = a.config;
    s.sample_type = a.sample_type;
    s.read_format = a.read_format;
    s.branch_sample_type = a.branch_sample_type;
    s.sample_regs_user = a.sample_regs_user;
    s.sample_stack_user = a.sample_stack_user;
    s.clockid = a.clockid;
    s.sample_regs_intr = a.sample_regs_intr;
    s.aux_watermark = a.aux_watermark;
    s.sample_max_stack = a.sample_max_stack;
    s.aux_sample_size = a.aux_sample_size;
    s.sig_data = a.sig_data;
    s.config3 = a.config3;
    s.__bindgen_anon_1.sample_period = a.sample_period_or_freq;
    // The flag bit-field is one little-endian u64 at offset 40 on the architectures hrec supports.
    s._bitfield_1 = __BindgenBitfieldUnit::new(a.flags.to_le_bytes());
    s.__bindgen_anon_2.wakeup_events = a.wakeup;
    s.bp_type = a.bp_type;
    s.__bindgen_anon_3.config1 = a.config1;
    s.__bindgen_anon_4.config2 = a.config2;
    s
}

/// An open perf event.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Opens one event: `pid` (0 = self, -1 = any with a CPU), `cpu` (-1 = any), optional leader.
pub fn open(
    attr: &Attr,
    pid: i32,
    cpu: i32,
    group: Option<&EventFd>,
) -> Result<EventFd, OpenError> {
    let mut raw = to_sys(attr);
    let group_fd = group.map_or(-1, |g| g.as_raw_fd());
    // SAFETY: `raw` is a fully initialised perf_event_attr whose `size` field matches what we
    // hand the kernel (at most sizeof(perf_event_attr), tail zeroed); the kernel only reads it
    // (or writes back `size` on E2BIG, which stays within the struct).
    let fd = unsafe { sys::perf_event_open(&mut raw, pid, cpu, group_fd, FLAG_FD_CLOEXEC) };
    if fd < 0 {
        return Err(OpenError {
            source: io::Error::last_os_error(),
        });
    }
    // SAFETY: the syscall returned a new, valid file descriptor that nothing else owns.
    Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl EventFd {
    /// `PERF_EVENT_IOC_ID`: the id that `ID`/`IDENTIFIER` and group reads carry.
    pub fn id(&self) -> io::Result<u64> {
        let mut id = 0u64;
        // SAFETY: the fd is a perf event and `id` is a valid, writable u64 for the call.
        check(unsafe { sys::ioctls::ID(self.as_raw_fd(), &mut id) })?;
        Ok(id)
    }

    /// `PERF_EVENT_IOC_ENABLE`, for the whole group when `group` is set.
    pub fn enable(&self, group: bool) -> io::Result<()> {
        // SAFETY: the fd is a perf event; the argument is a plain flag.
        check(unsafe {
            sys::ioctls::ENABLE(self.as_raw_fd(), if group { IOC_FLAG_GROUP } else { 0 })
        })
    }

    /// `PERF_EVENT_IOC_DISABLE`, for the whole group when `group` is set.
    pub fn disable(&self, group: bool) -> io::Result<()> {
        // SAFETY: the fd is a perf event; the argument is a plain flag.
        check(unsafe {
            sys::ioctls::DISABLE(self.as_raw_fd(), if group { IOC_FLAG_GROUP } else { 0 })
        })
    }

    /// `PERF_EVENT_IOC_SET_OUTPUT`: send this event's records into `target`'s ring buffer
    /// (same CPU, or both per-thread on the same task).
    pub fn set_output(&self, target: &EventFd) -> io::Result<()> {
        // SAFETY: both fds are perf events owned by this process.
        check(unsafe { sys::ioctls::SET_OUTPUT(self.as_raw_fd(), target.as_raw_fd()) })
    }

    /// `PERF_EVENT_IOC_SET_FILTER`: a tracepoint's tracefs filter (`EINVAL` when the kernel
    /// cannot parse it or names no such field).
    pub fn set_filter(&self, filter: &str) -> io::Result<()> {
        let c = std::ffi::CString::new(filter)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the filter"))?;
        // SAFETY: `c` is a NUL-terminated string that outlives the call; the kernel copies it
        // and does not write through the pointer.
        check(unsafe { sys::ioctls::SET_FILTER(self.as_raw_fd(), c.as_ptr() as *mut _) })
    }

    /// `read()` of the event (layout per its `read_format`).
    pub fn read_raw(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
        let n = unsafe { libc::read(self.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// Why a batch was cut short.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "corrupt record in ring buffer at offset {offset}: size {size} (head {head}); dropped {dropped} bytes"
)]
pub struct Corrupt {
    /// Stream offset of the bad header.
    pub offset: u64,
    /// The size it claimed.
    pub size: u16,
    /// The head of this batch.
    pub head: u64,
    /// Bytes skipped to resynchronise at the head.
    pub dropped: u64,
}

/// Copies the complete records in `[tail, head)` of a ring whose data area is `ring` into `out`.
///
/// `tail` and `head` are free-running byte counts; positions in `ring` are taken modulo its
/// length (a power of two). Returns the number of records copied, or [`Corrupt`] after copying
/// the good records before the bad one. Pure, so it is tested on crafted bytes.
pub fn copy_records(
    ring: &[u8],
    tail: u64,
    head: u64,
    out: &mut Vec<u8>,
) -> Result<usize, Corrupt> {
    // Copy straight out of the ring: no zero-fill, at most two slices for a wrapped record.
    walk_records(ring, tail, head, |a, b| {
        out.extend_from_slice(a);
        out.extend_from_slice(b);
    })
}

/// Counts the whole records in `ring` from stream offset `tail` to `head` without copying
/// them ([`copy_records`]'s walk).
pub fn count_records(ring: &[u8], tail: u64, head: u64) -> Result<usize, Corrupt> {
    walk_records(ring, tail, head, |_, _| {})
}

/// The walk of [`copy_records`]: each whole record from `tail` to `head`, handed to `f` as the
/// one or two slices of the ring that hold it; the number of records, or [`Corrupt`] at the
/// first bad size (after handing over the good records before it).
fn walk_records(
    ring: &[u8],
    tail: u64,
    head: u64,
    mut f: impl FnMut(&[u8], &[u8]),
) -> Result<usize, Corrupt> {
    let len = ring.len() as u64;
    // The one or two slices of the ring that hold `n` bytes from stream offset `at`.
    let parts = |at: u64, n: usize| {
        let start = (at % len) as usize;
        let first = n.min(ring.len() - start);
        (&ring[start..start + first], &ring[..n - first])
    };
    if len < 8 || !len.is_multiple_of(8) || !tail.is_multiple_of(8) {
        return Err(Corrupt {
            offset: tail,
            size: 0,
            head,
            dropped: head.saturating_sub(tail),
        });
    }
    let mut pos = tail;
    let mut count = 0;
    while pos < head {
        let corrupt = |size| Corrupt {
            offset: pos,
            size,
            head,
            dropped: head - pos,
        };
        if head - pos < 8 {
            return Err(corrupt(0));
        }
        // Records are 8-byte aligned and the ring is a power of two >= 8 bytes, so a header
        // never straddles the end.
        let at = (pos % len) as usize;
        let size = u16::from_le_bytes([ring[at + 6], ring[at + 7]]);
        if size < 8
            || !size.is_multiple_of(8)
            || u64::from(size) > head - pos
            || u64::from(size) > len
        {
            return Err(corrupt(size));
        }
        let (a, b) = parts(pos, usize::from(size));
        f(a, b);
        pos += u64::from(size);
        count += 1;
    }
    Ok(count)
}

/// One mmap'ed perf ring buffer (control page + `2^n` data pages).
#[derive(Debug)]
pub struct RingBuffer {
    map: MmapRaw,
    data_offset: usize,
    data_size: usize,
    tail: u64,
}

/// Result of one drain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Drained {
    /// Records copied.
    pub records: usize,
    /// Bytes copied.
    pub bytes: usize,
}

impl RingBuffer {
    /// Maps `data_pages` (a power of two) data pages for `fd`.
    pub fn new(fd: &EventFd, data_pages: usize) -> io::Result<Self> {
        if data_pages == 0 || !data_pages.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "data pages must be a power of two",
            ));
        }
        let page = page_size();
        let len = (data_pages + 1) * page;
        let map = MmapOptions::new().len(len).map_raw(fd.as_raw_fd())?;
        let ctl = map.as_ptr().cast::<perf_event_mmap_page>();
        // SAFETY: the mapping is at least one page long and starts with the kernel's
        // perf_event_mmap_page; these two fields are written once by the kernel at mmap time.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(&(*ctl).data_offset),
                std::ptr::read_volatile(&(*ctl).data_size),
            )
        };
        // Kernels before 4.1 leave them 0: data then starts right after the control page.
        let (data_offset, data_size) = if size == 0 {
            (page, data_pages * page)
        } else {
            (off as usize, size as usize)
        };
        if data_offset + data_size > len || !data_size.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "ring buffer layout off={data_offset} size={data_size} does not fit the {len}-byte mapping"
                ),
            ));
        }
        // SAFETY: as above; data_tail is ours to read, and nothing else writes it.
        let tail = unsafe { std::ptr::read_volatile(&(*ctl).data_tail) };
        Ok(RingBuffer {
            map,
            data_offset,
            data_size,
            tail,
        })
    }

    fn head_atomic(&self) -> &AtomicU64 {
        let off = std::mem::offset_of!(perf_event_mmap_page, data_head);
        // SAFETY: data_head is an 8-byte aligned u64 inside the live mapping that the kernel
        // updates concurrently; AtomicU64 has the same layout, so viewing it atomically is sound.
        unsafe { &*self.map.as_ptr().add(off).cast::<AtomicU64>() }
    }

    fn tail_atomic(&self) -> &AtomicU64 {
        let off = std::mem::offset_of!(perf_event_mmap_page, data_tail);
        // SAFETY: as for data_head; the kernel reads data_tail concurrently.
        unsafe { &*self.map.as_ptr().add(off).cast::<AtomicU64>() }
    }

    /// The size of the data area in bytes (the pages after the control page).
    pub fn capacity(&self) -> usize {
        self.data_size
    }

    /// Bytes published by the kernel and not yet drained.
    pub fn pending(&self) -> u64 {
        self.head_atomic()
            .load(Ordering::Acquire)
            .wrapping_sub(self.tail)
    }

    /// The data pages. Read only between our tail and a head loaded with acquire ordering
    /// (after the kernel's writes of those bytes), before the tail moves past them.
    fn data(&self) -> &[u8] {
        // SAFETY: [data_offset, data_offset + data_size) lies inside the mapping (checked in
        // `new`). The kernel does not write the bytes between our tail and the head it
        // published until we move the tail, which the callers do only after reading.
        unsafe {
            std::slice::from_raw_parts(self.map.as_ptr().add(self.data_offset), self.data_size)
        }
    }

    /// Appends every complete record published so far to `out` and hands the space back.
    ///
    /// One acquire load of `data_head`, one release store of `data_tail` per call.
    pub fn drain(&mut self, out: &mut Vec<u8>) -> Result<Drained, Corrupt> {
        let head = self.head_atomic().load(Ordering::Acquire);
        if head == self.tail {
            return Ok(Drained::default());
        }
        let before = out.len();
        let result = copy_records(self.data(), self.tail, head, out);
        // Even on corruption the tail moves to the head: the bytes are unusable, and keeping
        // them would stall the buffer forever.
        self.tail = head;
        self.tail_atomic().store(head, Ordering::Release);
        let records = result?;
        Ok(Drained {
            records,
            bytes: out.len() - before,
        })
    }

    /// Hands every record published so far back to the kernel unread; returns how many
    /// there were (and their bytes).
    pub fn discard(&mut self) -> Result<Drained, Corrupt> {
        let head = self.head_atomic().load(Ordering::Acquire);
        if head == self.tail {
            return Ok(Drained::default());
        }
        let result = count_records(self.data(), self.tail, head);
        let bytes = (head - self.tail) as usize;
        self.tail = head;
        self.tail_atomic().store(head, Ordering::Release);
        Ok(Drained {
            records: result?,
            bytes,
        })
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as usize } else { 4096 }
}

/// The calling thread's id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// The height of the terminal on stdout, if stdout is one.
pub fn terminal_rows() -> Option<u16> {
    // SAFETY: a zeroed `winsize` is valid; TIOCGWINSZ writes only into it, and fails (checked)
    // when fd 1 is not a terminal.
    let ws = unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) != 0 {
            return None;
        }
        ws
    };
    (ws.ws_row > 0).then_some(ws.ws_row)
}

/// The local calendar time of `unix_secs` by the C library's time-zone rules (`TZ`,
/// `/etc/localtime`), as `[year, month 1-12, day, hour, minute, second]`; `None` if the C
/// library cannot convert it.
pub fn local_time(unix_secs: i64) -> Option<[i32; 6]> {
    let t: libc::time_t = unix_secs;
    // SAFETY: a zeroed `tm` is a valid out-parameter; localtime_r is the thread-safe form and
    // writes only into it; both pointers are valid for the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return None;
        }
        tm
    };
    Some([
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
    ])
}

/// This process's vdso image (the kernel maps the same image into every process of an
/// architecture), read from `/proc/self/mem` at the `[vdso]` mapping; `None` when the maps do
/// not show one or it cannot be read.
pub fn own_vdso(procfs: &std::path::Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt as _;
    let maps = std::fs::read_to_string(procfs.join("self/maps")).ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (a, b) = line.split_whitespace().next()?.split_once('-')?;
    let (a, b) = (
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(b, 16).ok()?,
    );
    let len = usize::try_from(b.checked_sub(a)?).ok()?;
    // A vdso is a few pages; anything larger is not one.
    if len == 0 || len > (1 << 20) {
        return None;
    }
    let mut image = vec![0u8; len];
    std::fs::File::open(procfs.join("self/mem"))
        .and_then(|f| f.read_exact_at(&mut image, a))
        .ok()?;
    image.starts_with(b"\x7fELF").then_some(image)
}

/// The GNU build-id of an ELF image in memory (a vdso), as lowercase hex.
pub fn image_build_id(image: &[u8]) -> Option<String> {
    use object::Object as _;
    let obj = object::File::parse(image).ok()?;
    let id = obj.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// An anonymous in-memory file (`memfd_create`) holding `bytes`, for code that reads files by
/// path (`/proc/self/fd/N`): the vdso image for the symbolizer.
pub fn memfd_with(name: &str, bytes: &[u8]) -> io::Result<std::fs::File> {
    use std::io::Write as _;
    let cname = std::ffi::CString::new(name).map_err(io::Error::other)?;
    // SAFETY: `cname` is a valid NUL-terminated string that outlives the call; the flags are
    // valid; the returned descriptor is checked before it is owned.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor this process owns and nothing else refers to.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(bytes)?;
    Ok(file)
}

/// A writer to descriptor `fd`, which the caller opened (`--log-fd`): a duplicate of it, so
/// that hrec closes only its own copy; an error when `fd` is not open.
pub fn writer_of_fd(fd: RawFd) -> io::Result<std::fs::File> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: fcntl with F_DUPFD_CLOEXEC reads no memory; on a descriptor that is not open it
    // fails with EBADF, which is checked.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `dup` is a fresh descriptor this process owns and nothing else refers to.
    Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(dup) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_sys_matches_the_attr_byte_layout() {
        let mut a = Attr::new(8, 0x0000_0008_0000_0400);
        a.sample_period_or_freq = 4000;
        a.sample_type = 0x0100_01ff;
        a.read_format = 0x1c;
        a.flags = 0x0000_0000_0184_1563;
        a.wakeup = 5;
        a.config1 = 1;
        a.config2 = 2;
        a.clockid = -1;
        a.sample_max_stack = 127;
        a.config3 = 3;
        let s = to_sys(&a);
        let mut raw = [0u8; crate::event::attr::ATTR_SIZE_VER8 as usize];
        assert_eq!(std::mem::size_of::<perf_event_attr>(), raw.len());
        // SAFETY: `perf_event_attr` is a plain-old-data `repr(C)` struct of exactly
        // `raw.len()` bytes (asserted above); copying its bytes out reads initialised memory.
        unsafe {
            std::ptr::copy_nonoverlapping((&raw const s).cast::<u8>(), raw.as_mut_ptr(), raw.len());
        }
        assert_eq!(raw, a.to_bytes());
    }

    fn rec(ty: u32, size: u16, fill: u8) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ty.to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
        v.resize(usize::from(size), fill);
        v
    }

    /// Writes `bytes` into a ring at stream offset `at`, wrapping.
    fn put(ring: &mut [u8], at: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let n = ring.len() as u64;
            ring[((at + i as u64) % n) as usize] = *b;
        }
    }

    #[test]
    fn copies_and_reassembles_wrapped_records() {
        let mut ring = vec![0u8; 64];
        let a = rec(9, 24, 0xaa);
        let b = rec(9, 32, 0xbb); // starts at 56: wraps after 8 bytes
        put(&mut ring, 32, &a);
        put(&mut ring, 56, &b);
        let mut out = Vec::new();
        assert_eq!(copy_records(&ring, 32, 88, &mut out), Ok(2));
        assert_eq!(&out[..24], &a[..]);
        assert_eq!(&out[24..], &b[..]);
        // Counting walks the same records without copying.
        assert_eq!(count_records(&ring, 32, 88), Ok(2));
    }

    #[test]
    fn detects_corrupt_sizes() {
        for bad in [0u16, 4, 12, 200] {
            let mut ring = vec![0u8; 64];
            put(&mut ring, 0, &rec(9, 16, 1));
            let mut r = rec(9, 16, 2);
            r[6..8].copy_from_slice(&bad.to_le_bytes());
            put(&mut ring, 16, &r);
            let mut out = Vec::new();
            let e = copy_records(&ring, 0, 48, &mut out).unwrap_err();
            assert_eq!((e.offset, e.size, e.dropped), (16, bad, 32), "size {bad}");
            assert_eq!(out.len(), 16, "the good record before it is kept");
            assert_eq!(count_records(&ring, 0, 48).unwrap_err(), e);
        }
        // A head that ends inside a header, a misaligned tail, a ring too small for a header.
        let ring = vec![0u8; 64];
        assert!(copy_records(&ring, 0, 4, &mut Vec::new()).is_err());
        assert!(copy_records(&ring, 4, 20, &mut Vec::new()).is_err());
        assert!(copy_records(&[0u8; 4], 0, 8, &mut Vec::new()).is_err());
        for (r, t, h) in [(&ring[..], 0, 4), (&ring[..], 4, 20), (&[0u8; 4][..], 0, 8)] {
            assert!(count_records(r, t, h).is_err());
        }
    }

    #[test]
    fn local_time_agrees_with_date() {
        for t in [0i64, 1_764_079_750, 951_782_400] {
            let out = std::process::Command::new("date")
                .args([&format!("-d@{t}"), "+%Y %m %d %H %M %S"])
                .output()
                .expect("date runs");
            let want: Vec<i32> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(|w| w.parse().expect("a number"))
                .collect();
            assert_eq!(local_time(t).map(|a| a.to_vec()), Some(want), "t = {t}");
        }
    }
}

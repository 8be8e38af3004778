//! hrec's cache directory (`$XDG_CACHE_HOME/hrec`, else `~/.cache/hrec`) and the one way files
//! get into it: written whole under a temporary name, then renamed into place, so a reader (or
//! another hrec at the same time) sees the old file or the new one, never half of one. A
//! cache is best effort: a file that cannot be written is not an error, the work is done
//! again next time. Two things are saved there this way: this machine's `/proc/kallsyms`, for
//! reading perf.data (`recording::perfdata`), and compressed DWARF sections kept inflated
//! (`symbol::inflated`).

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// hrec's cache directory: `$XDG_CACHE_HOME/hrec`, else `~/.cache/hrec`; `None` without
/// either variable.
pub fn dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("hrec"))
}

/// Saves `parts`, one after the other, as the file `path` with `mode` (its directory made when
/// missing). Whether it was saved.
pub fn save(path: &Path, mode: u32, parts: &[&[u8]]) -> bool {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let saved = std::fs::create_dir_all(dir).is_ok()
        && std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)
            .and_then(|mut f| parts.iter().try_for_each(|p| f.write_all(p)))
            .is_ok();
    if saved && std::fs::rename(&tmp, path).is_ok() {
        return true;
    }
    let _ = std::fs::remove_file(&tmp);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file saved is there whole, replaces the one before, and leaves no temporary file; a
    /// path that cannot be written (its directory is a file) is not saved, without a panic.
    #[test]
    fn saved_whole_or_not_at_all() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("sub/file");
        assert!(save(&path, 0o600, &[b"ab", b"cd"]));
        assert_eq!(std::fs::read(&path).unwrap(), b"abcd");
        assert!(save(&path, 0o600, &[b"new"]));
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(d.path().join("sub")).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
        assert!(!save(&path.join("below-a-file"), 0o600, &[b"x"]));
    }
}

//! `hrec archive`: packs the binaries (and debug files) a recording needs, by build-id, into a
//! tar file in perf's build-id cache layout (`hrec::archive`), as `perf archive` does, so the
//! recording reports the same on another machine.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use hrec::archive::{self, Compression};
use hrec::symbol::buildid_cache::{self, hex};
use hrec::symbol::debuginfo::SearchPaths;

use super::args::input_file;
use super::reading::{open_recording_with, read_warnings};
use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec archive
          Pack the binaries hrec.data needs into hrec.data.tar.zst.
  hrec archive -i perf.data -o bins.tar.gz
          A gzip archive of what perf.data needs.
  hrec archive --debug-dir ./dbg
          Take debug files from ./dbg too.";

/// `hrec archive` flags.
#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// Input file [default: hrec.data, else perf.data when only that is here].
    #[arg(short = 'i', long = "input", conflicts_with = "file")]
    pub input: Option<PathBuf>,
    /// The input file, as perf archive takes it.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The archive [default: INPUT.tar.zst]; a name ending in .tar.gz or .tgz is gzip, .tar
    /// uncompressed, any other zstd.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// perf's build-id cache to take copies of binaries from (default $HREC_BUILDID_DIR, else
    /// $PERF_BUILDID_DIR, else perf's buildid.dir, else ~/.debug).
    #[arg(long = "buildid-dir", value_name = "DIR")]
    pub buildid_dir: Option<PathBuf>,
    /// Extra debug-file directory (default /usr/lib/debug); repeatable.
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dir: Vec<PathBuf>,
}

impl ArchiveArgs {
    /// What to do, with the defaults filled in and the archive's name checked.
    fn into_config(self) -> Result<ArchiveConfig, Error> {
        let input = input_file(self.input.or(self.file));
        let output = self.output.unwrap_or_else(|| {
            let mut name = input.clone().into_os_string();
            name.push(".tar.zst");
            PathBuf::from(name)
        });
        let compression = Compression::of(&output).ok_or_else(|| {
            Error::Usage(format!(
                "archive: {}: hrec writes .tar.zst, .tar.gz or .tar archives (no bzip2 or xz)",
                output.display()
            ))
        })?;
        if same_file(&input, &output) {
            return Err(Error::Usage(format!(
                "archive: -o {} is the recording itself; name another file",
                output.display()
            )));
        }
        let mut search = SearchPaths::default();
        search.debug_dirs.splice(0..0, self.debug_dir);
        if let Some(dir) = self.buildid_dir.as_deref() {
            search.build_id_cache = buildid_cache::resolve_dir(Some(dir));
        }
        Ok(ArchiveConfig {
            input,
            output,
            compression,
            search,
        })
    }
}

/// Whether `a` and `b` are one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// `hrec archive`.
#[derive(Debug)]
struct ArchiveConfig {
    input: PathBuf,
    output: PathBuf,
    compression: Compression,
    search: SearchPaths,
}

/// Runs `hrec archive`: finds each needed file, packs those found, prints how to unpack the
/// archive. A file not found is one warning line; nothing found (or nothing needed) is exit
/// status 1 without an archive, as perf's "no build-ids found".
pub fn exec(
    args: ArchiveArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let c = args.into_config()?;
    let rec = open_recording_with(env, &c.input, false, err)?;
    let needed = archive::needed(&rec);
    read_warnings(&rec, err)?;
    if needed.is_empty() {
        writeln!(
            err,
            "hrec: {}: no mapped file with a build-id, nothing to archive",
            c.input.display()
        )?;
        return Ok(1);
    }
    let mut located = Vec::new();
    let mut vdso_missing = false;
    for (path, id) in &needed {
        match archive::locate(path, id, &c.search) {
            Some(l) => {
                if env.verbose > 0 {
                    writeln!(err, "packing {} {}", hex(id), l.files.binary.display())?;
                    for debug in l.files.debug.iter().chain(l.files.alt.iter().map(|a| &a.0)) {
                        writeln!(err, "packing {} {}", hex(id), debug.display())?;
                    }
                }
                located.push(l);
            }
            // The vdso is in the cache only when samples fell in it (record saves it then):
            // without it nothing is missing.
            None if path == Path::new(buildid_cache::VDSO) => vdso_missing = true,
            None => writeln!(
                err,
                "hrec: warning: {} (build-id {}): not found on this machine or in the build-id cache, left out",
                path.display(),
                hex(id)
            )?,
        }
    }
    if located.is_empty() {
        writeln!(
            err,
            "hrec: {}: none of the {} files it needs is here, nothing to archive",
            c.input.display(),
            needed.len() - usize::from(vdso_missing)
        )?;
        return Ok(1);
    }
    let packed = archive::write(&c.output, c.compression, &located)?;
    hint(out, &c.output, &packed)?;
    Ok(0)
}

/// What was packed, then perf's hint on unpacking the archive and hrec's for any directory.
fn hint(out: &mut dyn Write, archive: &Path, p: &archive::Packed) -> std::io::Result<()> {
    let debug = match p.debug_files {
        0 => String::new(),
        1 => " and 1 debug file".to_string(),
        n => format!(" and {n} debug files"),
    };
    let binaries = if p.binaries == 1 {
        "binary"
    } else {
        "binaries"
    };
    writeln!(
        out,
        "{} {binaries}{debug} ({:.1} MiB) archived in {}",
        p.binaries,
        p.bytes as f64 / (1u64 << 20) as f64,
        archive.display()
    )?;
    let shown = shell_word(&archive.to_string_lossy());
    writeln!(out, "Now please run:\n")?;
    writeln!(out, "$ mkdir -p ~/.debug; tar xf {shown} -C ~/.debug\n")?;
    writeln!(
        out,
        "wherever you need to run 'hrec report' or 'perf report' on; or unpack it into any directory DIR and run 'hrec report --buildid-dir DIR'."
    )
}

/// `s` quoted for a POSIX shell when it needs quoting.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_quotes_odd_names() {
        assert_eq!(shell_word("/tmp/a.tar.zst"), "/tmp/a.tar.zst");
        assert_eq!(shell_word("my file's.tar"), r"'my file'\''s.tar'");
    }
}

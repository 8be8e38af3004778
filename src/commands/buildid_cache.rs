//! `hrec buildid-cache`: adds binaries to perf's build-id cache, lists, removes and purges
//! them, in perf's layout (`hrec::symbol::buildid_cache`), so perf reads what hrec adds and
//! hrec's reports read what perf adds.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use hrec::symbol::buildid_cache::{self, Cache};

use super::{Env, Error};

/// The `Examples:` ending --help and the man page (the layout `generate` reads).
pub const EXAMPLES: &str = "Examples:
  hrec buildid-cache -a ./prog
          Keep a copy of ./prog under its build-id in ~/.debug.
  hrec buildid-cache -l
          The cached files still at their path with the same build-id.
  hrec buildid-cache -p /usr/local/bin/prog
          Remove every cached build of that path.";

/// `hrec buildid-cache` flags.
#[derive(Debug, Args)]
pub struct BuildidCacheArgs {
    /// Copy these ELF files into the cache under their build-ids (repeatable, or
    /// comma-separated as perf takes them).
    #[arg(short = 'a', long = "add", value_name = "FILE", value_delimiter = ',')]
    pub add: Vec<PathBuf>,
    /// Print the cached files as `<build-id> <path>`, as perf buildid-cache --list: only
    /// those still at their path with the same build-id (perf's rule).
    #[arg(short = 'l', long = "list")]
    pub list: bool,
    /// With --list: every cached file, also those deleted or rebuilt since (hrec's).
    #[arg(long = "all", requires = "list")]
    pub all: bool,
    /// Remove the cache entry with the build-id of these files.
    #[arg(
        short = 'r',
        long = "remove",
        value_name = "FILE",
        value_delimiter = ','
    )]
    pub remove: Vec<PathBuf>,
    /// Remove every cached build-id of these paths (the files need not exist).
    #[arg(
        short = 'p',
        long = "purge",
        value_name = "FILE",
        value_delimiter = ','
    )]
    pub purge: Vec<PathBuf>,
    /// The cache directory (default $HREC_BUILDID_DIR, else $PERF_BUILDID_DIR, else perf's
    /// buildid.dir in ~/.perfconfig, else ~/.debug).
    #[arg(long = "buildid-dir", value_name = "DIR")]
    pub buildid_dir: Option<PathBuf>,
}

impl BuildidCacheArgs {
    /// What to do, with the cache directory resolved.
    fn into_config(self) -> Result<BuildidCacheConfig, Error> {
        if self.add.is_empty() && self.remove.is_empty() && self.purge.is_empty() && !self.list {
            return Err(Error::Usage(
                "buildid-cache: give --add, --list, --remove or --purge".into(),
            ));
        }
        let dir = buildid_cache::resolve_dir(self.buildid_dir.as_deref()).ok_or_else(|| {
            Error::Usage("buildid-cache: no cache directory (set HOME or --buildid-dir)".into())
        })?;
        Ok(BuildidCacheConfig {
            cache: Cache::new(dir),
            add: self.add,
            list: self.list,
            all: self.all,
            remove: self.remove,
            purge: self.purge,
        })
    }
}

/// `hrec buildid-cache`.
#[derive(Debug)]
struct BuildidCacheConfig {
    cache: Cache,
    add: Vec<PathBuf>,
    list: bool,
    all: bool,
    remove: Vec<PathBuf>,
    purge: Vec<PathBuf>,
}

/// Runs `hrec buildid-cache`: adds, then removes, then purges, then lists; a file that fails
/// is one line on stderr and exit status 1, the others are still done.
pub fn exec(
    args: BuildidCacheArgs,
    env: &Env,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Error> {
    let c = args.into_config()?;
    let mut status = 0;
    let mut fail = |err: &mut dyn Write, e: buildid_cache::CacheError| {
        status = 1;
        writeln!(err, "hrec: {e}")
    };
    for f in &c.add {
        match c.cache.add(f) {
            Ok(e) if env.verbose > 0 => writeln!(err, "added {} {}", e.build_id, e.path.display())?,
            Ok(_) => {}
            Err(e) => fail(err, e)?,
        }
    }
    for f in &c.remove {
        match c.cache.remove(f) {
            Ok(Some(e)) if env.verbose > 0 => {
                writeln!(err, "removed {} {}", e.build_id, e.path.display())?
            }
            Ok(Some(_)) => {}
            Ok(None) => writeln!(err, "hrec: {}: not in the build-id cache", f.display())?,
            Err(e) => fail(err, e)?,
        }
    }
    for f in &c.purge {
        match c.cache.purge(f) {
            Ok(gone) if env.verbose > 0 => {
                for e in gone {
                    writeln!(err, "removed {} {}", e.build_id, e.path.display())?;
                }
            }
            Ok(_) => {}
            Err(e) => fail(err, e)?,
        }
    }
    if c.list {
        match c.cache.list(!c.all) {
            Ok(entries) => {
                for e in entries {
                    writeln!(out, "{} {}", e.build_id, e.path.display())?;
                }
            }
            Err(e) => fail(err, e)?,
        }
    }
    Ok(status)
}

//! Running test programs as an unprivileged user (`setpriv` to nobody when the tests run as
//! root), for the paranoid-level and permission cases.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

/// Whether the tests run as root.
pub fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// The command prefix that runs a program as an unprivileged user: nothing when this test is
/// not root, `setpriv` to nobody when it is; `None` (after saying why) when neither works.
pub fn unprivileged(why: &str) -> Option<Vec<&'static str>> {
    if !is_root() {
        return Some(Vec::new());
    }
    let ok = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: {why} needs an unprivileged user, and setpriv to nobody failed");
        return None;
    }
    Some(vec![
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ])
}

/// `program` run through `prefix` (see [`unprivileged`]).
pub fn command_as(prefix: &[&str], program: &str) -> Command {
    let mut c = Command::new(prefix.first().copied().unwrap_or(program));
    if !prefix.is_empty() {
        c.args(&prefix[1..]).arg(program);
    }
    c.env_remove("HREC_SYSFS_ROOT")
        .env_remove("HREC_PROCFS_ROOT");
    c
}

/// A temporary directory anyone may write in (for a test run as nobody).
pub fn open_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

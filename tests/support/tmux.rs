//! A real terminal for tests: a detached tmux session of a given size running one command,
//! everything the command writes to the terminal logged (`pipe-pane`), the screen read with
//! `capture-pane -p`, keys sent with `send-keys`. Conditions are awaited by polling with a
//! deadline, never by fixed sleeps.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One tmux session; killed when dropped.
pub struct Tmux {
    name: String,
    log: PathBuf,
    status: PathBuf,
}

/// Whether tmux can be run here.
pub fn available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn tmux(args: &[&str]) -> String {
    let o = Command::new("tmux").args(args).output().expect("run tmux");
    assert!(
        o.status.success(),
        "tmux {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

impl Tmux {
    /// Starts `command` (a shell command line, run in `dir`) in a `cols` x `rows` terminal.
    /// The command waits until the terminal's output is logged, so the log holds all of it.
    pub fn start(dir: &Path, cols: u16, rows: u16, command: &str) -> Tmux {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "hrec-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let log = dir.join(format!("{name}.log"));
        let go = dir.join(format!("{name}.go"));
        let status = dir.join(format!("{name}.status"));
        // The exit status goes to a file: tmux may mark a pane dead before it has collected
        // its status, or without one.
        let script = format!(
            "while [ ! -e '{}' ]; do sleep 0.01; done; {command}\necho $? > '{}.tmp'; mv '{}.tmp' '{}'",
            go.display(),
            status.display(),
            status.display(),
            status.display()
        );
        tmux(&[
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            "-c",
            &dir.display().to_string(),
            "sh",
            "-c",
            &script,
        ]);
        // Keep the pane when the command ends, so its last screen can be read.
        tmux(&["set-option", "-t", &name, "remain-on-exit", "on"]);
        tmux(&[
            "pipe-pane",
            "-t",
            &name,
            "-o",
            &format!("cat >> '{}'", log.display()),
        ]);
        std::fs::write(&go, b"").expect("start the command");
        Tmux { name, log, status }
    }

    /// The screen as text.
    pub fn screen(&self) -> String {
        tmux(&["capture-pane", "-p", "-t", &self.name])
    }

    /// Waits until the screen satisfies `ok` (tmux draws what a command writes a moment
    /// later); returns the screen, or panics with it after `timeout`.
    pub fn wait_screen(&self, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen did not become as expected within {timeout:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything written to the terminal so far (escape sequences included).
    fn log(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned()
    }

    /// Waits until the terminal log satisfies `ok`; returns it, or panics with it after
    /// `timeout`. `pipe-pane` copies what the command wrote through a `cat` of its own, so
    /// the log can lag the command's exit: never read it once and assume it is complete.
    pub fn wait_log(&self, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let log = self.log();
            if ok(&log) {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal log did not become as expected within {timeout:?}:\n{log:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends keys (tmux key names: `q`, `Enter`, `Down`).
    pub fn send_keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        tmux(&args);
    }

    /// Waits until the command has exited; returns its exit status.
    pub fn wait_exit(&self, timeout: Duration) -> i32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(text) = std::fs::read_to_string(&self.status) {
                return text.trim().parse().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "the command in tmux did not exit within {timeout:?}; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .output();
    }
}

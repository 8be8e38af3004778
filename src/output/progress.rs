//! The progress bar of the reading commands: on stderr, only when it is a terminal, only once
//! reading has taken a while (a short report prints nothing extra), with the samples read of
//! the total, the rate and the time left, cleared when done (indicatif; never on the record
//! path).

/// A progress bar on stderr while samples are read: shown only on a terminal, and only once
/// reading has taken a second (`Env::progress_after`; a short report prints nothing extra);
/// cleared when done.
#[derive(Debug)]
pub struct Progress {
    show: bool,
    after: std::time::Duration,
    what: &'static str,
    total: u64,
    start: std::time::Instant,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// A bar for `what` over `total` samples (0: unknown), shown when `show` (stderr is a
    /// terminal) once `after` has passed.
    pub fn new(show: bool, after: std::time::Duration, what: &'static str, total: u64) -> Progress {
        Progress {
            show,
            after,
            what,
            total,
            start: std::time::Instant::now(),
            bar: None,
        }
    }

    /// `done` samples read so far.
    pub fn update(&mut self, done: u64) {
        if !self.show || self.start.elapsed() < self.after {
            return;
        }
        let (what, total, elapsed) = (self.what, self.total, self.start.elapsed());
        let bar = self.bar.get_or_insert_with(|| {
            let (bar, template) = if total > 0 {
                (
                    indicatif::ProgressBar::new(total),
                    "{msg}: [{bar:40}] {human_pos}/{human_len} samples ({percent}%, {eta} left)",
                )
            } else {
                (
                    indicatif::ProgressBar::new_spinner(),
                    "{msg}: {spinner} {human_pos} samples",
                )
            };
            // The time already spent, so the rate and the time left start right.
            let bar = bar.with_elapsed(elapsed).with_position(done);
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(what);
            bar
        });
        bar.set_position(done);
    }

    /// Clears the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// The progress of debuginfod's fetches (`hrec::symbol::debuginfod::OnProgress`): a bar of
/// files done on stderr when `show` (stderr is a terminal), from the first fetch to the last
/// of each batch, then cleared; nothing otherwise.
pub fn fetch_bar(show: bool) -> crate::symbol::debuginfod::OnProgress {
    let bar: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);
    std::sync::Arc::new(move |done: u64, total: u64| {
        if !show {
            return;
        }
        let mut bar = bar.lock().unwrap_or_else(|e| e.into_inner());
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "debuginfod: [{bar:40}] {pos}/{len} files ({elapsed})",
            ) {
                b.set_style(style.progress_chars("=> "));
            }
            b.enable_steady_tick(std::time::Duration::from_millis(200));
            b
        });
        b.set_length(total);
        b.set_position(done);
        if done >= total
            && let Some(b) = bar.take()
        {
            b.finish_and_clear();
        }
    })
}

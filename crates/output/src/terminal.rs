//! Whether progress is drawn as bars (a terminal) or printed as plain
//! lines (a serial console, a pipe): decided here once, for the console
//! and every pass's progress alike.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{MultiProgress, ProgressDrawTarget};

/// Set once by `storcert run --plain` (the boot image's unit): a serial
/// console is a terminal to the process but a log to whoever reads it, so
/// every pass then prints plain lines, like the run's own console.
static PLAIN: AtomicBool = AtomicBool::new(false);

/// Plain lines from now on, even on a terminal.
pub fn force_plain() {
    PLAIN.store(true, Ordering::Relaxed);
}

/// Several bars drawn together on a terminal (one per device); nothing
/// otherwise. Only the console draws bars.
pub fn multi() -> Option<MultiProgress> {
    (std::io::stderr().is_terminal() && !PLAIN.load(Ordering::Relaxed))
        .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

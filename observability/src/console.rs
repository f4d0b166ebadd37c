//! The log's writer: stderr, through a pause hook when a live progress bar shares the terminal (the bar is cleared,
//! the line written, the bar drawn again, so no stale copy of it stays above the log lines).

use std::io::Write;
use std::sync::{Arc, RwLock};

/// Runs the write it is given while the terminal is free.
pub type Pause = Arc<dyn Fn(&mut dyn FnMut()) + Send + Sync>;

static PAUSE: RwLock<Option<Pause>> = RwLock::new(None);

/// Routes every log line through `pause` (None: straight to stderr).
pub fn set_pause(pause: Option<Pause>) {
    if let Ok(mut p) = PAUSE.write() {
        *p = pause;
    }
}

/// A [`tracing_subscriber::fmt::MakeWriter`] for stderr that honours the pause hook.
#[derive(Debug, Clone, Copy, Default)]
pub struct Console;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Console {
    type Writer = ConsoleWriter;

    fn make_writer(&'a self) -> Self::Writer {
        ConsoleWriter
    }
}

/// Writes one formatted event (the fmt layer writes each event whole) to stderr.
#[derive(Debug)]
pub struct ConsoleWriter;

impl Write for ConsoleWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let pause = PAUSE.read().ok().and_then(|p| p.clone());
        match pause {
            Some(pause) => {
                let mut result = Ok(());
                pause(&mut || result = std::io::stderr().write_all(buf));
                result.map(|()| buf.len())
            }
            None => std::io::stderr().write_all(buf).map(|()| buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_write_runs_inside_the_pause_hook_once_set() {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        set_pause(Some(Arc::new(|w: &mut dyn FnMut()| {
            CALLS.fetch_add(1, Ordering::SeqCst);
            w();
        })));
        let mut out = ConsoleWriter;
        assert_eq!(out.write(b"one line\n").unwrap(), 9);
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        set_pause(None);
        assert_eq!(out.write(b"another\n").unwrap(), 8);
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    }
}

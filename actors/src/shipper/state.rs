//! What one sink has done so far, shared between its loop and the rest of the engine (the control API's status,
//! the end-of-crawl summary): delivered, skipped, how far behind, whether it holds fetching back, its last error.

use std::sync::Mutex;

pub use crate::protocol::SinkView;

/// The shared state of one sink.
#[derive(Debug)]
pub struct SinkState {
    view: Mutex<SinkView>,
}

impl SinkState {
    pub fn new(name: &str, kind: &'static str, now_ms: u64) -> SinkState {
        SinkState {
            view: Mutex::new(SinkView {
                name: name.to_owned(),
                kind,
                last_success_ms: now_ms,
                ..SinkView::default()
            }),
        }
    }

    /// A copy of the state now.
    pub fn view(&self) -> SinkView {
        self.view.lock().map(|v| v.clone()).unwrap_or_default()
    }

    pub(super) fn update(&self, f: impl FnOnce(&mut SinkView)) {
        if let Ok(mut v) = self.view.lock() {
            f(&mut v);
        }
    }
}

//! Helpers shared by the actors that catch panics.
//! the scheduler as a [`JobResult`] inside a `JobDone` message.

/// Turns a caught panic payload into text.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}

//! When a sink holds fetching back: once it is `output.sink_max_lag` records or `output.sink_max_lag_bytes` bytes
//! behind, until it is back under half of both (so fetching does not flap on and off at the limit).

/// How far behind a sink is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lag {
    /// Records (or files, for an object store) not delivered yet.
    pub records: u64,
    pub bytes: u64,
}

/// The backpressure rule of one sink.
#[derive(Debug, Clone, Copy)]
pub struct Hold {
    max_records: u64,
    max_bytes: u64,
    held: bool,
}

impl Hold {
    pub fn new(max_records: u64, max_bytes: u64) -> Hold {
        Hold {
            max_records: max_records.max(1),
            max_bytes: max_bytes.max(1),
            held: false,
        }
    }

    /// Takes the sink's lag now; true while fetching must wait for it.
    pub fn update(&mut self, lag: Lag) -> bool {
        if self.held {
            self.held = lag.records > self.max_records / 2 || lag.bytes > self.max_bytes / 2;
        } else {
            self.held = lag.records >= self.max_records || lag.bytes >= self.max_bytes;
        }
        self.held
    }

    pub fn held(&self) -> bool {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lag(records: u64, bytes: u64) -> Lag {
        Lag { records, bytes }
    }

    #[test]
    fn holds_at_either_limit_and_lets_go_under_half_of_both() {
        let mut h = Hold::new(100, 1000);
        assert!(!h.update(lag(99, 999)));
        assert!(h.update(lag(100, 0)), "the record limit");
        assert!(h.update(lag(60, 0)), "still above half");
        assert!(!h.update(lag(50, 500)), "half of both");
        assert!(h.update(lag(0, 1000)), "the byte limit");
        assert!(h.update(lag(10, 600)), "bytes still above half");
        assert!(!h.update(lag(10, 400)));
        assert!(!h.held());
    }
}

//! CPU time and peak memory of this process, read from /proc (Linux) without unsafe code.

/// CPU seconds (user + system) used so far, if known.
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12th and 13th after ")".
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    let ticks = 100.0; // USER_HZ is 100 on every Linux architecture crawl-engine targets
    Some((utime + stime) / ticks)
}

/// Peak resident set size in bytes (VmHWM), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// Resident set size now in bytes (VmRSS), if known.
pub fn rss_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_usage() {
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(cpu_seconds().is_some_and(|c| c >= 0.0));
        assert!(peak_rss_bytes().is_some_and(|b| b > 1024 * 1024));
        let (now, peak) = (rss_bytes().unwrap_or(0), peak_rss_bytes().unwrap_or(0));
        assert!(now > 1024 * 1024 && now <= peak, "rss {now} peak {peak}");
    }
}

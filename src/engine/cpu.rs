//! The generator's own CPU time, for the run's validity: a generator that saturated its cores delays its
//! own timestamps, so its numbers describe itself, not the build.

use std::time::Duration;

/// CPU time (user + system) this process has used, or `None` where `/proc` is unavailable (not Linux).
#[must_use]
pub fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces and parentheses; the fields after its closing `)` do not.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, counted in USER_HZ ticks, which Linux fixes at 100
    // for user space on every architecture it ships.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_grows_with_work() {
        let Some(before) = super::process_cpu_time() else { return };
        let started = std::time::Instant::now();
        let mut x = 0_u64;
        while started.elapsed() < std::time::Duration::from_millis(60) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(super::process_cpu_time().unwrap() > before);
    }
}

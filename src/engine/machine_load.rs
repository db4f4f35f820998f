//! How busy the whole machine was during a run: the share of all cores' time that was not idle, from the
//! kernel's counters (`/proc/stat`, Linux only), this process and every other one included.
//!
//! Why: a noisy neighbour on the generator's machine (another build, a busy loop) makes threads that wake on
//! a response wait for a CPU before they take their timestamps, and slows a target on the same machine.
//! Every endpoint then looks slower, in a run and in its rerun alike. The generator's own CPU share does not
//! show it (the neighbour's CPU is not ours), nor does its threads' run-queue wait, which also grows when the
//! target merely gets slower and the generator idles more. The machine's busy share does; the judge compares
//! tonight's with the baseline nights' (`analysis::contention`).

/// The kernel's cumulative CPU counters, summed over all cores, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MachineSample {
    idle: u64,
    total: u64,
    /// The cores the counters cover (`cpuN` lines).
    pub(super) cores: u32,
}

impl MachineSample {
    /// The counters now, or `None` where the kernel does not publish them.
    pub(super) fn now() -> Option<Self> {
        parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The share of CPU time that was busy between `earlier` and now, in percent; `None` when no tick
    /// passed.
    pub(super) fn busy_pct_since(self, earlier: Self) -> Option<f64> {
        let total = self.total.saturating_sub(earlier.total);
        let idle = self.idle.saturating_sub(earlier.idle).min(total);
        (total > 0).then(|| (total - idle) as f64 * 100.0 / total as f64)
    }
}

/// The `cpu` line: user nice system idle iowait irq softirq steal (guest time is already inside user).
/// Waiting for I/O counts as idle (the CPU was free); time stolen by the hypervisor counts as busy (it was
/// not ours to use).
fn parse(stat: &str) -> Option<MachineSample> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> =
        line.split_ascii_whitespace().skip(1).take(8).map(str::parse).collect::<Result<_, _>>().ok()?;
    let [user, nice, system, idle, iowait, irq, softirq, steal] = fields[..] else { return None };
    let total =
        [user, nice, system, idle, iowait, irq, softirq, steal].iter().try_fold(0_u64, |sum, v| sum.checked_add(*v))?;
    let is_core = |l: &&str| l.strip_prefix("cpu").is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()));
    let cores = u32::try_from(stat.lines().filter(is_core).count()).ok()?.max(1);
    Some(MachineSample { idle: idle.checked_add(iowait)?, total, cores })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_cpu_line_with_iowait_as_idle_and_steal_as_busy() {
        let stat = "cpu  100 0 50 800 40 5 5 10 0 0\ncpu0 50 0 25 400 20 2 3 5 0 0\nintr 1 2 3\n";
        assert_eq!(parse(stat), Some(MachineSample { idle: 840, total: 1010, cores: 1 }));
        assert_eq!(parse("cpu  1 2 3\n"), None, "too few fields");
        assert_eq!(parse("intr 1 2\n"), None);
        assert_eq!(parse("cpu  a b c d e f g h\n"), None);
    }

    #[test]
    fn the_busy_share_is_of_the_ticks_in_between() {
        let at = |idle, total| MachineSample { idle, total, cores: 2 };
        assert_eq!(at(1_150, 2_000).busy_pct_since(at(1_000, 1_200)), Some(81.25));
        assert_eq!(at(1_000, 1_200).busy_pct_since(at(1_000, 1_200)), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_has_figures_on_linux() {
        let first = MachineSample::now().expect("Linux publishes /proc/stat");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let busy = MachineSample::now().unwrap().busy_pct_since(first);
        assert!(busy.is_none_or(|b| (0.0..=100.0).contains(&b)), "{busy:?}");
    }
}

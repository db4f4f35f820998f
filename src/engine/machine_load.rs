//! How busy the whole machine was during a run: the share of all cores' time that was not idle, from the
//! kernel's counters (`/proc/stat`, Linux only), this process and every other one included.
//!
//! Why: a noisy neighbour on the generator's machine (another build, a busy loop) makes threads that wake on
//! a response wait for a CPU before they take their timestamps, and slows a target on the same machine.
//! Every endpoint then looks slower, in a run and in its rerun alike. The generator's own CPU share does not
//! show it (the neighbour's CPU is not ours), nor does its threads' run-queue wait, which also grows when the
//! target merely gets slower and the generator idles more. The machine's busy share does; the judge compares
//! tonight's with the baseline nights' (`analysis::contention`).
//!
//! The same counters say how much time the hypervisor kept from a virtual machine (`steal`): a host busy
//! with other guests deschedules the cores now and then, every request in flight waits, and a quiet guest
//! sees nothing else of it. On a 2-core VM, such a spell slowed every endpoint's p50 by 20–29 % in a run and
//! its rerun alike, with 2–3 % of the cores' time stolen against 0.1–0.5 % on the other nights.

/// The kernel's cumulative CPU counters, summed over all cores, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MachineSample {
    idle: u64,
    stolen: u64,
    total: u64,
    /// The cores the counters cover (`cpuN` lines).
    pub(super) cores: u32,
}

impl MachineSample {
    /// The counters now, or `None` where the kernel does not publish them.
    pub(super) fn now() -> Option<Self> {
        parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// How the CPU time between `earlier` and now was spent; `None` when no tick passed.
    pub(super) fn use_since(self, earlier: Self) -> Option<MachineUse> {
        let total = self.total.saturating_sub(earlier.total);
        let idle = self.idle.saturating_sub(earlier.idle).min(total);
        let stolen = self.stolen.saturating_sub(earlier.stolen).min(total - idle);
        let pct = |ticks: u64| ticks as f64 * 100.0 / total as f64;
        (total > 0).then(|| MachineUse { busy_pct: pct(total - idle), stolen_pct: pct(stolen), cores: self.cores })
    }
}

/// The machine's CPU time over a stretch, as shares of all its cores' time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct MachineUse {
    /// Not idle, percent: every process's work, and the time stolen.
    pub(super) busy_pct: f64,
    /// Kept from this machine by its hypervisor, percent (0 on bare metal).
    pub(super) stolen_pct: f64,
    /// The cores the shares cover.
    pub(super) cores: u32,
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
    Some(MachineSample { idle: idle.checked_add(iowait)?, stolen: steal, total, cores })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_cpu_line_with_iowait_as_idle_and_steal_as_busy() {
        let stat = "cpu  100 0 50 800 40 5 5 10 0 0\ncpu0 50 0 25 400 20 2 3 5 0 0\nintr 1 2 3\n";
        assert_eq!(parse(stat), Some(MachineSample { idle: 840, stolen: 10, total: 1010, cores: 1 }));
        assert_eq!(parse("cpu  1 2 3\n"), None, "too few fields");
        assert_eq!(parse("intr 1 2\n"), None);
        assert_eq!(parse("cpu  a b c d e f g h\n"), None);
    }

    #[test]
    fn the_shares_are_of_the_ticks_in_between() {
        let at = |idle, stolen, total| MachineSample { idle, stolen, total, cores: 2 };
        let used = at(1_150, 30, 2_000).use_since(at(1_000, 10, 1_200));
        assert_eq!(used, Some(MachineUse { busy_pct: 81.25, stolen_pct: 2.5, cores: 2 }));
        assert_eq!(at(1_000, 10, 1_200).use_since(at(1_000, 10, 1_200)), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_has_figures_on_linux() {
        let first = MachineSample::now().expect("Linux publishes /proc/stat");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let used = MachineSample::now().unwrap().use_since(first);
        let within = |pct: f64| (0.0..=100.0).contains(&pct);
        assert!(
            used.is_none_or(|u| within(u.busy_pct) && within(u.stolen_pct) && u.stolen_pct <= u.busy_pct),
            "{used:?}"
        );
    }
}

//! Pinning the calling thread to one CPU.

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

use crate::error::Result;

/// CPUs the calling thread may run on now.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    let set = sched_getaffinity(None).map_err(|e| format!("sched_getaffinity: {e}"))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Number of CPUs the system has online.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Pins the calling thread (and the processes it spawns afterwards) to `cpu`.
pub fn pin_to(cpu: usize) -> Result<()> {
    if cpu >= CpuSet::MAX_CPU {
        return Err(format!("cannot pin to CPU {cpu}: no such CPU").into());
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).map_err(|e| {
        format!(
            "cannot pin to CPU {cpu}: {e} (this machine has {} CPUs online)",
            online_cpus()
        )
    })?;
    Ok(())
}

/// CPU time a process has used, measured by its CPU clock
/// (`CLOCK_PROCESS_CPUTIME_ID`: the scheduler's own count of the time its
/// threads ran, to the nanosecond), with the kernel's split of it into user
/// and system time and how often it slept, from `getrusage`.
///
/// The split is an estimate: without precise accounting the kernel divides
/// the measured total in the ratio of the timer ticks that found the
/// process in user or in kernel mode, so a loop shorter than a tick can
/// show all its time as system time. Per-message figures use `cpu_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTime {
    /// CPU time in nanoseconds, measured (the process's CPU clock).
    pub cpu_ns: u64,
    /// User time in nanoseconds (the kernel's tick-based split).
    pub user_ns: u64,
    /// System time in nanoseconds (the kernel's tick-based split).
    pub system_ns: u64,
    /// Voluntary context switches (`ru_nvcsw`): how often the process
    /// gave up its CPU to wait, e.g. slept on a futex or in a read.
    pub sleeps: u64,
}

impl CpuTime {
    /// CPU time of the calling process so far, all its threads: its CPU
    /// clock, and `getrusage(RUSAGE_SELF)`.
    pub fn now() -> Result<Self> {
        let clock = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        let cpu_ns = u64::try_from(clock.tv_sec).unwrap_or(0) * 1_000_000_000
            + u64::try_from(clock.tv_nsec).unwrap_or(0);
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `usage` is a valid, writable `rusage`; getrusage writes
        // only into it, and RUSAGE_SELF is a valid `who`.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if rc != 0 {
            return Err(format!("getrusage: {}", std::io::Error::last_os_error()).into());
        }
        // SAFETY: getrusage succeeded, so it filled the struct (and it was
        // zeroed before, so every field is initialised either way).
        let usage = unsafe { usage.assume_init() };
        let ns = |tv: libc::timeval| {
            u64::try_from(tv.tv_sec).unwrap_or(0) * 1_000_000_000
                + u64::try_from(tv.tv_usec).unwrap_or(0) * 1_000
        };
        Ok(Self {
            cpu_ns,
            user_ns: ns(usage.ru_utime),
            system_ns: ns(usage.ru_stime),
            sleeps: u64::try_from(usage.ru_nvcsw).unwrap_or(0),
        })
    }

    /// The time used between `earlier` and `self`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            system_ns: self.system_ns.saturating_sub(earlier.system_ns),
            sleeps: self.sleeps.saturating_sub(earlier.sleeps),
        }
    }

    /// `num / den` of this time (and of the sleeps, rounded down): the
    /// share of `num` out of `den` equal steps. `den` must not be 0.
    pub fn scaled(self, num: u64, den: u64) -> Self {
        let f = |x: u64| (u128::from(x) * u128::from(num) / u128::from(den)) as u64;
        Self {
            cpu_ns: f(self.cpu_ns),
            user_ns: f(self.user_ns),
            system_ns: f(self.system_ns),
            sleeps: f(self.sleeps),
        }
    }

    /// The CPU time in nanoseconds, as measured (`cpu_ns`; the user and
    /// system split of a CpuTime made by hand when it has none).
    pub fn total_ns(self) -> u64 {
        if self.cpu_ns > 0 {
            self.cpu_ns
        } else {
            self.user_ns + self.system_ns
        }
    }
}

impl std::ops::Add for CpuTime {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            cpu_ns: self.cpu_ns + other.cpu_ns,
            user_ns: self.user_ns + other.user_ns,
            system_ns: self.system_ns + other.system_ns,
            sleeps: self.sleeps + other.sleeps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_takes_a_share() {
        let t = CpuTime {
            cpu_ns: 1_300,
            user_ns: 1_000,
            system_ns: 300,
            sleeps: 7,
        };
        let s = t.scaled(9, 10);
        assert_eq!(
            (s.cpu_ns, s.user_ns, s.system_ns, s.sleeps),
            (1_170, 900, 270, 6)
        );
        assert_eq!(t.scaled(1, 1), t);
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let before = CpuTime::now().unwrap();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let used = CpuTime::now().unwrap().since(before);
        assert!(used.total_ns() > 0, "{used:?}");
        // The CPU clock moved (it is what total_ns reports).
        assert!(
            used.cpu_ns > 0 && used.total_ns() == used.cpu_ns,
            "{used:?}"
        );
        assert_eq!((used + used).total_ns(), 2 * used.total_ns());
    }

    #[test]
    fn sleeping_counts_as_a_voluntary_switch() {
        let before = CpuTime::now().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let used = CpuTime::now().unwrap().since(before);
        assert!(used.sleeps >= 1, "{used:?}");
    }
}

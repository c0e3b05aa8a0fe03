//! Pinning the calling thread to one CPU.

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

use crate::Result;

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

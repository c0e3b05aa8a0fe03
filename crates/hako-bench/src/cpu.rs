//! Pinning the calling thread to one CPU.

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

use crate::Result;

/// CPUs the calling thread may run on.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    let set = sched_getaffinity(None).map_err(|e| format!("sched_getaffinity: {e}"))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Pins the calling thread (and the processes it spawns afterwards) to `cpu`.
/// Fails with a message naming the allowed CPUs if `cpu` is not one of them.
pub fn pin_to(cpu: usize) -> Result<()> {
    let allowed = allowed_cpus()?;
    if !allowed.contains(&cpu) {
        return Err(format!(
            "cannot pin to CPU {cpu}: this process may use CPUs {allowed:?} only"
        )
        .into());
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).map_err(|e| format!("sched_setaffinity(CPU {cpu}): {e}"))?;
    Ok(())
}

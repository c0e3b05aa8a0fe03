//! The OS layer: shared-memory files, mappings and locks.
//!
//! This is the only part of hako that calls the kernel (through `rustix`,
//! and `libc` for the SIGBUS handler, which rustix does not cover). Every
//! file of a domain is reached through a directory held open by `dir.rs`,
//! never by a path.

pub mod dir;
pub mod fifo;
pub mod futex;
pub mod lock;
pub mod shm;
pub mod sigbus;
pub mod signal;

/// CPUs online on the machine (not only those this process may use), from
/// `/sys/devices/system/cpu/online`; `None` if that cannot be read.
pub fn cpus_online() -> Option<usize> {
    static ONLINE: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *ONLINE.get_or_init(|| {
        let list = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
        count_cpu_list(&list)
    })
}

/// Counts the CPUs in a kernel CPU list such as `0-3,8,10-11`.
fn count_cpu_list(list: &str) -> Option<usize> {
    let mut n: usize = 0;
    for part in list.trim().split(',') {
        let more = match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)?.checked_add(1)?
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
        n = n.checked_add(more)?;
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_cpu_list("0-1\n"), Some(2));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
        assert_eq!(count_cpu_list(&format!("0-{}", usize::MAX)), None);
    }

    #[test]
    fn this_machine_has_a_cpu_online() {
        // Where sysfs is not mounted the caller falls back to the affinity.
        if std::path::Path::new("/sys/devices/system/cpu/online").exists() {
            assert!(cpus_online().is_some_and(|n| n >= 1));
        }
    }
}

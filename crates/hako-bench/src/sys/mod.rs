//! What the harness and the transports take from the system: CPUs and
//! CPU time, the clocks, shared regions, and the run's directory.

pub mod clock;
pub mod cpu;
pub mod rundir;
pub mod shm;

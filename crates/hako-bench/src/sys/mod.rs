//! What the harness and the transports take from the system: CPUs and
//! CPU time, the clocks, shared regions, the run's directory, and the
//! programs it runs beside itself.

pub mod clock;
pub mod cpu;
pub mod program;
pub mod rundir;
pub mod shm;

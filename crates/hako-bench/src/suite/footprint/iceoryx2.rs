//! iceoryx2's side of the memory footprint ([`crate::suite::footprint`]): the same
//! service shape as hako's (`u64` payload, `max_subscribers(n)`,
//! `max_publishers(1)`, iceoryx2's defaults otherwise), one publisher and
//! one subscriber, one sample sent and received, measured in the same
//! steps.
//!
//! iceoryx2 keeps its shared memory in `/dev/shm` under the file prefix of
//! its config, and its service descriptions under its root path. Each
//! measure gets a prefix of its own, `hkb<pid>_fp<k>_` (so
//! [`crate::sys::rundir::clean_stale_shm`] removes what a killed run left, as it
//! does for the transports' `hkb<pid>_` files), and a root path in a
//! directory of its own under the caller's base; regions of files under
//! either count. Both are removed after the measure.

use std::path::Path as StdPath;

use iceoryx2::prelude::*;

use super::maps::{check_echo, files, mapped_bytes, unique, Figures};
use crate::error::Result;
use crate::transports::peers::iceoryx2::{err, SHM_PREFIX};

/// Where `shm_open` puts iceoryx2's files.
const SHM_DIR: &str = "/dev/shm";

/// Removes, on drop, the files of `SHM_DIR` under a prefix and a root
/// directory.
struct Cleanup {
    prefix: String,
    root: std::path::PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
        let Ok(entries) = std::fs::read_dir(SHM_DIR) else {
            return;
        };
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&self.prefix))
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// iceoryx2's figures for a `u64` service allowing `allowed` subscribers
/// and one publisher; its root path under `base`.
pub fn measure(base: &StdPath, allowed: u32) -> Result<Figures> {
    let k = unique();
    let cleanup = Cleanup {
        prefix: format!("{SHM_PREFIX}{}_fp{k}_", std::process::id()),
        root: base.join(format!("footprint-iceoryx2-{allowed}-{k}")),
    };
    std::fs::create_dir_all(&cleanup.root)
        .map_err(|e| format!("cannot create {}: {e}", cleanup.root.display()))?;
    let root = std::fs::canonicalize(&cleanup.root)?;
    let root = root
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", root.display()))?
        .to_owned();
    let shm_prefix = format!("{SHM_DIR}/{}", cleanup.prefix);
    let root_prefix = format!("{root}/");
    let mapped = || -> Result<u64> { Ok(mapped_bytes(&shm_prefix)? + mapped_bytes(&root_prefix)?) };
    let shm_files = || -> Result<Vec<(std::path::PathBuf, u64)>> {
        Ok(files(StdPath::new(SHM_DIR))?
            .into_iter()
            .filter(|(p, _)| p.to_str().is_some_and(|p| p.starts_with(&shm_prefix)))
            .collect())
    };

    let mut config = Config::default();
    config
        .global
        .set_root_path(&Path::new(root.as_bytes()).map_err(|e| err("root path", e))?);
    config.global.prefix =
        FileName::new(cleanup.prefix.as_bytes()).map_err(|e| err("prefix", e))?;
    // Its refusals are this measure's result, not lines on the terminal.
    set_log_level(LogLevel::Fatal);
    let figures = (|| -> Result<Figures> {
        // Ports before the service before the node: drop order.
        let node = NodeBuilder::new()
            .config(&config)
            .signal_handling_mode(SignalHandlingMode::Disabled)
            .create::<ipc::Service>()
            .map_err(|e| err("creating a node", e))?;
        let name = ServiceName::new("hako-bench/footprint").map_err(|e| err("service name", e))?;
        let before_service = mapped()?;
        let service = node
            .service_builder(&name)
            .publish_subscribe::<u64>()
            .max_subscribers(allowed as usize)
            .max_publishers(1)
            .create()
            .map_err(|e| err("creating a service", e))?;

        let files_before = shm_files()?;
        let m0 = mapped()?;
        let publisher = service
            .publisher_builder()
            .create()
            .map_err(|e| err("creating a publisher", e))?;
        let m1 = mapped()?;
        let segment = shm_files()?
            .into_iter()
            .filter(|(p, _)| !files_before.iter().any(|(q, _)| q == p))
            .map(|(_, size)| size)
            .sum();

        let subscriber = service
            .subscriber_builder()
            .create()
            .map_err(|e| err("creating a subscriber", e))?;
        let m2 = mapped()?;
        let reached = publisher.send_copy(7).map_err(|e| err("send", e))?;
        let m3 = mapped()?;
        let sample = subscriber.receive().map_err(|e| err("receive", e))?;
        let m4 = mapped()?;
        check_echo("iceoryx2", reached, sample.as_deref().copied())?;
        drop(sample);
        let figures = Figures::from_steps([before_service, m0, m1, m2, m3, m4], segment);
        drop((subscriber, publisher, service, node));
        Ok(figures)
    })();
    set_log_level(LogLevel::Error);
    drop(cleanup);
    figures
}

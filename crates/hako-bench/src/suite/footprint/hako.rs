//! hako's side of the footprint.

use std::path::{Path, PathBuf};

use super::maps::{check_echo, files, mapped_bytes, unique, Figures};
use crate::error::Result;

/// A directory made for one measure, removed (with all in it) on drop.
struct Place(PathBuf);

impl Place {
    /// Creates `<base>/footprint-<library>-<allowed>-<unique>`, owner-only,
    /// and gives its path as the kernel shows it in `/proc/self/maps`.
    fn create(base: &Path, library: &str, allowed: u32) -> Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let path = base.join(format!("footprint-{library}-{allowed}-{}", unique()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        // Removed on drop from here on, an error of the next line included.
        let mut place = Self(path);
        place.0 = std::fs::canonicalize(&place.0)?;
        Ok(place)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// hako's figures for a `u64` service allowing `allowed` subscribers and
/// one publisher, in a domain root of its own under `base`.
pub fn hako(base: &Path, allowed: u32) -> Result<Figures> {
    let place = Place::create(base, "hako", allowed)?;
    let root = &place.0;
    let prefix = format!(
        "{}/",
        root.to_str()
            .ok_or_else(|| format!("{} is not UTF-8", root.display()))?
    );
    let mapped = || mapped_bytes(&prefix);
    // Ports before the service before the node: drop order.
    let node = hako::NodeBuilder::new()
        .signal_handling(false)
        .config(&hako::Config::default().with_root(root))
        .create()?;
    let before_service = mapped()?;
    let service = node
        .service_builder(&"hako-bench/footprint".try_into()?)
        .publish_subscribe::<u64>()
        .max_subscribers(allowed)
        .max_publishers(1)
        .create()?;

    let files_before = files(root)?;
    let m0 = mapped()?;
    let publisher = service.publisher_builder().create()?;
    let m1 = mapped()?;
    // The publisher's segment: hako names it `pub_<port id>` in the
    // service's directory (as `hako inspect` reads it).
    let segment = files(root)?
        .into_iter()
        .filter(|(p, _)| !files_before.iter().any(|(q, _)| q == p))
        .filter(|(p, _)| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("pub_"))
        })
        .map(|(_, size)| size)
        .sum();

    let subscriber = service.subscriber_builder().create()?;
    let m2 = mapped()?;
    let reached = publisher.send_copy(7)?;
    let m3 = mapped()?;
    let sample = subscriber.receive()?;
    let m4 = mapped()?;
    check_echo("hako", reached, sample.as_deref().copied())?;
    drop(sample);
    let figures = Figures::from_steps([before_service, m0, m1, m2, m3, m4], segment);
    drop((subscriber, publisher, service, node));
    Ok(figures)
}

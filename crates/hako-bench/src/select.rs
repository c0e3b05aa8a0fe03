//! Every transport of this crate, by the name `--transports` uses.
//!
//! | name             | what                                                   | waits       |
//! |------------------|--------------------------------------------------------|-------------|
//! | `floor`          | one cache line ([`crate::floor`])                      | busy-poll   |
//! | `hako`           | hako pub/sub, `receive()` polled ([`crate::hako_pubsub`]) | busy-poll |
//! | `hako-spin`      | hako, `blocking_receive()`, `WaitStrategy::BusySpin`   | busy-poll   |
//! | `hako-spin-park` | hako, `blocking_receive()`, `WaitStrategy::SpinThenPark` | blocking  |
//! | `hako-park`      | hako, `blocking_receive()`, `WaitStrategy::Park`       | blocking    |
//! | `reference`      | hako's data path by hand ([`crate::reference`])        | busy-poll   |
//! | `futex`          | one futex word ([`crate::futex_floor`])                | blocking    |
//! | `pipe`           | two pipes ([`crate::kernel::Pipe`])                    | blocking    |
//! | `unix`           | a unix stream socket ([`crate::kernel::UnixSocket`])   | blocking    |
//! | `mq`             | two POSIX message queues ([`crate::kernel::MessageQueue`]) | blocking |

use hako::WaitStrategy;

use crate::floor::Floor;
use crate::futex_floor::FutexFloor;
use crate::hako_pubsub::{HakoPubSub, HakoWait};
use crate::harness::{DynTransport, RunRow};
use crate::kernel::{MessageQueue, Pipe, UnixSocket};
use crate::reference::Reference;

/// A transport, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `floor`.
    Floor,
    /// `hako`.
    Hako,
    /// `hako-spin`.
    HakoSpin,
    /// `hako-spin-park`.
    HakoSpinPark,
    /// `hako-park`.
    HakoPark,
    /// `reference`.
    Reference,
    /// `futex`.
    Futex,
    /// `pipe`.
    Pipe,
    /// `unix`.
    Unix,
    /// `mq`.
    Mq,
}

impl Kind {
    /// Every transport.
    pub const ALL: [Kind; 10] = [
        Kind::Floor,
        Kind::Hako,
        Kind::HakoSpin,
        Kind::HakoSpinPark,
        Kind::HakoPark,
        Kind::Reference,
        Kind::Futex,
        Kind::Pipe,
        Kind::Unix,
        Kind::Mq,
    ];

    /// What `hako-pingpong` measures unless told otherwise.
    pub const DEFAULT: [Kind; 8] = [
        Kind::Hako,
        Kind::HakoSpin,
        Kind::HakoPark,
        Kind::HakoSpinPark,
        Kind::Futex,
        Kind::Pipe,
        Kind::Unix,
        Kind::Mq,
    ];

    /// [`Kind::DEFAULT`] as `--transports` takes it.
    pub const DEFAULT_LIST: &'static str =
        "hako,hako-spin,hako-park,hako-spin-park,futex,pipe,unix,mq";

    /// The name (the transport's [`Transport::name`](crate::transport::Transport::name)).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Floor => "floor",
            Kind::Hako => "hako",
            Kind::HakoSpin => "hako-spin",
            Kind::HakoSpinPark => "hako-spin-park",
            Kind::HakoPark => "hako-park",
            Kind::Reference => "reference",
            Kind::Futex => "futex",
            Kind::Pipe => "pipe",
            Kind::Unix => "unix",
            Kind::Mq => "mq",
        }
    }

    /// The transport called `name`; the error lists the known names.
    pub fn parse(name: &str) -> Result<Kind, String> {
        let name = name.trim();
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| format!("unknown transport {name:?}; known: {}", known_names()))
    }

    /// A comma-separated list of names, in order, each once.
    pub fn parse_list(text: &str) -> Result<Vec<Kind>, String> {
        let mut kinds = Vec::new();
        for name in text.split(',').filter(|n| !n.trim().is_empty()) {
            let k = Kind::parse(name)?;
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        if kinds.is_empty() {
            return Err(format!("no transport given; known: {}", known_names()));
        }
        Ok(kinds)
    }
}

/// `floor, hako, …`.
pub fn known_names() -> String {
    Kind::ALL.map(Kind::name).join(", ")
}

/// One instance of every transport.
#[derive(Debug, Clone)]
pub struct Transports {
    floor: Floor,
    hako: HakoPubSub,
    hako_spin: HakoPubSub,
    hako_spin_park: HakoPubSub,
    hako_park: HakoPubSub,
    reference: Reference,
    futex: FutexFloor,
    pipe: Pipe,
    unix: UnixSocket,
    mq: MessageQueue,
}

impl Transports {
    /// Every transport; the hako ones with `hako`'s service settings (only
    /// the leader's matter: it creates the services).
    pub fn new(hako: HakoPubSub) -> Self {
        let with = |wait| HakoPubSub { wait, ..hako };
        Self {
            floor: Floor,
            hako: with(HakoWait::Poll),
            hako_spin: with(HakoWait::Blocking(WaitStrategy::BusySpin)),
            hako_spin_park: with(HakoWait::Blocking(WaitStrategy::SpinThenPark)),
            hako_park: with(HakoWait::Blocking(WaitStrategy::Park)),
            reference: Reference,
            futex: FutexFloor,
            pipe: Pipe,
            unix: UnixSocket,
            mq: MessageQueue,
        }
    }

    /// Transport `kind`, for the leader.
    pub fn get(&self, kind: Kind) -> &dyn RunRow {
        match kind {
            Kind::Floor => &self.floor,
            Kind::Hako => &self.hako,
            Kind::HakoSpin => &self.hako_spin,
            Kind::HakoSpinPark => &self.hako_spin_park,
            Kind::HakoPark => &self.hako_park,
            Kind::Reference => &self.reference,
            Kind::Futex => &self.futex,
            Kind::Pipe => &self.pipe,
            Kind::Unix => &self.unix,
            Kind::Mq => &self.mq,
        }
    }

    /// Every transport, for [`crate::harness::follower_main`].
    pub fn for_follower(&self) -> Vec<&dyn DynTransport> {
        vec![
            &self.floor,
            &self.hako,
            &self.hako_spin,
            &self.hako_spin_park,
            &self.hako_park,
            &self.reference,
            &self.futex,
            &self.pipe,
            &self.unix,
            &self.mq,
        ]
    }
}

impl Default for Transports {
    fn default() -> Self {
        Self::new(HakoPubSub::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_transports() {
        let t = Transports::default();
        for k in Kind::ALL {
            assert_eq!(t.get(k).row_name(), k.name());
            assert_eq!(Kind::parse(k.name()), Ok(k));
        }
        let follower: Vec<&str> = t.for_follower().iter().map(|t| t.dyn_name()).collect();
        assert_eq!(follower, Kind::ALL.map(Kind::name));
    }

    #[test]
    fn lists_parse_and_bad_names_are_refused() {
        assert_eq!(
            Kind::parse_list("hako, futex,hako"),
            Ok(vec![Kind::Hako, Kind::Futex])
        );
        let e = Kind::parse_list("hako,carrier-pigeon").unwrap_err();
        assert!(e.contains("unknown transport \"carrier-pigeon\""), "{e}");
        assert!(e.contains("hako-park"), "{e}");
        assert!(Kind::parse_list("").is_err());
        assert_eq!(Kind::parse_list(Kind::DEFAULT_LIST).unwrap(), Kind::DEFAULT);
    }
}

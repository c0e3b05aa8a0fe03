//! Shared pieces of hako's cross-process integration tests.
//!
//! The tests in `tests/` start the helper binary `hako-test-helper`
//! (`src/bin/hako-test-helper.rs`) in several processes and check what each
//! one reports. This library holds what both sides need:
//!
//! * [`TestMsg`], the payload every scenario sends: a sequence number, the
//!   sender's logical publisher id, 40 bytes of data derived from both, and an
//!   FNV-1a checksum over all of it, so a torn, stale or foreign chunk is
//!   caught by the reader. [`OtherMsg`] and [`ImpostorMsg`] exist to provoke
//!   type mismatches.
//! * [`exit`], the helper's exit codes, one per error the tests look for.
//! * [`board`], the self-checking values of the blackboard tests.
//! * [`harness`], used by the tests only: a domain root and a temp directory
//!   per test, helper processes under a watchdog, and the parsing of the
//!   helper's `RESULT` lines.
//!
//! The watchdog is hang detection, not a timing assertion: its bound is far
//! above anything a healthy run needs, and tests never assert how fast
//! something was.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use hako::ShmSafe;

/// Bytes of data in a [`TestMsg`].
pub const DATA_LEN: usize = 40;

/// The payload of every scenario: 64 bytes with a checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ShmSafe)]
#[repr(C)]
pub struct TestMsg {
    /// Sequence number within the sending publisher, from 0.
    pub seq: u64,
    /// Logical id of the sending publisher (given on the helper's command line).
    pub publisher: u64,
    /// Pseudo-random bytes derived from `seq` and `publisher`.
    pub data: [u8; DATA_LEN],
    /// FNV-1a over `seq`, `publisher` and `data`.
    pub checksum: u64,
}

const _: () = assert!(std::mem::size_of::<TestMsg>() == 64);

/// A payload of another type, to provoke `IncompatibleType { field: "type_name" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ShmSafe)]
#[repr(C)]
pub struct OtherMsg {
    /// Anything.
    pub value: u64,
}

/// A payload that claims to be a `TestMsg` but is larger, to provoke
/// `IncompatibleType { field: "size" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ShmSafe)]
#[repr(C)]
#[hako(type_name = "hako_tests::TestMsg")]
pub struct ImpostorMsg {
    /// Anything.
    pub words: [u64; 9],
}

/// 64-bit FNV-1a over `bytes`, continuing from `h`.
pub fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// FNV-1a offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Bytes of data in a [`SmallMsg`].
pub const SMALL_DATA_LEN: usize = 24;

/// A [`TestMsg`] of 48 bytes, which travels in the queue slot (the
/// largest payload an inline slot carries) where a `TestMsg` travels in
/// the publisher's pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ShmSafe)]
#[repr(C)]
pub struct SmallMsg {
    /// Sequence number within the sending publisher, from 0.
    pub seq: u64,
    /// Logical id of the sending publisher.
    pub publisher: u64,
    /// Pseudo-random bytes derived from `seq` and `publisher`.
    pub data: [u8; SMALL_DATA_LEN],
    /// FNV-1a over `seq`, `publisher` and `data`.
    pub checksum: u64,
}

const _: () = assert!(std::mem::size_of::<SmallMsg>() == 48);

/// A self-checking message: numbered per publisher, its data derived from
/// both numbers, a checksum over it all.
pub trait Checked: hako::Payload + ShmSafe + Copy + std::fmt::Debug + 'static {
    /// The message publisher `publisher` sends as number `seq`.
    fn new(publisher: u64, seq: u64) -> Self;
    /// Its number.
    fn seq(&self) -> u64;
    /// Its publisher.
    fn publisher(&self) -> u64;
    /// The checksum it should carry.
    fn compute_checksum(&self) -> u64;
    /// The checksum it carries.
    fn checksum(&self) -> u64;
    /// Whether the checksum matches the contents.
    fn is_intact(&self) -> bool {
        self.checksum() == self.compute_checksum()
    }
}

/// The data of message `seq` of `publisher`: xorshift64, seeded from both
/// numbers (never 0 thanks to the constant).
fn fill(data: &mut [u8], publisher: u64, seq: u64) {
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ publisher.rotate_left(29) ^ 0x2545;
    for b in data {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

/// FNV-1a over a message's number, publisher and data.
fn checksum_of(seq: u64, publisher: u64, data: &[u8]) -> u64 {
    let h = fnv1a(FNV_OFFSET, &seq.to_le_bytes());
    let h = fnv1a(h, &publisher.to_le_bytes());
    fnv1a(h, data)
}

macro_rules! checked {
    ($t:ty, $len:expr) => {
        impl Checked for $t {
            fn new(publisher: u64, seq: u64) -> Self {
                let mut data = [0u8; $len];
                fill(&mut data, publisher, seq);
                let checksum = checksum_of(seq, publisher, &data);
                Self {
                    seq,
                    publisher,
                    data,
                    checksum,
                }
            }
            fn seq(&self) -> u64 {
                self.seq
            }
            fn publisher(&self) -> u64 {
                self.publisher
            }
            fn compute_checksum(&self) -> u64 {
                checksum_of(self.seq, self.publisher, &self.data)
            }
            fn checksum(&self) -> u64 {
                self.checksum
            }
        }
    };
}
checked!(TestMsg, DATA_LEN);
checked!(SmallMsg, SMALL_DATA_LEN);

impl TestMsg {
    /// The message publisher `publisher` sends as number `seq`.
    pub fn new(publisher: u64, seq: u64) -> Self {
        <Self as Checked>::new(publisher, seq)
    }

    /// The checksum this message should carry.
    pub fn compute_checksum(&self) -> u64 {
        <Self as Checked>::compute_checksum(self)
    }

    /// Whether the checksum matches the contents.
    pub fn is_intact(&self) -> bool {
        <Self as Checked>::is_intact(self)
    }
}

/// Exit codes of `hako-test-helper`. Each error a test provokes has its own
/// code, so a test can tell "failed the way it should" from "failed".
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// An unexpected error (the message says which).
    pub const FAILURE: i32 = 1;
    /// Bad command line (clap's own code).
    pub const USAGE: i32 = 2;
    /// A received payload failed verification (checksum, order, extra sample).
    pub const VERIFY: i32 = 3;
    /// `ServiceError::IncompatibleType`.
    pub const INCOMPATIBLE_TYPE: i32 = 10;
    /// `ServiceError::IncompatibleQos`.
    pub const INCOMPATIBLE_QOS: i32 = 11;
    /// `ServiceError::Corrupted`.
    pub const CORRUPTED: i32 = 12;
    /// `NameError` (node or service name).
    pub const NAME: i32 = 13;
    /// `ServiceError::DoesNotExist`.
    pub const DOES_NOT_EXIST: i32 = 14;
    /// `ServiceError::AlreadyExists`.
    pub const ALREADY_EXISTS: i32 = 15;
    /// Any other `ServiceError`.
    pub const OTHER_SERVICE: i32 = 16;
    /// `LoanError::ExceedsMaxLoans`.
    pub const EXCEEDS_MAX_LOANS: i32 = 20;
    /// `LoanError::OutOfMemory`.
    pub const OUT_OF_MEMORY: i32 = 21;
    /// `ReceiveError::ExceedsMaxBorrowed`.
    pub const EXCEEDS_MAX_BORROWED: i32 = 22;
    /// `ReceiveError::CorruptedPublisher`.
    pub const CORRUPTED_PUBLISHER: i32 = 23;
    /// `ServiceError::IncompatiblePattern` (an event service opened as
    /// publish/subscribe, or the other way round).
    pub const INCOMPATIBLE_PATTERN: i32 = 17;
    /// `ListenerError::NotifiersGone`.
    pub const NOTIFIERS_GONE: i32 = 24;
    /// `ReceiveError::PublishersGone`.
    pub const PUBLISHERS_GONE: i32 = 25;
    /// `NotifyError::EventIdOutOfRange`.
    pub const EVENT_ID_OUT_OF_RANGE: i32 = 26;
    /// `EventPortCreateError::EventIdOutOfRange` (a default event id above
    /// the service's `event_id_max`).
    pub const DEFAULT_EVENT_ID_OUT_OF_RANGE: i32 = 27;
    /// `EventPortCreateError::TooMany`.
    pub const TOO_MANY_PORTS: i32 = 28;
    /// A waiting loop ended in another way than the test asked for (for
    /// example `WaitOutcome::TerminationRequest` where none was sent).
    pub const UNEXPECTED_WAKE: i32 = 29;
}

pub mod board;
pub mod harness;

//! The values of the blackboard tests: each a sequence number, words
//! derived from it, and a checksum over both, so a value mixed from two
//! updates (a torn read) is caught.

use hako::{BlackboardService, Node, ServiceError, ShmSafe};

/// Words of a [`Small`] value (64 bytes in all).
pub const SMALL_WORDS: usize = 6;
/// Words of a [`Big`] value (64 KiB in all).
pub const BIG_WORDS: usize = 8190;

/// A value of one cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ShmSafe)]
#[repr(C)]
pub struct Small {
    /// The update that wrote it.
    pub seq: u64,
    /// Derived from `seq`.
    pub words: [u64; SMALL_WORDS],
    /// Over `seq` and `words`.
    pub sum: u64,
}

/// A value of 64 KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ShmSafe)]
#[repr(C)]
pub struct Big {
    /// The update that wrote it.
    pub seq: u64,
    /// Derived from `seq`.
    pub words: [u64; BIG_WORDS],
    /// Over `seq` and `words`.
    pub sum: u64,
}

const _: () = assert!(std::mem::size_of::<Small>() == 64);
const _: () = assert!(std::mem::size_of::<Big>() == 64 << 10);

fn word(seq: u64, i: usize) -> u64 {
    (seq ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(i as u64 * 2 + 1)
}

fn sum(seq: u64, words: &[u64]) -> u64 {
    words
        .iter()
        .fold(seq.wrapping_mul(0x100_0000_01b3), |a, &w| {
            a.rotate_left(5) ^ w
        })
}

/// A value of the blackboard tests.
pub trait Stamped: ShmSafe + Copy {
    /// The value update `seq` writes.
    fn stamped(seq: u64) -> Self;
    /// Its update, if the value is whole (its words and checksum agree
    /// with its sequence number).
    fn whole(&self) -> Option<u64>;
}

/// One impl for both sizes: they differ only in their number of words.
macro_rules! stamped {
    ($($t:ty),*) => {$(
        impl Stamped for $t {
            fn stamped(seq: u64) -> Self {
                let words = std::array::from_fn(|i| word(seq, i));
                Self {
                    seq,
                    words,
                    sum: sum(seq, &words),
                }
            }

            fn whole(&self) -> Option<u64> {
                let ok = self.words.iter().enumerate().all(|(i, &w)| w == word(self.seq, i))
                    && self.sum == sum(self.seq, &self.words);
                ok.then_some(self.seq)
            }
        }
    )*};
}

stamped!(Small, Big);

/// The board of the tests, "it/board": entries "small" and "big", each
/// defaulting to the value of update 0, four readers at most.
pub fn open_board(node: &Node) -> Result<BlackboardService, ServiceError> {
    node.service_builder(&"it/board".try_into().expect("a valid name"))
        .blackboard()
        .entry::<Small>("small", Small::stamped(0))
        .entry::<Big>("big", Big::stamped(0))
        .max_readers(4)
        .open_or_create()
}

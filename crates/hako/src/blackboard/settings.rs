//! The settings of a blackboard, as its static description records them:
//! its entries (key and value type, fixed at creation) and its quality of
//! service; where each entry lies in the service's shared area.

use serde::{Deserialize, Serialize};

use crate::core::layout::LINE;
use crate::domain::service::error::{check_range, ServiceError};
use crate::domain::service::open::PatternSettings;
use crate::domain::service::tables::Tables;
use crate::port::payload::PayloadDescription;

/// Most entries a blackboard may have.
pub const MAX_ENTRIES: usize = 1024;
/// Longest key, in bytes.
pub const MAX_KEY_LEN: usize = 128;
/// Largest value, in bytes (64 MiB).
pub const MAX_VALUE_SIZE: u64 = 64 << 20;
/// Largest alignment of a value.
pub const MAX_VALUE_ALIGN: u64 = 64;
/// Largest shared area (all entries' buffers together): 4 GiB.
pub const MAX_BOARD_SIZE: u64 = 4 << 30;
/// Most readers a blackboard may admit (each entry has readers + 2
/// buffers, at most 256).
pub const MAX_READERS: u32 = 254;

/// Quality of service of a blackboard, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlackboardQos {
    /// Readers the service admits (each entry keeps this many buffers plus
    /// two, so that the writer never waits for one).
    pub max_readers: u32,
    /// Nodes that may hold the service open at once.
    pub max_nodes: u32,
}

/// One entry: its key and the type of its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryDescription {
    /// The key.
    pub key: String,
    /// The value's type (never a slice).
    pub value: PayloadDescription,
}

/// A blackboard's settings, after the fields every static description has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BlackboardSettings {
    /// Quality of service.
    pub qos: BlackboardQos,
    /// The entries, in creation order.
    pub entries: Vec<EntryDescription>,
}

/// Where an entry lies in the shared area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryPlace {
    /// Offset of its state word (its header: the state, then a sequence
    /// word per buffer).
    pub state: u64,
    /// Offset of its first buffer.
    pub buffers: u64,
    /// Bytes from one buffer to the next.
    pub stride: u64,
    /// Bytes of the value.
    pub size: u64,
    /// Number of buffers.
    pub count: u64,
}

/// The shared area: a header line, each entry's header (its state word and
/// a sequence word per buffer, see core/board.rs), then every entry's
/// buffers:
///
/// ```text
///  +0                 magic "HAKOBRD1", entries                 (LINE)
///  then, per entry    state, seq × count                         (header_size)
///  then, per entry    count buffers of stride bytes, a value each
/// ```
pub(crate) const BOARD_MAGIC: u64 = u64::from_le_bytes(*b"HAKOBRD1");

impl BlackboardSettings {
    /// Buffers per entry.
    pub(crate) fn buffers(&self) -> u64 {
        u64::from(self.qos.max_readers) + 2
    }

    /// Bytes of an entry's header: its state word and a sequence word per
    /// buffer, in whole lines.
    pub(crate) fn header_size(&self) -> u64 {
        (8 * (1 + self.buffers())).div_ceil(LINE) * LINE
    }

    /// Where each entry lies, and the area's size.
    pub(crate) fn places(&self) -> (Vec<EntryPlace>, u64) {
        let n = self.entries.len() as u64;
        let header = self.header_size();
        let mut next = LINE + header * n;
        let count = self.buffers();
        let places = self
            .entries
            .iter()
            .enumerate()
            .map(|(e, d)| {
                let stride = d.value.size.div_ceil(LINE) * LINE;
                let p = EntryPlace {
                    state: LINE + header * e as u64,
                    buffers: next,
                    stride,
                    size: d.value.size,
                    count,
                };
                next += stride * count;
                p
            })
            .collect();
        (places, next)
    }

    /// Bytes of a reader's area: a pin word per entry, then its interest
    /// bits, one per entry (set: wake it when that entry changes):
    ///
    /// ```text
    ///  +0        pins: [AtomicU64; entries]      0, or the pinned buffer + 1
    ///  +8·entries interest: [AtomicU64; ⌈entries/64⌉]
    /// ```
    pub(crate) fn reader_area_size(&self) -> u64 {
        (self.interest_offset() + 8 * self.interest_words()).div_ceil(LINE) * LINE
    }

    /// Offset of a reader's interest bits in its area.
    pub(crate) fn interest_offset(&self) -> u64 {
        8 * self.entries.len() as u64
    }

    /// Words of a reader's interest bits.
    pub(crate) fn interest_words(&self) -> u64 {
        (self.entries.len() as u64).div_ceil(64)
    }

    /// The entry of `key`, with its index.
    pub(crate) fn find(&self, key: &str) -> Option<(usize, &EntryDescription)> {
        self.entries.iter().enumerate().find(|(_, d)| d.key == key)
    }
}

/// Checks a key: 1 to 128 bytes, no control characters, no space at
/// either end.
pub(crate) fn check_key(key: &str) -> Result<(), ServiceError> {
    let bad = |rule| {
        Err(ServiceError::InvalidEntry {
            key: key.to_owned(),
            rule,
        })
    };
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return bad("a key has 1 to 128 bytes");
    }
    if key.chars().any(char::is_control) {
        return bad("a key has no control characters");
    }
    if key.trim() != key {
        return bad("a key neither starts nor ends with a space");
    }
    Ok(())
}

/// Checks an entry's value type.
pub(crate) fn check_value(key: &str, v: &PayloadDescription) -> Result<(), ServiceError> {
    let bad = |rule| {
        Err(ServiceError::InvalidEntry {
            key: key.to_owned(),
            rule,
        })
    };
    if v.slice {
        return bad("a value has a fixed size (an array, not a slice)");
    }
    if v.size == 0 || v.size > MAX_VALUE_SIZE {
        return bad("a value has 1 byte to 64 MiB");
    }
    if !v.align.is_power_of_two() || v.align > MAX_VALUE_ALIGN || v.size % v.align != 0 {
        return bad("a value's alignment is a power of two up to 64 that divides its size");
    }
    Ok(())
}

impl PatternSettings for BlackboardSettings {
    const NAME: &'static str = "blackboard";

    fn validate(&self) -> Result<(), ServiceError> {
        let q = &self.qos;
        check_range(
            "max_readers",
            q.max_readers,
            1,
            MAX_READERS,
            "between 1 and 254",
        )?;
        check_range("max_nodes", q.max_nodes, 1, 65536, "between 1 and 65536")?;
        if self.entries.is_empty() || self.entries.len() > MAX_ENTRIES {
            return Err(ServiceError::InvalidSetting {
                field: "entries",
                value: self.entries.len() as u64,
                rule: "between 1 and 1024",
            });
        }
        for (i, d) in self.entries.iter().enumerate() {
            check_key(&d.key)?;
            check_value(&d.key, &d.value)?;
            if self.entries[..i].iter().any(|o| o.key == d.key) {
                return Err(ServiceError::InvalidEntry {
                    key: d.key.clone(),
                    rule: "each key names one entry",
                });
            }
        }
        // Sizes are capped above, so the sum cannot overflow u64.
        let (_, size) = self.places();
        if size > MAX_BOARD_SIZE {
            return Err(ServiceError::InvalidSetting {
                field: "entries",
                value: size,
                rule: "all entries' buffers ((max_readers + 2) per entry) in at most 4 GiB",
            });
        }
        Ok(())
    }

    fn tables(&self) -> Tables {
        let q = &self.qos;
        Tables {
            nodes: q.max_nodes,
            first: 1,
            second: q.max_readers,
            extra_per_second: self.reader_area_size(),
            shared: self.places().1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(size: u64, align: u64) -> PayloadDescription {
        PayloadDescription {
            type_name: "T".into(),
            size,
            align,
            slice: false,
        }
    }

    fn board(entries: &[(&str, u64, u64)], readers: u32) -> BlackboardSettings {
        BlackboardSettings {
            qos: BlackboardQos {
                max_readers: readers,
                max_nodes: 8,
            },
            entries: entries
                .iter()
                .map(|&(k, size, align)| EntryDescription {
                    key: k.into(),
                    value: value(size, align),
                })
                .collect(),
        }
    }

    #[test]
    fn entries_lie_on_their_own_lines() {
        let b = board(&[("small", 8, 8), ("big", 4096, 64), ("odd", 3, 1)], 2);
        b.validate().unwrap();
        let (places, size) = b.places();
        // Four buffers: a state word and four sequence words in one line.
        assert_eq!(b.header_size(), LINE);
        assert_eq!((places[0].state, places[1].state), (LINE, 2 * LINE));
        assert_eq!(places[0].buffers, 4 * LINE);
        assert_eq!((places[0].stride, places[0].count), (LINE, 4));
        assert_eq!(places[1].stride, 4096);
        assert_eq!(places[1].buffers, places[0].buffers + 4 * LINE);
        assert_eq!(size, places[2].buffers + 4 * places[2].stride);
        assert!(places.iter().all(|p| p.buffers % LINE == 0 && p.size <= p.stride));
        assert_eq!(b.reader_area_size(), LINE);
        assert_eq!((b.interest_offset(), b.interest_words()), (24, 1));
        assert_eq!(b.find("big").unwrap().0, 1);
        // 254 readers: 256 sequence words and the state, in 17 lines.
        assert_eq!(board(&[("a", 8, 8)], 254).header_size(), 17 * LINE);
    }

    #[test]
    fn bad_entries_are_refused() {
        for (entries, why) in [
            (vec![], "between 1 and 1024"),
            (vec![("", 8, 8)], "1 to 128 bytes"),
            (vec![(" pose", 8, 8)], "space"),
            (vec![("a\nb", 8, 8)], "control"),
            (vec![("a", 8, 8), ("a", 4, 4)], "one entry"),
            (vec![("a", 0, 1)], "1 byte to 64 MiB"),
            (vec![("a", 12, 8)], "alignment"),
            (vec![("a", 128, 128)], "alignment"),
        ] {
            let e = board(&entries, 2).validate().unwrap_err().to_string();
            assert!(e.contains(why), "{entries:?}: {e}");
        }
        let mut b = board(&[("a", 8, 8)], 2);
        b.entries[0].value.slice = true;
        assert!(b.validate().unwrap_err().to_string().contains("fixed size"));
        assert!(board(&[("a", 8, 8)], 0).validate().is_err());
        assert!(board(&[("a", 8, 8)], 255).validate().is_err());
        // 64 MiB values, 254 readers: more than 4 GiB of buffers.
        let e = board(&[("a", 64 << 20, 8)], 254).validate().unwrap_err();
        assert!(e.to_string().contains("4 GiB"), "{e}");
    }
}

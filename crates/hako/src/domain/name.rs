//! Validated names of services and nodes.

use std::fmt;

/// Longest service name accepted, in bytes.
pub const MAX_SERVICE_NAME_LEN: usize = 255;
/// Longest node name accepted, in bytes.
pub const MAX_NODE_NAME_LEN: usize = 128;

/// Why a name was refused. Each variant names the rule that was broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    #[error("the name is empty; give it at least one character")]
    Empty,
    /// The name is longer than allowed.
    #[error("the name is {len} bytes long; at most {max} are allowed")]
    TooLong {
        /// Length of the refused name.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The name holds a character outside the allowed set.
    #[error(
        "the name holds {ch:?} at byte {at}; only ASCII letters, digits and '_', '-', '.', '/' are allowed"
    )]
    InvalidCharacter {
        /// The offending character.
        ch: char,
        /// Its byte offset.
        at: usize,
    },
    /// A node name holds a character outside its allowed set (that of
    /// service names, without '/').
    #[error(
        "the node name holds {ch:?} at byte {at}; only ASCII letters, digits and '_', '-', '.' are allowed"
    )]
    InvalidNodeCharacter {
        /// The offending character.
        ch: char,
        /// Its byte offset.
        at: usize,
    },
    /// A service name starts or ends with '/', or holds "//".
    #[error("the name has an empty segment (a leading or trailing '/', or \"//\"); segments between '/' must not be empty")]
    EmptySegment,
    /// A segment is "." or "..".
    #[error("the name has a segment \".\" or \"..\"; such segments are reserved")]
    DotSegment,
}

fn check_chars(s: &str, slash_ok: bool) -> Result<(), NameError> {
    for (at, ch) in s.char_indices() {
        let ok =
            ch.is_ascii_alphanumeric() || matches!(ch, '_' | '-' | '.') || (slash_ok && ch == '/');
        if !ok {
            return Err(if slash_ok {
                NameError::InvalidCharacter { ch, at }
            } else {
                NameError::InvalidNodeCharacter { ch, at }
            });
        }
    }
    Ok(())
}

/// The name of a service, such as `"My/Funk/ServiceName"`.
///
/// Rules: 1 to 255 bytes of ASCII letters, digits, `_`, `-`, `.` and `/`;
/// `/` separates non-empty segments; no segment is `.` or `..`.
///
/// ```
/// use hako::ServiceName;
/// let name: ServiceName = "My/Funk/ServiceName".try_into().unwrap();
/// assert_eq!(name.as_str(), "My/Funk/ServiceName");
/// assert!(ServiceName::new("bad name").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServiceName(String);

impl ServiceName {
    /// Validates `name`.
    pub fn new(name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        if name.len() > MAX_SERVICE_NAME_LEN {
            return Err(NameError::TooLong {
                len: name.len(),
                max: MAX_SERVICE_NAME_LEN,
            });
        }
        check_chars(name, true)?;
        for seg in name.split('/') {
            if seg.is_empty() {
                return Err(NameError::EmptySegment);
            }
            if seg == "." || seg == ".." {
                return Err(NameError::DotSegment);
            }
        }
        Ok(Self(name.to_owned()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A stable 64-bit hash of the name (FNV-1a), used to name its files.
    pub(crate) fn file_key(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.0.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

impl fmt::Display for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<&str> for ServiceName {
    type Error = NameError;
    fn try_from(s: &str) -> Result<Self, NameError> {
        Self::new(s)
    }
}

impl TryFrom<&String> for ServiceName {
    type Error = NameError;
    fn try_from(s: &String) -> Result<Self, NameError> {
        Self::new(s)
    }
}

impl TryFrom<String> for ServiceName {
    type Error = NameError;
    fn try_from(s: String) -> Result<Self, NameError> {
        Self::new(&s)
    }
}

/// The name of a node: 1 to 128 bytes of ASCII letters, digits, `_`, `-`, `.`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeName(String);

impl NodeName {
    /// Validates `name`.
    pub fn new(name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        if name.len() > MAX_NODE_NAME_LEN {
            return Err(NameError::TooLong {
                len: name.len(),
                max: MAX_NODE_NAME_LEN,
            });
        }
        check_chars(name, false)?;
        Ok(Self(name.to_owned()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names() {
        assert!(ServiceName::new("My/Funk/ServiceName").is_ok());
        assert!(ServiceName::new("a.b-c_d/1").is_ok());
        assert_eq!(ServiceName::new(""), Err(NameError::Empty));
        assert_eq!(ServiceName::new("/a"), Err(NameError::EmptySegment));
        assert_eq!(ServiceName::new("a/"), Err(NameError::EmptySegment));
        assert_eq!(ServiceName::new("a//b"), Err(NameError::EmptySegment));
        assert_eq!(ServiceName::new("a/../b"), Err(NameError::DotSegment));
        assert_eq!(
            ServiceName::new("a b"),
            Err(NameError::InvalidCharacter { ch: ' ', at: 1 })
        );
        assert!(matches!(
            ServiceName::new(&"x".repeat(256)),
            Err(NameError::TooLong { len: 256, max: 255 })
        ));
        assert!(ServiceName::new(&"x".repeat(255)).is_ok());
        let e = ServiceName::new("ü").unwrap_err().to_string();
        assert!(e.contains("only ASCII"), "{e}");
    }

    #[test]
    fn file_key_is_stable() {
        let a = ServiceName::new("a").unwrap();
        assert_eq!(a.file_key(), "af63dc4c8601ec8c");
        assert_ne!(a.file_key(), ServiceName::new("b").unwrap().file_key());
    }

    #[test]
    fn node_names() {
        assert!(NodeName::new("camera-1").is_ok());
        assert!(NodeName::new("").is_err());
        // A '/' is refused, and the error does not offer it.
        let e = NodeName::new("a/b").unwrap_err();
        assert_eq!(e, NameError::InvalidNodeCharacter { ch: '/', at: 1 });
        let allowed = |e: &str| e.split_once("only").map(|(_, a)| a.to_owned()).unwrap();
        assert!(!allowed(&e.to_string()).contains('/'), "{e}");
        let e = ServiceName::new("a b").unwrap_err().to_string();
        assert!(allowed(&e).contains("'/'"), "{e}");
    }
}

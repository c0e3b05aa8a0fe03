//! Where things live on the Zenoh side: the key expressions of a bridged
//! service, the identity of a domain, and the encodings a plain Zenoh
//! program needs to take part.
//!
//! With the default prefix `hako` and a service `robot/camera`:
//!
//! | key expression | what travels there |
//! |---|---|
//! | `hako/pubsub/robot/camera` | each sample, its payload's bytes as they lie in shared memory |
//! | `hako/event/robot/camera` | events: 16 bytes, the event id then a count, both u64 little-endian |
//! | `hako/rpc/robot/camera` | a queryable: a query's payload is the request's bytes, each reply one response |
//! | `hako/live/<domain>/<roles>/robot/camera` | a liveliness token: domain `<domain>` has the service with ports of its own: writers (`w`: publishers, notifiers, clients), readers (`r`: subscribers, listeners, servers) or both (`wr`) |
//! | `hako/desc/<domain>/robot/camera` | a queryable answering the service's description (JSON), with the longest messages of that domain's ports |
//! | `hako/bridge/<domain>` | a liveliness token: the active bridge of domain `<domain>` |
//!
//! A hako service name (letters, digits, `_ - .`, segments between `/`)
//! is always a valid key expression, so it is used as it is. A domain is
//! named by 16 hexadecimal digits (see [`DomainId`]).
//!
//! Every sample and reply a bridge puts carries an attachment: the 8 bytes
//! of its domain's id (little-endian). A bridge drops what carries its own
//! domain's id; a plain Zenoh program may leave the attachment out. The
//! end of a response stream is one more reply, with no payload and the
//! attachment's id followed by the byte `E`: a query whose replies stop
//! without it was not served to its end (the serving host vanished, or
//! nobody serves), and the bridge that forwarded it aborts the request.

use std::fmt;
use std::path::Path;

/// The identity of a hako domain (a root directory on one machine): a
/// hash of the machine's id and the root's canonical path, the same for
/// every bridge of that domain and different for every other domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DomainId(pub u64);

impl fmt::Display for DomainId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl DomainId {
    /// The id of the domain rooted at `root` on this machine.
    pub fn of_root(root: &Path) -> Self {
        let machine = machine_identity();
        // Made absolute without touching the file system (hako follows no
        // link in a root's path: the path is the directory).
        let root = lexical_absolute(root);
        let mut h = Fnv::default();
        h.write(machine.as_bytes());
        h.write(&[0]);
        h.write(root.as_os_str().as_encoded_bytes());
        Self(h.0)
    }

    /// Parses the 16 hex digits of [`Display`](fmt::Display).
    pub fn parse(s: &str) -> Option<Self> {
        (s.len() == 16)
            .then(|| u64::from_str_radix(s, 16).ok())
            .flatten()
            .map(Self)
    }

    /// The attachment that marks a message as this domain's.
    pub fn attachment(&self) -> [u8; 8] {
        self.0.to_le_bytes()
    }

    /// The attachment of the reply that ends a response stream.
    pub fn end_attachment(&self) -> [u8; 9] {
        let mut a = [b'E'; 9];
        a[..8].copy_from_slice(&self.attachment());
        a
    }

    /// The domain an attachment names, if it is one (its first 8 bytes).
    pub fn from_attachment(bytes: &[u8]) -> Option<Self> {
        Some(Self(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?)))
    }
}

/// Whether an attachment marks the end of a response stream.
pub fn is_end(attachment: &[u8]) -> bool {
    attachment.len() == 9 && attachment[8] == b'E'
}

impl DomainId {}

/// `path` made absolute against the working directory, `.` and `..`
/// taken lexically.
fn lexical_absolute(path: &Path) -> std::path::PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut out = std::path::PathBuf::from("/");
    for c in abs.components() {
        match c {
            std::path::Component::Normal(p) => out.push(p),
            std::path::Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// What tells this machine from others: its systemd machine id, else its
/// host name.
fn machine_identity() -> String {
    for path in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
        if let Ok(s) = std::fs::read_to_string(path) {
            let s = s.trim();
            if !s.is_empty() {
                return s.to_owned();
            }
        }
    }
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// 64-bit FNV-1a: a hash whose value does not depend on the build (the
/// standard library's may change between Rust versions, and two bridges of
/// one domain may be built apart).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Which ports a domain has of a service, besides its bridge's: writers
/// (publishers, notifiers, clients) and readers (subscribers, listeners,
/// servers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Roles {
    /// Publishers, notifiers or clients.
    pub writers: bool,
    /// Subscribers, listeners or servers.
    pub readers: bool,
}

impl fmt::Display for Roles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match (self.writers, self.readers) {
            (true, true) => "wr",
            (true, false) => "w",
            (false, true) => "r",
            (false, false) => "none",
        })
    }
}

impl Roles {
    /// Parses what [`Display`](fmt::Display) writes.
    pub fn parse(s: &str) -> Option<Self> {
        let (writers, readers) = match s {
            "wr" => (true, true),
            "w" => (true, false),
            "r" => (false, true),
            "none" => (false, false),
            _ => return None,
        };
        Some(Self { writers, readers })
    }
}

/// The key expressions of one bridge (see the module's table).
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys under `prefix` (`hako` by default; bridges with different
    /// prefixes ignore each other on a shared Zenoh network).
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.trim_end_matches('/').to_owned(),
        }
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Samples of publish/subscribe service `service`.
    pub fn pubsub(&self, service: &str) -> String {
        format!("{}/pubsub/{service}", self.prefix)
    }

    /// Events of event service `service`.
    pub fn event(&self, service: &str) -> String {
        format!("{}/event/{service}", self.prefix)
    }

    /// Requests of request/response service `service`.
    pub fn rpc(&self, service: &str) -> String {
        format!("{}/rpc/{service}", self.prefix)
    }

    /// The liveliness token of `service` in `domain`, which has ports of
    /// `roles` there.
    pub fn live(&self, domain: DomainId, roles: Roles, service: &str) -> String {
        format!("{}/live/{domain}/{roles}/{service}", self.prefix)
    }

    /// Every liveliness token of every domain.
    pub fn all_live(&self) -> String {
        format!("{}/live/*/*/**", self.prefix)
    }

    /// The domain, roles and service a liveliness token's key names.
    pub fn parse_live<'k>(&self, key: &'k str) -> Option<(DomainId, Roles, &'k str)> {
        let rest = key.strip_prefix(&self.prefix)?.strip_prefix("/live/")?;
        let (domain, rest) = rest.split_once('/')?;
        let (roles, service) = rest.split_once('/')?;
        Some((DomainId::parse(domain)?, Roles::parse(roles)?, service))
    }

    /// The liveliness token of the active bridge of `domain`.
    pub fn bridge(&self, domain: DomainId) -> String {
        format!("{}/bridge/{domain}", self.prefix)
    }

    /// Every bridge's liveliness token.
    pub fn all_bridges(&self) -> String {
        format!("{}/bridge/*", self.prefix)
    }

    /// The domain a bridge's liveliness token names.
    pub fn parse_bridge(&self, key: &str) -> Option<DomainId> {
        DomainId::parse(key.strip_prefix(&self.prefix)?.strip_prefix("/bridge/")?)
    }

    /// The description of `service` as `domain` serves it.
    pub fn desc(&self, domain: DomainId, service: &str) -> String {
        format!("{}/desc/{domain}/{service}", self.prefix)
    }

    /// Every description `domain` serves.
    pub fn all_desc(&self, domain: DomainId) -> String {
        format!("{}/desc/{domain}/**", self.prefix)
    }

    /// The service a description query's key names.
    pub fn parse_desc<'k>(&self, domain: DomainId, key: &'k str) -> Option<&'k str> {
        let head = format!("{}/desc/{domain}/", self.prefix);
        key.strip_prefix(&head)
    }
}

/// An event as it travels: its id and how many times it fired.
pub fn encode_event(id: u64, count: u64) -> [u8; 16] {
    let mut b = [0; 16];
    b[..8].copy_from_slice(&id.to_le_bytes());
    b[8..].copy_from_slice(&count.to_le_bytes());
    b
}

/// The id and count of an event's 16 bytes; 8 bytes are an id fired once.
pub fn decode_event(bytes: &[u8]) -> Option<(u64, u64)> {
    match bytes.len() {
        8 => Some((u64::from_le_bytes(bytes.try_into().ok()?), 1)),
        16 => Some((
            u64::from_le_bytes(bytes[..8].try_into().ok()?),
            u64::from_le_bytes(bytes[8..].try_into().ok()?),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        let k = Keys::new("hako/");
        let d = DomainId(0x0123_4567_89ab_cdef);
        assert_eq!(k.pubsub("a/b"), "hako/pubsub/a/b");
        let wr = Roles {
            writers: true,
            readers: true,
        };
        assert_eq!(k.live(d, wr, "a/b"), "hako/live/0123456789abcdef/wr/a/b");
        assert_eq!(k.parse_live(&k.live(d, wr, "a/b")), Some((d, wr, "a/b")));
        let r = Roles {
            writers: false,
            readers: true,
        };
        assert_eq!(k.parse_live(&k.live(d, r, "w")), Some((d, r, "w")));
        assert_eq!(k.parse_live("hako/live/xyz/w/a"), None);
        assert_eq!(k.parse_live("hako/live/0123456789abcdef/x/a"), None);
        assert_eq!(k.parse_live("other/live/0123456789abcdef/w/a"), None);
        assert_eq!(k.parse_desc(d, &k.desc(d, "x/y.z")), Some("x/y.z"));
        assert_eq!(k.parse_desc(DomainId(1), &k.desc(d, "x")), None);
        assert_eq!(k.bridge(d), "hako/bridge/0123456789abcdef");
        assert_eq!(k.parse_bridge(&k.bridge(d)), Some(d));
        assert_eq!(k.parse_bridge("hako/bridge/0123"), None);
    }

    #[test]
    fn domains_differ_by_root_and_attach_as_eight_bytes() {
        let a = DomainId::of_root(Path::new("/dev/shm/hako-a"));
        let b = DomainId::of_root(Path::new("/dev/shm/hako-b"));
        assert_ne!(a, b);
        assert_eq!(a, DomainId::of_root(Path::new("/dev/shm/hako-a")));
        assert_eq!(DomainId::parse(&a.to_string()), Some(a));
        assert_eq!(DomainId::from_attachment(&a.attachment()), Some(a));
        assert_eq!(DomainId::from_attachment(b"short"), None);
        assert_eq!(DomainId::from_attachment(&a.end_attachment()), Some(a));
        assert!(is_end(&a.end_attachment()) && !is_end(&a.attachment()));
    }

    #[test]
    fn events_encode_as_id_and_count() {
        assert_eq!(decode_event(&encode_event(7, 3)), Some((7, 3)));
        assert_eq!(decode_event(&9u64.to_le_bytes()), Some((9, 1)));
        assert_eq!(decode_event(b"odd"), None);
    }
}

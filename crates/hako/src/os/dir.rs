//! Directories held open: a domain root and the service directories in it.
//!
//! Every file hako makes, opens, renames or removes in a domain is named
//! relative to a directory descriptor of this module, one name at a time,
//! and no call here follows a symbolic link. A path is resolved once, when
//! a root is opened: component by component from `/`, each opened with
//! `O_NOFOLLOW | O_DIRECTORY` relative to the one above, and each judged by
//! the owner and mode of the directory actually opened (`fstat` of the
//! descriptor, never a path that could change meanwhile). After that, a
//! directory above the root renamed or replaced by a link changes nothing:
//! the descriptor still names the directory that was checked.
//!
//! The rule for a root ([`Dir::open_root`]) is the one ssh applies to a
//! home directory: it and every directory above it belong to this user or
//! to root, and nobody else may write to them (a sticky directory, such as
//! `/dev/shm` or `/tmp`, is fine above the root: others may add entries
//! there but not rename or remove ours). Inside a trusted root every entry
//! is still judged before it is used ([`Dir::trust`], [`trusted`]), as a
//! member of a shared domain's group may have made it; a symbolic link is
//! refused wherever it is found, with an error that says so
//! ([`refusal`]).
//!
//! Files are opened `O_NONBLOCK` as well, so that a FIFO planted where a
//! regular file belongs cannot hang an open, and are checked to be of the
//! kind expected before they are read.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::shm::{distrust, Access, FILE_MODE};

/// How every directory is opened: for reading its entries, never through
/// a link, never inherited by a child process.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// How every file is opened, besides its access mode.
const FILE_FLAGS: OFlags = OFlags::NOFOLLOW
    .union(OFlags::CLOEXEC)
    .union(OFlags::NONBLOCK);

/// Why hako refused an entry of a domain: a symbolic link, an entry of the
/// wrong kind, or one an untrusted user owns or may write. Carried inside
/// an [`io::Error`] of kind `PermissionDenied`; [`refusal`] finds it.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// An error that refuses an entry for the reason `why`.
pub fn refuse(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Refused(why.into()))
}

/// The reason, if `e` is hako's refusal of an entry (not the kernel's).
pub fn refusal(e: &io::Error) -> Option<&str> {
    e.get_ref()?
        .downcast_ref::<Refused>()
        .map(|r| r.0.as_str())
}

/// What is said of a symbolic link found where hako looked for its own
/// entry.
const LINK: &str = "it is a symbolic link (hako makes none and follows none); remove it";

/// Why a domain root could not be opened.
#[derive(Debug)]
pub enum RootError {
    /// A directory of the path could not be opened or made.
    Io(io::Error),
    /// A directory of the path is not to be trusted: what is wrong, and
    /// how to fix it.
    Untrusted(String),
}

/// How a root is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootMode {
    /// Made (with the missing directories above it) if missing; the whole
    /// path checked.
    Create,
    /// Opened if it exists; the whole path checked.
    Open,
    /// Opened if it exists, nothing judged but links: for reading a domain
    /// that may be someone else's, never for changing it.
    ReadAnyway,
}

/// A directory held open. Clones share the descriptor.
#[derive(Clone)]
pub struct Dir {
    fd: Arc<OwnedFd>,
    path: Arc<Path>,
}

impl std::fmt::Debug for Dir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Dir").field(&self.path).finish()
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// An entry of a directory, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name (entries whose names are not UTF-8 are never hako's and
    /// are not listed).
    pub name: String,
    /// Its kind, not followed if it is a link.
    pub kind: FileType,
}

impl Entry {
    /// Whether it is a symbolic link.
    pub fn is_link(&self) -> bool {
        self.kind == FileType::Symlink
    }
}

impl Dir {
    /// Opens the domain root `path` (made absolute against the working
    /// directory, `..` taken lexically) one component at a time from `/`,
    /// refusing links and, unless `mode` is [`RootMode::ReadAnyway`],
    /// directories that users other than this one and root could change:
    /// the root must pass [`distrust`] for `access`, every directory above
    /// it too, or be sticky and belong to this user or root. A root made
    /// here gets the permissions of `access` (and its missing parents
    /// `0700`).
    pub fn open_root(path: &Path, access: Access, mode: RootMode) -> Result<Self, RootError> {
        let abs = if path.is_absolute() {
            path.to_owned()
        } else {
            std::env::current_dir().map_err(RootError::Io)?.join(path)
        };
        let mut parts: Vec<OsString> = Vec::new();
        for c in abs.components() {
            match c {
                Component::Normal(p) => parts.push(p.to_owned()),
                Component::ParentDir => {
                    parts.pop();
                }
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        let mut here = PathBuf::from("/");
        let mut fd = rfs::open("/", DIR_FLAGS, Mode::empty()).map_err(|e| RootError::Io(e.into()))?;
        let judge = |fd: &OwnedFd, at: &Path, last: bool| -> Result<(), RootError> {
            if mode == RootMode::ReadAnyway {
                return Ok(());
            }
            let st = rfs::fstat(fd).map_err(|e| RootError::Io(e.into()))?;
            let why = if last {
                distrust(st.st_uid, st.st_gid, st.st_mode, access, false)
            } else {
                ancestor_distrust(&st, access)
            };
            match why {
                None => Ok(()),
                Some(why) if last => Err(RootError::Untrusted(why)),
                Some(why) => Err(RootError::Untrusted(format!(
                    "the directory {} above it: {why}",
                    at.display()
                ))),
            }
        };
        judge(&fd, &here, parts.is_empty())?;
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let next = here.join(part);
            let opened = match rfs::openat(&fd, part.as_os_str(), DIR_FLAGS, Mode::empty()) {
                Err(Errno::NOENT) if mode == RootMode::Create => {
                    let made = match rfs::mkdirat(&fd, part.as_os_str(), Mode::from_raw_mode(0o700)) {
                        Ok(()) => true,
                        Err(Errno::EXIST) => false,
                        Err(e) => return Err(RootError::Io(e.into())),
                    };
                    let child = rfs::openat(&fd, part.as_os_str(), DIR_FLAGS, Mode::empty());
                    if let (true, true, Ok(c)) = (made, last, &child) {
                        if access != Access::default() {
                            access.apply(c, true).map_err(RootError::Io)?;
                        }
                    }
                    child
                }
                other => other,
            };
            let child = opened.map_err(|e| match explain(&fd, part.as_os_str(), e) {
                e if refusal(&e).is_some() => RootError::Untrusted(if last {
                    refusal(&e).unwrap_or_default().to_owned()
                } else {
                    format!(
                        "the directory {} above it: {}",
                        next.display(),
                        link_advice(&fd, part.as_os_str())
                    )
                }),
                e => RootError::Io(e),
            })?;
            judge(&child, &next, last)?;
            fd = child;
            here = next;
        }
        Ok(Self {
            fd: Arc::new(fd),
            path: here.into(),
        })
    }

    /// The path this directory was opened by (for messages: operations go
    /// through the descriptor).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of the entry `name` (for messages).
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The directory's own status.
    pub fn stat(&self) -> io::Result<Stat> {
        Ok(rfs::fstat(&*self.fd)?)
    }

    /// Whether this directory may be trusted in a domain of `access`
    /// ([`distrust`]; a member of its group may own it): `Err` says why not.
    pub fn trust(&self, access: Access) -> Result<(), String> {
        trusted(&*self.fd, access, FileType::Directory)
    }

    /// Whether the entry `name` may be trusted in a domain of `access`, as
    /// [`trust`](Self::trust) judges a directory: a link never is; a
    /// missing entry is not judged (whoever opens it reports the absence).
    /// Judged by name: sound once this directory is trusted, as nobody
    /// else can then replace the entry between this check and its open.
    pub fn trust_entry(&self, name: &str, access: Access) -> Result<(), String> {
        let st = match self.stat_entry(name) {
            Ok(Some(st)) => st,
            Ok(None) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
            return Err(LINK.to_owned());
        }
        match distrust(st.st_uid, st.st_gid, st.st_mode, access, true) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// The status of the entry `name`, not followed if it is a link;
    /// `None` if there is none.
    pub fn stat_entry(&self, name: &str) -> io::Result<Option<Stat>> {
        match rfs::statat(&*self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether an entry `name` exists (of any kind; a link is not
    /// followed).
    pub fn has(&self, name: &str) -> bool {
        matches!(self.stat_entry(name), Ok(Some(_)))
    }

    /// Opens the directory `name` in this one; a link is refused.
    pub fn subdir(&self, name: &str) -> io::Result<Self> {
        let fd = rfs::openat(&*self.fd, name, DIR_FLAGS, Mode::empty())
            .map_err(|e| explain(&self.fd, name.as_ref(), e))?;
        Ok(Self {
            fd: Arc::new(fd),
            path: self.path.join(name).into(),
        })
    }

    /// Makes the directory `name` (with the permissions of `access`) and
    /// opens it; `AlreadyExists` if there is an entry of that name.
    pub fn make_subdir(&self, name: &str, access: Access) -> io::Result<Self> {
        rfs::mkdirat(&*self.fd, name, Mode::from_raw_mode(0o700))?;
        let dir = self.subdir(name)?;
        if access != Access::default() {
            access.apply(&*dir.fd, true)?;
        }
        Ok(dir)
    }

    /// Creates the file `name` exclusively with `size` bytes reserved, with
    /// the permissions of `access`. Fails with `AlreadyExists` if there is
    /// an entry of that name (a link included), and with `StorageFull`
    /// when the file system cannot hold `size` bytes (the partial file is
    /// removed then): a full tmpfs is an error now, never a `SIGBUS` later.
    pub fn create_file(&self, name: &str, size: u64, access: Access) -> io::Result<OwnedFd> {
        let fd = rfs::openat(
            &*self.fd,
            name,
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | FILE_FLAGS,
            Mode::from_raw_mode(FILE_MODE),
        )?;
        let set_up = || -> io::Result<()> {
            if access != Access::default() {
                access.apply(&fd, false)?;
            }
            if size > 0 {
                rfs::fallocate(&fd, rfs::FallocateFlags::empty(), 0, size)?;
            }
            Ok(())
        };
        if let Err(e) = set_up() {
            let _ = self.remove_file(name);
            return Err(e);
        }
        Ok(fd)
    }

    /// Opens the regular file `name` read-write, making it (empty, with
    /// the permissions of `access`) if there is none; a link, or an entry
    /// of another kind, is refused.
    pub fn open_or_create_file(&self, name: &str, access: Access) -> io::Result<OwnedFd> {
        match self.create_file(name, 0, access) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => self.open_file(name, true),
            other => other,
        }
    }

    /// Writes `data` into a new file `name` (replacing a file of that name
    /// left by a writer that died; never writing through a link).
    pub fn write_file(&self, name: &str, data: &[u8], access: Access) -> io::Result<()> {
        match self.remove_file(name) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let fd = self.create_file(name, 0, access)?;
        write_all(&fd, data).inspect_err(|_| {
            let _ = self.remove_file(name);
        })
    }

    /// Opens the regular file `name`, read-write or read-only; a link, or
    /// an entry of another kind, is refused.
    pub fn open_file(&self, name: &str, writable: bool) -> io::Result<OwnedFd> {
        let access = if writable {
            OFlags::RDWR
        } else {
            OFlags::RDONLY
        };
        self.open_kind(name, access, FileType::RegularFile)
    }

    /// Reads the regular file `name` as UTF-8 text of at most `limit`
    /// bytes (`InvalidData` if larger or not text).
    pub fn read_text(&self, name: &str, limit: usize) -> io::Result<String> {
        let fd = self.open_file(name, false)?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match rustix::io::read(&fd, &mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() > limit {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{name} is larger than {limit} bytes"),
                        ));
                    }
                }
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        String::from_utf8(buf).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidData, format!("{name} is not UTF-8 text"))
        })
    }

    /// Makes the FIFO `name` (with the permissions of `access`) and opens
    /// it read-write, non-blocking (its owner's end).
    pub fn make_fifo(&self, name: &str, access: Access) -> io::Result<OwnedFd> {
        rfs::mknodat(
            &*self.fd,
            name,
            FileType::Fifo,
            Mode::from_raw_mode(FILE_MODE),
            0,
        )?;
        let opened = self
            .open_kind(name, OFlags::RDWR, FileType::Fifo)
            .and_then(|fd| {
                if access != Access::default() {
                    access.apply(&fd, false)?;
                }
                Ok(fd)
            });
        if opened.is_err() {
            let _ = self.remove_file(name);
        }
        opened
    }

    /// Opens the FIFO `name` for writing, non-blocking (a sender's end);
    /// `ENXIO` when nobody holds it open for reading. Anything but a FIFO
    /// is refused.
    pub fn open_fifo_writer(&self, name: &str) -> io::Result<OwnedFd> {
        self.open_kind(name, OFlags::WRONLY, FileType::Fifo)
    }

    fn open_kind(&self, name: &str, access: OFlags, kind: FileType) -> io::Result<OwnedFd> {
        let fd = rfs::openat(&*self.fd, name, access | FILE_FLAGS, Mode::empty())
            .map_err(|e| explain(&self.fd, name.as_ref(), e))?;
        let st = rfs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != kind {
            return Err(refuse(format!(
                "it is not a {} (hako did not make it); remove it",
                kind_name(kind)
            )));
        }
        Ok(fd)
    }

    /// Renames the entry `from` to `to`, both in this directory (replacing
    /// what `to` names, as `rename` does; a link is moved, not followed).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(rfs::renameat(&*self.fd, from, &*self.fd, to)?)
    }

    /// Removes the entry `name` (a link itself, never its target; not a
    /// directory).
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        Ok(rfs::unlinkat(&*self.fd, name, AtFlags::empty())?)
    }

    /// Removes the empty directory `name`.
    pub fn remove_dir(&self, name: &str) -> io::Result<()> {
        Ok(rfs::unlinkat(&*self.fd, name, AtFlags::REMOVEDIR)?)
    }

    /// The entries of this directory (`.` and `..` and names that are not
    /// UTF-8 left out), each with its kind, a link's not followed.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        for e in rfs::Dir::read_from(&*self.fd)? {
            let e = e?;
            let Ok(name) = e.file_name().to_str() else {
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            let kind = match e.file_type() {
                FileType::Unknown => match self.stat_entry(name) {
                    Ok(Some(st)) => FileType::from_raw_mode(st.st_mode),
                    _ => continue,
                },
                k => k,
            };
            out.push(Entry {
                name: name.to_owned(),
                kind,
            });
        }
        Ok(out)
    }

    /// A new open file description of this directory, for a `flock` of
    /// its own (locks are per description: threads of one process that
    /// lock through their own descriptions exclude each other).
    pub fn reopen(&self) -> io::Result<OwnedFd> {
        Ok(rfs::openat(&*self.fd, ".", DIR_FLAGS, Mode::empty())?)
    }

    /// Whether the entry `name` is the file open as `fd` (same device and
    /// inode); false if there is no such entry.
    pub fn names(&self, name: &str, fd: &impl AsFd) -> io::Result<bool> {
        let Some(st) = self.stat_entry(name)? else {
            return Ok(false);
        };
        let mine = rfs::fstat(fd)?;
        Ok(st.st_dev == mine.st_dev && st.st_ino == mine.st_ino)
    }

    /// Whether `other` is this very directory (same device and inode).
    pub fn same_as(&self, st: &Stat) -> bool {
        self.stat()
            .is_ok_and(|me| me.st_dev == st.st_dev && me.st_ino == st.st_ino)
    }
}

/// Whether the open file `fd` may be trusted in a domain of `access`: of
/// the `kind` expected and passing [`distrust`] (a member of a shared
/// domain's group may own it). `Err` says why not.
pub fn trusted(fd: &impl AsFd, access: Access, kind: FileType) -> Result<(), String> {
    let st = rfs::fstat(fd).map_err(|e| e.to_string())?;
    if FileType::from_raw_mode(st.st_mode) != kind {
        return Err(format!(
            "it is not a {} (hako did not make it); remove it",
            kind_name(kind)
        ));
    }
    match distrust(st.st_uid, st.st_gid, st.st_mode, access, true) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// Whether the open file `fd` is a regular file that may be trusted in a
/// domain of `access` ([`trusted`]).
pub fn trusted_file(fd: &impl AsFd, access: Access) -> bool {
    trusted(fd, access, FileType::RegularFile).is_ok()
}

/// Why a directory above a root is not to be trusted: the rule of the
/// root itself, except that a sticky directory of this user's or root's
/// may be writable by others (they cannot rename what is not theirs).
fn ancestor_distrust(st: &Stat, access: Access) -> Option<String> {
    let me = rustix::process::geteuid().as_raw();
    if st.st_mode & 0o1000 != 0 && (st.st_uid == me || st.st_uid == 0) {
        return None;
    }
    distrust(st.st_uid, st.st_gid, st.st_mode, access, false)
}

/// The error of an open of `name` in `dir` that failed with `e`: a
/// refusal if the entry is a symbolic link (which `O_NOFOLLOW` reports as
/// `ELOOP`, or `ENOTDIR` with `O_DIRECTORY`).
fn explain(dir: &OwnedFd, name: &std::ffi::OsStr, e: Errno) -> io::Error {
    if matches!(e, Errno::LOOP | Errno::NOTDIR) {
        if let Ok(st) = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Symlink => return refuse(LINK),
                FileType::Directory => {}
                _ if e == Errno::NOTDIR => {
                    return refuse("it is not a directory (hako did not make it); remove it")
                }
                _ => {}
            }
        }
    }
    e.into()
}

/// What to say of a link found above a root: where it points, so the user
/// can name the real directory.
fn link_advice(dir: &OwnedFd, name: &std::ffi::OsStr) -> String {
    match rfs::readlinkat(dir, name, Vec::new()) {
        Ok(to) => format!(
            "it is a symbolic link (to {}); hako follows none: name the real directory",
            to.to_string_lossy()
        ),
        Err(_) => "it is not a directory".to_owned(),
    }
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "directory",
        FileType::Fifo => "FIFO",
        _ => "regular file",
    }
}

/// Writes all of `data` to `fd`.
pub fn write_all(fd: &OwnedFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        match rustix::io::write(fd, data) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// A scratch directory under the system's temporary directory, removed
    /// on drop; `victim` holds files that must survive every test.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let p = std::env::temp_dir().join(format!("hako-dir-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(p.join("victim")).unwrap();
            std::fs::write(p.join("victim/precious"), b"keep me").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
            Self(p)
        }

        fn victim_intact(&self) -> bool {
            std::fs::read(self.0.join("victim/precious")).is_ok_and(|b| b == b"keep me")
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn refused_because(e: &io::Error) -> String {
        refusal(e).unwrap_or_else(|| panic!("not a refusal: {e}")).to_owned()
    }

    #[test]
    fn a_root_that_is_a_link_is_refused_and_its_target_untouched() {
        let s = Scratch::new("root-link");
        symlink(s.0.join("victim"), s.0.join("root")).unwrap();
        for mode in [RootMode::Create, RootMode::Open, RootMode::ReadAnyway] {
            match Dir::open_root(&s.0.join("root"), Access::default(), mode) {
                Err(RootError::Untrusted(why)) => assert!(why.contains("symbolic link"), "{why}"),
                other => panic!("{mode:?}: {other:?}"),
            }
        }
        assert!(s.victim_intact());
    }

    #[test]
    fn a_link_above_the_root_is_refused_with_its_target_named() {
        let s = Scratch::new("parent-link");
        std::fs::create_dir(s.0.join("real")).unwrap();
        symlink(s.0.join("real"), s.0.join("alias")).unwrap();
        match Dir::open_root(&s.0.join("alias/domain"), Access::default(), RootMode::Create) {
            Err(RootError::Untrusted(why)) => {
                assert!(why.contains("alias") && why.contains("real"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert!(!s.0.join("real/domain").exists(), "nothing made through the link");
        // The real path works, and `..` is taken lexically.
        let dir = Dir::open_root(&s.0.join("x/../real/domain"), Access::default(), RootMode::Create)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(dir.path(), s.0.join("real/domain"));
        assert!(s.0.join("real/domain").is_dir());
    }

    #[test]
    fn a_root_or_a_parent_others_may_write_is_refused_unless_sticky() {
        let s = Scratch::new("writable");
        let open = std::fs::Permissions::from_mode(0o777);
        std::fs::create_dir(s.0.join("open")).unwrap();
        std::fs::set_permissions(s.0.join("open"), open.clone()).unwrap();
        match Dir::open_root(&s.0.join("open"), Access::default(), RootMode::Open) {
            Err(RootError::Untrusted(why)) => assert!(why.contains("every user may write"), "{why}"),
            other => panic!("{other:?}"),
        }
        match Dir::open_root(&s.0.join("open/domain"), Access::default(), RootMode::Create) {
            Err(RootError::Untrusted(why)) => {
                assert!(why.contains("above it") && why.contains("open"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert!(!s.0.join("open/domain").exists());
        // Read anyway: judged by nothing but links.
        assert!(Dir::open_root(&s.0.join("open"), Access::default(), RootMode::ReadAnyway).is_ok());
        // Sticky, like /tmp and /dev/shm: fine above a root.
        std::fs::set_permissions(s.0.join("open"), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(Dir::open_root(&s.0.join("open/domain"), Access::default(), RootMode::Create).is_ok());
    }

    #[test]
    fn nothing_inside_follows_a_link() {
        let s = Scratch::new("inside");
        let root = Dir::open_root(&s.0.join("root"), Access::default(), RootMode::Create).unwrap();
        let victim = s.0.join("victim");
        symlink(&victim, s.0.join("root/svc")).unwrap();
        symlink(victim.join("precious"), s.0.join("root/file")).unwrap();
        assert!(refused_because(&root.subdir("svc").unwrap_err()).contains("symbolic link"));
        assert!(refused_because(&root.open_file("file", true).unwrap_err()).contains("symbolic link"));
        assert!(root.read_text("file", 100).is_err());
        assert!(root.open_fifo_writer("file").is_err());
        assert_eq!(
            root.create_file("file", 10, Access::default()).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert!(root.open_or_create_file("file", Access::default()).is_err());
        assert!(root.make_subdir("svc", Access::default()).is_err());
        // A write replaces the link itself, never the file it names.
        root.write_file("file", b"new", Access::default()).unwrap();
        assert_eq!(std::fs::read(s.0.join("root/file")).unwrap(), b"new");
        // Removal takes the link away, never its target.
        root.remove_file("svc").unwrap();
        assert!(root.trust_entry("file", Access::default()).is_ok());
        symlink(&victim, s.0.join("root/svc")).unwrap();
        assert!(root.trust_entry("svc", Access::default()).unwrap_err().contains("symbolic link"));
        let names: Vec<_> = root.entries().unwrap().into_iter().map(|e| (e.name.clone(), e.is_link())).collect();
        assert!(names.contains(&("svc".to_owned(), true)), "{names:?}");
        assert!(s.victim_intact());
    }

    #[test]
    fn a_held_directory_stays_itself_when_its_name_is_taken_by_a_link() {
        let s = Scratch::new("swap");
        let root = Dir::open_root(&s.0.join("root"), Access::default(), RootMode::Create).unwrap();
        let svc = root.make_subdir("svc", Access::default()).unwrap();
        svc.write_file("a", b"1", Access::default()).unwrap();
        // Someone renames the directory and puts a link in its place.
        std::fs::rename(s.0.join("root/svc"), s.0.join("root/moved")).unwrap();
        symlink(s.0.join("victim"), s.0.join("root/svc")).unwrap();
        for e in svc.entries().unwrap() {
            svc.remove_file(&e.name).unwrap();
        }
        // The directory's name no longer names it: it is not removed.
        let st = root.stat_entry("svc").unwrap().unwrap();
        assert!(!svc.same_as(&st));
        assert!(!s.0.join("root/moved/a").exists());
        assert!(s.victim_intact());
    }

    #[test]
    fn a_fifo_or_a_directory_where_a_file_belongs_is_refused_without_blocking() {
        let s = Scratch::new("kinds");
        let root = Dir::open_root(&s.0.join("root"), Access::default(), RootMode::Create).unwrap();
        root.make_fifo("pipe", Access::default()).unwrap();
        // Opening a FIFO for reading would block until a writer came.
        assert!(refused_because(&root.open_file("pipe", false).unwrap_err()).contains("regular file"));
        root.make_subdir("d", Access::default()).unwrap();
        assert!(root.open_file("d", false).is_err());
        root.write_file("f", b"x", Access::default()).unwrap();
        assert!(refused_because(&root.open_fifo_writer("f").unwrap_err()).contains("FIFO"));
        assert!(refused_because(&root.subdir("f").unwrap_err()).contains("not a directory"));
        // A text larger than asked for is refused too.
        root.write_file("big", &[b'a'; 5000], Access::default()).unwrap();
        assert_eq!(root.read_text("big", 4096).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}

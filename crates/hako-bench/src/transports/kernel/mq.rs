//! POSIX message queues, through `libc` (rustix does not cover `mq_*`).

use std::ffi::CString;

use super::channel::{unlink_queue, Buffers, Channel, KernelFollower, KernelLeader};
use crate::error::Result;
use crate::transport::{Pattern, RowSpec, Transport, Waiting, PEER_TIMEOUT};

// ------------------------------------------------------- message queue --

/// Where the kernel says how large a POSIX message may be.
pub const MSGSIZE_MAX_PATH: &str = "/proc/sys/fs/mqueue/msgsize_max";

/// Two POSIX message queues, one per direction.
#[derive(Debug, Clone, Copy, Default)]
pub struct MessageQueue;

/// `/proc/sys/fs/mqueue/msgsize_max`, if readable.
pub fn msgsize_max() -> Option<usize> {
    std::fs::read_to_string(MSGSIZE_MAX_PATH)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Queue names: `/<run root, '/' → '_'>-<row>-<what>`. POSIX queues live in
/// one namespace per machine (IPC namespace), not in the run's root, so the
/// root's path (which holds the leader's pid) keeps runs and sessions apart.
fn queue_name(row: &RowSpec, what: &str) -> Result<CString> {
    let root = row
        .root
        .to_str()
        .ok_or_else(|| format!("run root {} is not UTF-8", row.root.display()))?
        .trim_matches('/')
        .replace('/', "_");
    let name = format!("/{root}-{}-{what}", row.row_id);
    // NAME_MAX, less the leading '/'.
    if name.len() > 255 {
        return Err(format!("queue name {name} is too long: use a shorter --shm-dir").into());
    }
    CString::new(name).map_err(|_| "queue name holds a NUL byte".into())
}

#[derive(Debug)]
/// An open message queue descriptor, as a [`Channel`]; closed on drop.
pub struct Mq(libc::mqd_t);

impl Mq {
    /// Opens (`attr: Some`: creates, exclusively) the queue `name`.
    fn open(name: &CString, access: libc::c_int, attr: Option<&libc::mq_attr>) -> Result<Self> {
        let flags = access | libc::O_CLOEXEC;
        let mqd = match attr {
            Some(attr) => {
                let mode: libc::mode_t = 0o600;
                // SAFETY: `name` is a NUL-terminated string and `attr` a valid
                // `mq_attr`, both alive for the call; with O_CREAT, mq_open
                // reads exactly these two extra (variadic) arguments.
                unsafe {
                    libc::mq_open(
                        name.as_ptr(),
                        flags | libc::O_CREAT | libc::O_EXCL,
                        mode,
                        attr as *const libc::mq_attr,
                    )
                }
            }
            // SAFETY: `name` is a NUL-terminated string alive for the call.
            None => unsafe { libc::mq_open(name.as_ptr(), flags) },
        };
        if mqd == -1 {
            return Err(format!(
                "mq_open({}): {}",
                name.to_string_lossy(),
                std::io::Error::last_os_error()
            )
            .into());
        }
        Ok(Self(mqd))
    }

    #[inline]
    fn send(&self, msg: &[u8], what: &str) -> Result<()> {
        loop {
            // SAFETY: `msg` is valid for reads of `msg.len()` bytes; the
            // kernel copies them out during the call.
            let rc = unsafe { libc::mq_send(self.0, msg.as_ptr().cast(), msg.len(), 0) };
            if rc == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("mq_send ({what}): {e}").into());
            }
        }
    }

    /// Receives one message into `buf` (at least the queue's message size);
    /// returns its length. Fails after [`PEER_TIMEOUT`] without one.
    #[inline]
    fn receive(&self, buf: &mut [u8], what: &str) -> Result<usize> {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
        // SAFETY: a timespec is plain integers; all zero is a valid value.
        let mut deadline: libc::timespec = unsafe { std::mem::zeroed() };
        deadline.tv_sec = now.tv_sec as libc::time_t;
        deadline.tv_nsec = now.tv_nsec as libc::c_long;
        deadline.tv_sec += PEER_TIMEOUT.as_secs() as libc::time_t;
        loop {
            let mut prio: libc::c_uint = 0;
            // SAFETY: `buf` is valid for writes of `buf.len()` bytes, `prio`
            // and `deadline` are valid for the call; the kernel writes at
            // most `buf.len()` bytes and fails with EMSGSIZE if that is less
            // than the queue's message size.
            let n = unsafe {
                libc::mq_timedreceive(
                    self.0,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut prio,
                    &deadline,
                )
            };
            if let Ok(n) = usize::try_from(n) {
                return Ok(n);
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ETIMEDOUT) => {
                    return Err(format!(
                        "gave up after {PEER_TIMEOUT:?} waiting for {what}; the peer died or a message was lost"
                    )
                    .into())
                }
                _ => return Err(format!("mq_timedreceive ({what}): {e}").into()),
            }
        }
    }
}

impl Drop for Mq {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and close it once.
        unsafe { libc::mq_close(self.0) };
    }
}

impl Channel for Mq {
    #[inline]
    fn put(&mut self, msg: &[u8]) -> Result<()> {
        self.send(msg, "a message")
    }

    #[inline]
    fn get(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.receive(buf, "a message")
    }
}

/// Messages a one-way queue holds: a few, as far as
/// `/proc/sys/fs/mqueue/msg_max` allows (10 by default).
fn one_way_depth() -> libc::c_long {
    let max = std::fs::read_to_string("/proc/sys/fs/mqueue/msg_max")
        .ok()
        .and_then(|t| t.trim().parse::<libc::c_long>().ok())
        .unwrap_or(10);
    max.clamp(1, 8)
}

impl Transport for MessageQueue {
    type Leader = KernelLeader<Mq>;
    type Follower = KernelFollower<Mq>;

    fn name(&self) -> &'static str {
        "mq"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn skip_reason(&self, size: usize, _pattern: Pattern) -> Option<String> {
        let max = msgsize_max()?;
        (size > max).then(|| format!("{size} B is above {MSGSIZE_MAX_PATH} ({max} B)"))
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let mut side = KernelLeader::new(self.name(), row)?;
        // SAFETY: `mq_attr` is plain data; all-zero is a valid value.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = if row.pattern.one_way() {
            one_way_depth()
        } else {
            1
        };
        attr.mq_msgsize = libc::c_long::try_from(row.size)?;
        let mut create = |name: CString, access| -> Result<Mq> {
            // A leftover of a killed run with our pid and row.
            unlink_queue(&name);
            let q = Mq::open(&name, access, Some(&attr));
            // Named (and so removed on drop) even when opening failed half way.
            side.queues.push(name);
            q
        };
        let mut outs = Vec::new();
        for k in 0..row.followers.max(1) {
            outs.push(create(
                queue_name(row, &format!("ping{k}"))?,
                libc::O_WRONLY,
            )?);
        }
        let inp = if row.pattern.one_way() {
            None
        } else {
            Some(create(queue_name(row, "pong")?, libc::O_RDONLY)?)
        };
        side.outs = outs;
        side.inp = inp;
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        Ok(KernelFollower {
            name: self.name(),
            inp: Mq::open(
                &queue_name(row, &format!("ping{}", row.index))?,
                libc::O_RDONLY,
                None,
            )?,
            out: if row.pattern.one_way() {
                None
            } else {
                Some(Mq::open(&queue_name(row, "pong")?, libc::O_WRONLY, None)?)
            },
            bufs: Buffers::new(row)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_follow_the_run_root() {
        let row = RowSpec::ping_pong("/dev/shm/hako-bench-42/".into(), 7, 64);
        let ping = queue_name(&row, "ping0").unwrap();
        assert_eq!(ping.to_str().unwrap(), "/dev_shm_hako-bench-42-7-ping0");
    }

    #[test]
    fn mq_skips_only_sizes_above_the_limit() {
        let Some(max) = msgsize_max() else { return };
        assert!(MessageQueue.skip_reason(max, Pattern::PingPong).is_none());
        assert!(MessageQueue.skip_reason(max + 1, Pattern::FanOut).is_some());
    }
}

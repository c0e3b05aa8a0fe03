//! Unix stream sockets and TCP over loopback.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};

use super::channel::{Buffers, KernelFollower, KernelLeader};
use crate::error::Result;
use crate::transport::{RowSpec, Transport, Waiting};

// --------------------------------------------------------------- sockets --

/// Most bytes of requests, and as many of answers, a pipelined socket row
/// may have in flight. The client writes its requests with blocking
/// writes before it reads any answer, and the server writes each answer
/// before it reads the next request: once the answers fill the socket's
/// buffer towards the client and the requests fill the one towards the
/// server, both block for good. Linux's default buffers (about 200 KiB for
/// a unix socket; TCP's grow from 16 KiB and more) hold this much.
pub const SOCKET_IN_FLIGHT_BYTES: usize = 64 << 10;

pub(crate) fn socket_in_flight_skip(size: usize, depth: u32) -> Option<String> {
    (size.saturating_mul(depth as usize) > SOCKET_IN_FLIGHT_BYTES).then(|| {
        format!(
            "{depth} requests of {size} B in flight would outgrow the socket buffers the \
             blocking client and server rely on (at most {SOCKET_IN_FLIGHT_BYTES} B)"
        )
    })
}

/// A `SOCK_STREAM` unix domain socket, bound to a name in the run's root.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnixSocket;

/// Both directions of one accepted or connected stream: for ping-pong a
/// second handle of it (`try_clone`) reads the answers.
fn duplex<S>(
    stream: S,
    row: &RowSpec,
    clone: impl Fn(&S) -> std::io::Result<S>,
) -> Result<(S, Option<S>)> {
    let back = if row.pattern.one_way() {
        None
    } else {
        Some(clone(&stream)?)
    };
    Ok((stream, back))
}

impl Transport for UnixSocket {
    type Leader = KernelLeader<UnixStream>;
    type Follower = KernelFollower<UnixStream>;

    fn name(&self) -> &'static str {
        "unix"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        socket_in_flight_skip(size, depth)
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let mut side = KernelLeader::new(self.name(), row)?;
        let path = row.path("unix", "sock");
        let listener = UnixListener::bind(&path)
            .map_err(|e| format!("cannot bind {}: {e}", path.display()))?;
        side.paths.push(path);
        let spec = row.clone();
        side.accept = Some((
            Box::new(move || duplex(listener.accept()?.0, &spec, UnixStream::try_clone)),
            row.followers.max(1) as usize,
        ));
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        let path = row.path("unix", "sock");
        // Completes through the listen backlog; the leader accepts later.
        let stream = UnixStream::connect(&path)
            .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
        let (inp, out) = duplex(stream, row, UnixStream::try_clone)?;
        Ok(KernelFollower {
            name: self.name(),
            inp,
            out,
            bufs: Buffers::new(row)?,
        })
    }
}

/// TCP over loopback (127.0.0.1) with `TCP_NODELAY`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp;

impl Transport for Tcp {
    type Leader = KernelLeader<TcpStream>;
    type Follower = KernelFollower<TcpStream>;

    fn name(&self) -> &'static str {
        "tcp"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        socket_in_flight_skip(size, depth)
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let mut side = KernelLeader::new(self.name(), row)?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
        let path = row.path("tcp", "port");
        std::fs::write(&path, format!("{}\n", listener.local_addr()?.port()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        side.paths.push(path);
        let spec = row.clone();
        side.accept = Some((
            Box::new(move || {
                let (stream, _) = listener.accept()?;
                stream.set_nodelay(true)?;
                duplex(stream, &spec, TcpStream::try_clone)
            }),
            row.followers.max(1) as usize,
        ));
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        let path = row.path("tcp", "port");
        let port: u16 = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .trim()
            .parse()?;
        let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .map_err(|e| format!("cannot connect to 127.0.0.1:{port}: {e}"))?;
        stream.set_nodelay(true)?;
        let (inp, out) = duplex(stream, row, TcpStream::try_clone)?;
        Ok(KernelFollower {
            name: self.name(),
            inp,
            out,
            bufs: Buffers::new(row)?,
        })
    }
}

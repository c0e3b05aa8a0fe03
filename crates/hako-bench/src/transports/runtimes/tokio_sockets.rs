//! tokio's `UnixStream` and `TcpStream`: the payload copied through the
//! kernel, every wait a trip through tokio's reactor (epoll).
//!
//! The leader (the client) binds a listener in [`Backend::client`] (a
//! socket in the run's root, or a loopback port written to a file there)
//! and accepts in `connect`; the follower (the server) connects as it is
//! built. A request is `size` bytes written whole (`write_all`), read
//! whole (`read_exact`) and answered with `size` bytes; requests in flight
//! are written ahead, at most as many bytes as the blocking socket rows
//! allow ([`SOCKET_IN_FLIGHT_BYTES`]), so the comparison is like for like.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::ops::RangeInclusive;
use std::path::PathBuf;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::common::{Backend, ClientSide, Flavor, ServerSide};
use crate::error::Result;
use crate::transport::{tag, PayloadMode, RowSpec, Waiting, PEER_TIMEOUT};
use crate::transports::kernel::socket_in_flight_skip;

#[cfg(doc)]
use crate::transports::kernel::SOCKET_IN_FLIGHT_BYTES;

/// Which socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Socket {
    /// A unix stream socket (`tokio-unix`).
    Unix,
    /// TCP over loopback, `TCP_NODELAY` (`tokio-tcp`).
    Tcp,
}

/// A tokio stream socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokioStream {
    /// Which socket.
    pub socket: Socket,
    /// Its runtime.
    pub flavor: Flavor,
}

/// Either stream, read and written as one.
pub enum Stream {
    /// A unix socket.
    Unix(tokio::net::UnixStream),
    /// A TCP connection.
    Tcp(tokio::net::TcpStream),
}

/// The listener of the client, until `connect` accepts.
enum Listening {
    Unix(tokio::net::UnixListener, PathBuf),
    Tcp(tokio::net::TcpListener, PathBuf),
}

/// Buffers and settings of one side.
struct Bufs {
    out: Vec<u8>,
    inp: Vec<u8>,
    payload: PayloadMode,
}

impl Bufs {
    fn new(row: &RowSpec) -> Result<Self> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        // Zero-filled now, so that no page fault lands in the timing.
        Ok(Self {
            out: vec![0; row.size],
            inp: vec![0; row.size],
            payload: row.payload,
        })
    }
}

/// The client, in the leader.
pub struct SocketClient {
    listening: Option<Listening>,
    stream: Option<Stream>,
    bufs: Bufs,
}

/// The server, in the follower.
pub struct SocketServer {
    stream: Stream,
    bufs: Bufs,
}

impl Drop for SocketClient {
    fn drop(&mut self) {
        if let Some(Listening::Unix(_, path) | Listening::Tcp(_, path)) = &self.listening {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Backend for TokioStream {
    type Client = SocketClient;
    type Server = SocketServer;

    fn name(&self) -> &'static str {
        match (self.socket, self.flavor) {
            (Socket::Unix, Flavor::CurrentThread) => "tokio-unix",
            (Socket::Tcp, Flavor::CurrentThread) => "tokio-tcp",
            (Socket::Unix, Flavor::MultiThread) => "tokio-unix-mt",
            (Socket::Tcp, Flavor::MultiThread) => "tokio-tcp-mt",
        }
    }

    fn flavor(&self) -> Flavor {
        self.flavor
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        socket_in_flight_skip(size, depth)
    }

    fn client(&self, row: &RowSpec) -> Result<SocketClient> {
        let listening = match self.socket {
            Socket::Unix => {
                let path = row.path("tokio-unix", "sock");
                let l = tokio::net::UnixListener::bind(&path)
                    .map_err(|e| format!("cannot bind {}: {e}", path.display()))?;
                Listening::Unix(l, path)
            }
            Socket::Tcp => {
                let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                    .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
                l.set_nonblocking(true)?;
                let path = row.path("tokio-tcp", "port");
                std::fs::write(&path, format!("{}\n", l.local_addr()?.port()))
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                Listening::Tcp(tokio::net::TcpListener::from_std(l)?, path)
            }
        };
        Ok(SocketClient {
            listening: Some(listening),
            stream: None,
            bufs: Bufs::new(row)?,
        })
    }

    fn server(&self, row: &RowSpec) -> Result<SocketServer> {
        // Connected with a blocking call (it completes through the listen
        // backlog), then handed to tokio.
        let stream = match self.socket {
            Socket::Unix => {
                let path = row.path("tokio-unix", "sock");
                let s = std::os::unix::net::UnixStream::connect(&path)
                    .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
                s.set_nonblocking(true)?;
                Stream::Unix(tokio::net::UnixStream::from_std(s)?)
            }
            Socket::Tcp => {
                let path = row.path("tokio-tcp", "port");
                let port: u16 = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?
                    .trim()
                    .parse()?;
                let s = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
                    .map_err(|e| format!("cannot connect to 127.0.0.1:{port}: {e}"))?;
                s.set_nodelay(true)?;
                s.set_nonblocking(true)?;
                Stream::Tcp(tokio::net::TcpStream::from_std(s)?)
            }
        };
        Ok(SocketServer {
            stream,
            bufs: Bufs::new(row)?,
        })
    }
}

/// Writes `buf` whole to `s`.
async fn put<S: AsyncWrite + Unpin>(s: &mut S, buf: &[u8]) -> Result<()> {
    s.write_all(buf).await?;
    Ok(())
}

/// Reads `buf` whole from `s`.
async fn get<S: AsyncRead + Unpin>(s: &mut S, buf: &mut [u8]) -> Result<()> {
    s.read_exact(buf).await?;
    Ok(())
}

impl Stream {
    async fn put(&mut self, buf: &[u8]) -> Result<()> {
        match self {
            Stream::Unix(s) => put(s, buf).await,
            Stream::Tcp(s) => put(s, buf).await,
        }
    }

    async fn get(&mut self, buf: &mut [u8]) -> Result<()> {
        match self {
            Stream::Unix(s) => get(s, buf).await,
            Stream::Tcp(s) => get(s, buf).await,
        }
    }
}

impl SocketClient {
    async fn request(&mut self, t: u8) -> Result<()> {
        self.bufs.payload.write(&mut self.bufs.out, t);
        let Self { stream, bufs, .. } = self;
        stream.as_mut().ok_or("not connected")?.put(&bufs.out).await
    }

    async fn answer(&mut self, t: u8) -> Result<()> {
        let Self { stream, bufs, .. } = self;
        stream
            .as_mut()
            .ok_or("not connected")?
            .get(&mut bufs.inp)
            .await?;
        bufs.payload.check(&bufs.inp, bufs.inp.len(), t, "response")
    }
}

impl ClientSide for SocketClient {
    async fn connect(&mut self) -> Result<()> {
        let accept = async {
            Ok::<Stream, crate::error::BoxError>(match &self.listening {
                Some(Listening::Unix(l, _)) => Stream::Unix(l.accept().await?.0),
                Some(Listening::Tcp(l, _)) => {
                    let s = l.accept().await?.0;
                    s.set_nodelay(true)?;
                    Stream::Tcp(s)
                }
                None => return Err("accepted already".into()),
            })
        };
        let stream = tokio::time::timeout(PEER_TIMEOUT, accept)
            .await
            .map_err(|_| "the server did not connect")??;
        self.stream = Some(stream);
        Ok(())
    }

    async fn round_trip(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.request(t).await?;
        self.answer(t.wrapping_add(1)).await
    }

    async fn pipeline(&mut self, seqs: RangeInclusive<u64>, depth: usize) -> Result<()> {
        let depth = depth.max(1);
        let mut in_flight: VecDeque<u64> = VecDeque::with_capacity(depth);
        for seq in seqs {
            if in_flight.len() == depth {
                if let Some(s) = in_flight.pop_front() {
                    self.answer(tag(s).wrapping_add(1)).await?;
                }
            }
            self.request(tag(seq)).await?;
            in_flight.push_back(seq);
        }
        while let Some(s) = in_flight.pop_front() {
            self.answer(tag(s).wrapping_add(1)).await?;
        }
        Ok(())
    }
}

impl ServerSide for SocketServer {
    async fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let Self { stream, bufs } = self;
        stream.get(&mut bufs.inp).await?;
        bufs.payload
            .check(&bufs.inp, bufs.inp.len(), t, "request")?;
        bufs.payload.write(&mut bufs.out, t.wrapping_add(1));
        stream.put(&bufs.out).await
    }
}

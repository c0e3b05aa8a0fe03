//! Messages from Zenoh's callbacks (its own threads) to a link's thread,
//! which also waits for local traffic: a channel, and a descriptor that is
//! readable while messages wait, for the link's [`hako::WaitSet`] to watch
//! beside its hako ports. One wait serves both sides, with no polling.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::{mpsc, Arc};

/// The sending side, for callbacks: cheap to clone, usable from any thread.
pub(crate) struct Post<T> {
    tx: mpsc::Sender<T>,
    bell: Arc<UnixStream>,
}

impl<T> Clone for Post<T> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            bell: self.bell.clone(),
        }
    }
}

impl<T> Post<T> {
    /// Hands `message` to the link's thread and wakes it. Nothing if the
    /// thread is gone.
    pub(crate) fn send(&self, message: T) {
        if self.tx.send(message).is_ok() {
            // A full socket buffer means the thread has unread bytes
            // already, so it wakes anyway: WouldBlock is fine.
            let _ = (&*self.bell).write(&[1]);
        }
    }
}

/// The receiving side, for the link's thread.
pub(crate) struct Mailbox<T> {
    rx: mpsc::Receiver<T>,
    bell: UnixStream,
}

impl<T> Mailbox<T> {
    /// A mailbox and the post that fills it.
    pub(crate) fn new() -> std::io::Result<(Post<T>, Self)> {
        let (ring, bell) = UnixStream::pair()?;
        ring.set_nonblocking(true)?;
        bell.set_nonblocking(true)?;
        let (tx, rx) = mpsc::channel();
        Ok((
            Post {
                tx,
                bell: Arc::new(ring),
            },
            Self { rx, bell },
        ))
    }

    /// Readable while messages may wait: attach it to the waitset.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.bell.as_fd()
    }

    /// Every message waiting now. The descriptor is emptied first, so a
    /// message posted meanwhile makes it readable again (none is missed).
    pub(crate) fn take(&self) -> mpsc::TryIter<'_, T> {
        let mut sink = [0u8; 256];
        while matches!((&self.bell).read(&mut sink), Ok(n) if n > 0) {}
        self.rx.try_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_arrive_in_order_and_the_descriptor_follows_them() {
        let (post, mailbox) = Mailbox::<u32>::new().unwrap();
        // As the link's thread sees it: through a waitset.
        let readable = |m: &Mailbox<u32>| {
            let mut waitset = hako::WaitSet::without_signal_handling().unwrap();
            waitset.attach_fd(m.fd()).unwrap();
            let outcome = waitset
                .wait_and_process_timeout(|_| {}, std::time::Duration::ZERO)
                .unwrap();
            outcome != hako::WaitOutcome::TimedOut
        };
        assert!(!readable(&mailbox));
        let other = post.clone();
        std::thread::spawn(move || (0..1000).for_each(|i| other.send(i)))
            .join()
            .unwrap();
        post.send(1000);
        assert!(readable(&mailbox));
        assert_eq!(
            mailbox.take().collect::<Vec<_>>(),
            (0..=1000).collect::<Vec<_>>()
        );
        assert!(!readable(&mailbox));
        drop(mailbox);
        post.send(1); // the thread went: nothing happens
    }
}

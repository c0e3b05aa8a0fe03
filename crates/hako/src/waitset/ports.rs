//! What a waitset asks of a port of each pattern: arm its wake-up FIFO
//! before a sleep, disarm it after, and say whether it has something.

use crate::blackboard::reader::Reader;
use crate::event::listener::Listener;
use crate::port::payload::Payload;
use crate::pubsub::subscriber::Subscriber;
use crate::reqres::client::Client;
use crate::reqres::server::Server;

/// A port a waitset can arm.
pub(super) trait Port {
    fn arm(&self) -> bool;
    fn disarm(&self);
    fn ready(&self) -> bool;
}

impl Port for Listener {
    fn arm(&self) -> bool {
        Listener::arm(self)
    }
    fn disarm(&self) {
        Listener::disarm(self)
    }
    fn ready(&self) -> bool {
        self.has_events()
    }
}

impl Port for Reader {
    fn arm(&self) -> bool {
        self.arm_wakeup()
    }
    fn disarm(&self) {
        self.disarm_wakeup()
    }
    fn ready(&self) -> bool {
        self.has_changes()
    }
}

impl<T: Payload + ?Sized> Port for Subscriber<T> {
    fn arm(&self) -> bool {
        self.rx.arm()
    }
    fn disarm(&self) {
        self.rx.disarm()
    }
    fn ready(&self) -> bool {
        self.has_samples()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Port for Server<Req, Resp> {
    fn arm(&self) -> bool {
        self.wait_arm()
    }
    fn disarm(&self) {
        self.wait_disarm()
    }
    fn ready(&self) -> bool {
        self.has_requests()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Port for Client<Req, Resp> {
    fn arm(&self) -> bool {
        self.wait_arm()
    }
    fn disarm(&self) {
        self.wait_disarm()
    }
    fn ready(&self) -> bool {
        self.has_responses()
    }
}

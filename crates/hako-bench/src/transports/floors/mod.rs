//! The floors: what moving a message costs at the least, measured the way
//! the transports are. [`cache_line::Floor`] (`floor`) ping-pongs one cache
//! line between two processes, [`cache_line::TwoLineFloor`] (`floor2`) two
//! (a ring slot and a payload); [`futex::FutexFloor`] (`futex`) adds a
//! kernel wake-up per message; [`reference::Reference`] (`reference`) is a
//! minimal descriptor ring with a pool, written by hand.

pub mod cache_line;
pub mod futex;
pub mod reference;

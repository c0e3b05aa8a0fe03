//! Prints the changes of the domain as they happen: services created and
//! removed, nodes and ports that come, leave, die and are reclaimed. Start
//! it, then `publisher` and `subscriber` in other terminals, and stop them
//! (or `kill -9` one, then run `hako clean`).
//!
//! ```text
//! cargo run --example watch [COUNT]
//! ```

use std::time::Duration;

use hako::{Config, WaitEvent, WaitSet, Watcher};

fn main() -> Result<(), hako_examples::Report> {
    let count: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(usize::MAX);
    let config = Config::from_env()?;
    // A watcher needs the domain's root: the first node makes it.
    let _node = hako::NodeBuilder::new().name("watch")?.create()?;
    let mut watcher = Watcher::new(&config)?;
    // On a waitset, beside whatever else the program waits for; Ctrl-C
    // ends the wait.
    let ready = watcher.ready_fd()?;
    let mut waitset = WaitSet::new()?;
    let watched = waitset.attach_fd(std::os::fd::AsFd::as_fd(&ready))?;
    let mut printed = 0;
    while printed < count {
        let mut ready = false;
        let outcome = waitset.wait_and_process_timeout(
            |e| ready |= e == WaitEvent::Ready(watched),
            Duration::from_secs(1),
        )?;
        if outcome == hako::WaitOutcome::TerminationRequest {
            break;
        }
        if ready {
            for change in watcher.try_changes()? {
                println!("{change:?}");
                printed += 1;
            }
        }
    }
    Ok(())
}

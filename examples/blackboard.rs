//! A blackboard: shared state with one writer and many readers. Start the
//! writer and a reader in two terminals, in either order:
//!
//! ```text
//! cargo run --example blackboard -- writer [UPDATES]
//! cargo run --example blackboard -- reader [CHANGES]
//! ```
//!
//! The writer moves a robot's pose ten times a second and changes its mode
//! every tenth update; the reader sleeps until the pose changes (no
//! polling), then reads the latest pose by copy and the map in place. A
//! reader that starts late reads the latest values at once: there is no
//! queue to catch up on.

use std::time::Duration;

use hako::{BlackboardService, Node, NodeBuilder, ShmSafe};

/// Where the robot is.
#[derive(Debug, Clone, Copy, PartialEq, ShmSafe)]
#[repr(C)]
struct Pose {
    x: f64,
    y: f64,
    heading: f64,
}

/// A coarse occupancy grid, large enough to be read in place.
type Grid = [u8; 64 * 64];

/// Both programs open the board the same way: whichever starts first
/// creates it with these entries and their defaults.
fn board(node: &Node) -> Result<BlackboardService, Box<dyn std::error::Error>> {
    Ok(node
        .service_builder(&"robot/state".try_into()?)
        .blackboard()
        .entry::<Pose>(
            "pose",
            Pose {
                x: 0.0,
                y: 0.0,
                heading: 0.0,
            },
        )
        .entry::<u32>("mode", 0)
        .entry::<Grid>("map", [0; 64 * 64])
        .max_readers(4)
        .open_or_create()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let role = args.next().unwrap_or_default();
    let count: u64 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(u64::MAX);
    let node = NodeBuilder::new()
        .name(&format!("blackboard-{role}"))?
        .create()?;
    let board = board(&node)?;
    match role.as_str() {
        "writer" => writer(&node, &board, count),
        "reader" => reader(&node, &board, count),
        _ => Err("usage: blackboard writer|reader [COUNT]".into()),
    }
}

fn writer(
    node: &Node,
    board: &BlackboardService,
    count: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let writer = board.writer_builder().create()?;
    let mut pose = writer.entry::<Pose>("pose")?;
    let mut mode = writer.entry::<u32>("mode")?;
    let mut map = writer.entry::<Grid>("map")?;
    for n in 1..=count {
        let t = n as f64 / 10.0;
        // By copy: small values.
        let version = pose.update(Pose {
            x: t.cos(),
            y: t.sin(),
            heading: t,
        })?;
        if n % 10 == 0 {
            mode.update((n / 10) as u32)?;
            // In place: change one cell of the latest map, then publish.
            let mut grid = map.loan_latest()?;
            let cell = (n as usize) % grid.len();
            grid[cell] = 1;
            grid.publish();
        }
        println!("pose version {version}");
        if node.wait(Duration::from_millis(100)).is_err() {
            break; // Ctrl-C
        }
    }
    Ok(())
}

fn reader(
    node: &Node,
    board: &BlackboardService,
    count: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let reader = board.reader_builder().create()?;
    let pose = reader.entry::<Pose>("pose")?;
    let mode = reader.entry::<u32>("mode")?;
    let mut map = reader.entry::<Grid>("map")?;
    let mut changes = 0;
    while changes < count {
        // Sleeps until the writer publishes a new pose (a second at most,
        // to look for Ctrl-C).
        if pose
            .wait_for_change(Some(Duration::from_secs(1)))?
            .is_none()
        {
            if node.wait(Duration::ZERO).is_err() {
                break;
            }
            continue;
        }
        changes += 1;
        let (p, version) = pose.get_with_version()?;
        // The map is read where it lies, pinned until `grid` drops.
        let grid = map.read()?;
        let occupied = grid.iter().filter(|&&c| c != 0).count();
        println!(
            "pose v{version}: ({:.2}, {:.2}) heading {:.1}; mode {}; map v{} with {occupied} cell(s) set",
            p.x,
            p.y,
            p.heading,
            mode.get()?,
            grid.version()
        );
    }
    Ok(())
}

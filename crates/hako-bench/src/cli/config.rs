//! From `hako bench`'s arguments to the suite's configuration: defaults,
//! checks, and where the processes run.

use std::path::Path;
use std::time::Duration;

use crate::error::Result;
use crate::harness::blocks::Plan;
use crate::registry::{Kind, Transports};
use crate::suite::{self, StreamPlan, SuiteConfig};
use crate::transport::Pattern;
use crate::transports::hako::pubsub::HakoPubSub;
use crate::units::format_size;

use super::args::{BenchArgs, Pinning, MAX_SIZE};

/// Checks the arguments and builds the suite's configuration.
/// `mode` is the pinning of this run (one of the two of `--pinning both`).
pub fn configure(args: &BenchArgs, root: &Path, mode: Pinning) -> Result<SuiteConfig> {
    let all = Transports::new(hako_settings(args));
    let explicit = args.transports.is_some();
    let transports = args
        .transports
        .clone()
        .unwrap_or_else(|| Kind::SUITE.to_vec());
    let kinds = dedup_copy(&transports);
    let dedup = |v: Vec<usize>| dedup_copy(&v);
    // 8 to 48 B: payloads that travel in the queue slot.
    let default_sizes: &[usize] = if args.quick {
        &[8, 48, 64, 4 << 10, 64 << 10, 1 << 20]
    } else {
        &[8, 32, 48, 64, 1 << 10, 4 << 10, 64 << 10, 1 << 20, 4 << 20]
    };
    let sizes = dedup(args.sizes.clone().unwrap_or_else(|| default_sizes.to_vec()));
    let default_in_flight: &[usize] = if args.quick { &[64] } else { &[64, 1 << 10] };
    let in_flight_sizes = dedup(
        args.in_flight_sizes
            .clone()
            .unwrap_or_else(|| default_in_flight.to_vec()),
    );
    let depths = dedup_copy(&args.in_flight);
    let reqres = dedup_copy(args.reqres_transports.as_deref().unwrap_or(Kind::REQRES));
    let asynch = dedup_copy(args.async_transports.as_deref().unwrap_or(Kind::ASYNC));
    let default_async: &[usize] = if args.quick {
        &[64, 64 << 10]
    } else {
        &[64, 4 << 10, 64 << 10, 1 << 20]
    };
    let async_sizes = dedup(
        args.async_sizes
            .clone()
            .unwrap_or_else(|| default_async.to_vec()),
    );
    let async_in_flight_sizes = dedup(args.async_in_flight_sizes.clone());
    let async_depths = dedup_copy(&args.async_in_flight);
    let bridge = dedup_copy(args.bridge_transports.as_deref().unwrap_or(Kind::BRIDGE));
    let bridge_sizes = dedup(args.bridge_sizes.clone());
    if let Some(&big) = sizes
        .iter()
        .chain(&in_flight_sizes)
        .chain(&async_sizes)
        .chain(&async_in_flight_sizes)
        .chain(&bridge_sizes)
        .find(|&&s| s > MAX_SIZE)
    {
        return Err(format!(
            "size {} is above the largest the suite supports ({})",
            format_size(big),
            format_size(MAX_SIZE)
        )
        .into());
    }
    let patterns = args.patterns.clone();
    // A transport the user named must carry every size given (the floors'
    // "ping-pong only" is no error: one-way rows just skip them, as rate
    // rows skip what cannot keep requests in flight).
    let named = kinds
        .iter()
        .filter(|_| explicit)
        .map(|k| (k, &sizes))
        .chain(args.reqres_transports.iter().flatten().map(|k| (k, &sizes)))
        .chain(
            args.async_transports
                .iter()
                .flatten()
                .map(|k| (k, &async_sizes)),
        )
        .chain(
            args.bridge_transports
                .iter()
                .flatten()
                .map(|k| (k, &bridge_sizes)),
        );
    for (&k, sizes) in named {
        for &size in sizes {
            if let Some(why) = all.get(k).row_skip_reason(size, Pattern::PingPong) {
                return Err(format!(
                    "transport {} cannot carry {} messages: {why}",
                    k.name(),
                    format_size(size)
                )
                .into());
            }
        }
    }
    let quick = args.quick;
    let iterations = args
        .iterations
        .unwrap_or(if quick { 2_000 } else { 20_000 });
    let blocks = args.blocks.unwrap_or(if quick { 2 } else { 4 }).max(1);
    let warmup = args.warmup.unwrap_or(iterations / 10);
    let budget = Duration::from_millis(args.block_ms.unwrap_or(if quick { 3 } else { 12 }));
    let probe = args
        .probe_iterations
        .unwrap_or(if quick { 300 } else { 1_000 })
        .max(1);
    let plan = Plan {
        blocks,
        iterations: (iterations / u64::from(blocks)).max(1),
        min_iterations: args.min_iterations.unwrap_or(10).max(1),
        warmup: warmup / u64::from(blocks),
        budget,
        probe,
        probe_warmup: probe / 5,
    };
    // A round trip through Zenoh takes a hundred µs to milliseconds, a
    // thousand times a busy-polled one, and a hako-bridge block spends half
    // a second starting its bridges anyway: blocks of 50 times the time,
    // so that each holds enough round trips for a median, and at least 4
    // of them unless told (two blocks of these rows gave ratios that moved
    // by 0.2x from run to run).
    let bridge_plan = Plan {
        budget: budget * 50,
        blocks: args.blocks.unwrap_or(4).max(1),
        ..plan
    };
    let stream = StreamPlan {
        // One-way runs are long and steadier than single round trips.
        blocks: blocks.min(3),
        budget: budget * 4,
        min_messages: args.min_messages.unwrap_or(if quick { 100 } else { 1_000 }),
        max_messages: if quick { 20_000 } else { 100_000 },
        cap: Duration::from_millis(if quick { 40 } else { 100 }),
    };
    let (leader_cpu, follower_cpu) = cpus(args, mode)?;
    Ok(SuiteConfig {
        root: root.to_owned(),
        transports: kinds,
        sizes,
        patterns,
        payloads: args.payload.clone(),
        fanout: args.fanout,
        plan,
        stream,
        leader_cpu,
        follower_cpu,
        all,
        reqres,
        depths,
        in_flight_sizes,
        asynch,
        async_sizes,
        async_depths,
        async_in_flight_sizes,
        footprint: if args.no_footprint {
            Vec::new()
        } else {
            dedup_copy(&args.footprint)
        },
        bridge,
        bridge_sizes,
        bridge_plan,
        dump_dir: args.dump.clone(),
    })
}

/// The CPUs of the leader and the followers in `mode` (not `Both`).
pub fn cpus(args: &BenchArgs, mode: Pinning) -> Result<(Option<usize>, Option<usize>)> {
    let (first, second) = suite::default_cpus()?;
    Ok(match mode {
        Pinning::Cross | Pinning::Both => {
            let l = args.leader_cpu.unwrap_or(first);
            let f = args
                .follower_cpu
                .unwrap_or(if l == second { first } else { second });
            (Some(l), Some(f))
        }
        Pinning::Same => {
            let l = args.leader_cpu.unwrap_or(first);
            (Some(l), Some(l))
        }
        Pinning::None => (None, None),
    })
}

/// hako's publish/subscribe settings of the run.
pub fn hako_settings(args: &BenchArgs) -> HakoPubSub {
    HakoPubSub {
        buffer: args.hako_buffer,
        borrowed: args.hako_borrowed,
        max_loans: args.hako_loans,
        ..HakoPubSub::default()
    }
}

/// `items` in order, each once.
fn dedup_copy<T: Copy + PartialEq>(items: &[T]) -> Vec<T> {
    items.iter().fold(Vec::new(), |mut out, &x| {
        if !out.contains(&x) {
            out.push(x);
        }
        out
    })
}

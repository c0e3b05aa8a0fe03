//! A publisher's segment header as another process may have written it:
//! validation must never panic, and a header it accepts must describe a
//! segment whose parts fit, in order, inside the file.
#![no_main]

use hako::unstable::layout::{SegmentHeader, SegmentParams, LINE, PAGE};
use libfuzzer_sys::fuzz_target;

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    for (k, x) in w.iter_mut().enumerate() {
        *x = b.get(i * 8 + k).copied().unwrap_or(0);
    }
    u64::from_le_bytes(w)
}

fuzz_target!(|data: &[u8]| {
    let w = |i| u64_at(data, i);
    let h = SegmentHeader {
        magic: w(0),
        version: w(1) as u32,
        chunk_count: (w(1) >> 32) as u32,
        port_id: w(2),
        params: SegmentParams {
            elem_size: w(3),
            align: w(4),
            max_len: w(5),
            chunk_count: w(6),
            max_subscribers: w(7),
            buffer: w(8),
            borrowed: w(9),
            tagged: w(11),
            withdrawals: w(12),
            inline: w(13),
        },
    };
    let file_size = w(10);
    // Also try the size the header implies, so valid headers are reached.
    let implied = h.params.geometry().map(|g| g.total_size);
    for size in [Some(file_size), implied].into_iter().flatten() {
        let Ok(g) = h.validate(size) else { continue };
        let p = h.params;
        assert_eq!(g.total_size, size);
        assert_eq!(g.pool_offset % PAGE, 0);
        assert!(g.conns_offset >= LINE);
        assert!(p.tagged <= 1);
        assert!(p.inline <= 1);
        let header = if p.tagged == 1 { 4 } else { 2 };
        assert_eq!(g.slot_words, if p.inline == 1 { 8 } else { header });
        if p.inline == 1 {
            // The largest payload fits the words after the header.
            assert!(p.elem_size * p.max_len <= 8 * (8 - header) && p.align <= 8);
        }
        assert!(g.sub_offset + 8 * g.ring_words() <= g.returns_offset);
        assert_eq!(g.return_slots, p.buffer + p.borrowed);
        assert!(g.returns_offset + 8 * g.return_slots <= g.withdrawn_offset);
        assert_eq!(g.withdrawals, p.withdrawals);
        assert!(g.withdrawn_offset + 8 * g.withdrawals <= g.conn_stride);
        assert!(g.conns_offset + p.max_subscribers * g.conn_stride <= g.pool_offset);
        assert!(p.elem_size * p.max_len <= g.chunk_size);
        assert_eq!(g.chunk_size % 64, 0);
        assert_eq!(g.chunk_size % p.align, 0);
        assert_eq!(g.pool_offset + p.chunk_count * g.chunk_size, g.total_size);
    }
});

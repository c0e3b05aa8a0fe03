/* A payload with fields of every size, laid out as the Rust peer's
 * `hako_tests::Mixed` (crates/hako-ffi/examples/rust_peer.rs). */
#ifndef MIXED_H
#define MIXED_H

#include <stdint.h>

typedef struct mixed {
    uint8_t a;
    uint16_t b;
    uint32_t c;
    uint64_t d;
    float e;
    double f;
} mixed;

#define MIXED_TYPE "hako_tests::Mixed"
#define MIXED_SERVICE "ffi/cross"
/* The request/response service of the cross tests: requests and
 * responses of `mixed`, 4 in flight, 4 responses buffered. */
#define MIXED_RR_SERVICE "ffi/cross-rr"
#define MIXED_RR_IN_FLIGHT 4
#define MIXED_RR_BUFFER 4

/* The message with sequence number `seq`: every field derived from it. */
static inline mixed mixed_of(uint64_t seq) {
    mixed m;
    m.a = (uint8_t)(seq * 7);
    m.b = (uint16_t)(seq * 31);
    m.c = (uint32_t)(seq * 1000003);
    m.d = seq * 0x9e3779b97f4a7c15ull;
    m.e = (float)seq * 0.5f;
    m.f = (double)seq * 0.25;
    return m;
}

static inline int mixed_eq(const mixed* x, const mixed* y) {
    return x->a == y->a && x->b == y->b && x->c == y->c && x->d == y->d && x->e == y->e && x->f == y->f;
}

#endif

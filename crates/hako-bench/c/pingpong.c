/* The `hako-c` transport of hako bench: hako's ping-pong written in C
 * against the C API (hako.h), as a C program would write it. The services
 * and settings are those of the Rust `hako` transport
 * (src/hako_pubsub.rs): "pingpong/<row>/ping" and ".../pong", byte
 * slices, backpressure, queues of 2, one borrowed sample, one loan. The
 * Rust side (src/hako_c.rs) calls these functions and times them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako.h"

typedef struct hb_side {
    hako_node* node;
    hako_pubsub_service* ping;
    hako_pubsub_service* pong;
    hako_publisher* publisher;   /* leader: ping; follower: pong */
    hako_subscriber* subscriber; /* leader: pong; follower: ping */
    size_t size;
    int full;
} hb_side;

/* The last failure, for the Rust side's error. */
static _Thread_local char hb_error[512];

static int fail(const char* what, hako_status s) {
    snprintf(hb_error, sizeof hb_error, "%s: %s (%s)", what, hako_error_string(s), hako_last_error_message());
    return -1;
}

const char* hb_last_error(void) { return hb_error; }

void hb_drop(hb_side* s) {
    if (s == NULL) return;
    hako_subscriber_drop(&s->subscriber);
    hako_publisher_drop(&s->publisher);
    hako_pubsub_service_drop(&s->pong);
    hako_pubsub_service_drop(&s->ping);
    hako_node_drop(&s->node);
    free(s);
}

#define TRY(what, call)                   \
    do {                                  \
        hako_status st_ = (call);         \
        if (st_ != HAKO_OK) {             \
            fail(what, st_);              \
            hb_drop(s);                   \
            return NULL;                  \
        }                                 \
    } while (0)

/* Makes one side of row `row`: the leader creates both services and
 * publishes ping; the follower opens them and publishes pong. */
hb_side* hb_create(int leader, const char* root, uint64_t row, size_t size, int full) {
    hb_side* s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(hb_error, sizeof hb_error, "out of memory");
        return NULL;
    }
    s->size = size;
    s->full = full;
    hako_node_options no = {.name = leader ? "pingpong-c-leader" : "pingpong-c-follower", .root = root};
    TRY("node", hako_node_create(&no, &s->node));
    char ping[64], pong[64];
    snprintf(ping, sizeof ping, "pingpong/%llu/ping", (unsigned long long)row);
    snprintf(pong, sizeof pong, "pingpong/%llu/pong", (unsigned long long)row);
    hako_payload_type bytes = hako_payload_bytes();
    hako_pubsub_options o = {
        .max_publishers = 1,
        .max_subscribers = 1,
        .max_nodes = 2,
        .buffer_size = 2,
        .max_borrowed = 1,
        .overflow = HAKO_OVERFLOW_BACKPRESSURE,
    };
    hako_open_mode mode = leader ? HAKO_CREATE : HAKO_OPEN;
    TRY("ping service", hako_pubsub_service_open(s->node, ping, &bytes, leader ? &o : NULL, mode, &s->ping));
    TRY("pong service", hako_pubsub_service_open(s->node, pong, &bytes, leader ? &o : NULL, mode, &s->pong));
    hako_publisher_options po = {.max_slice_len = size, .max_loans = 1, .backpressure = HAKO_BACKPRESSURE_BLOCK};
    TRY("publisher", hako_publisher_create(leader ? s->ping : s->pong, &po, &s->publisher));
    TRY("subscriber", hako_subscriber_create(leader ? s->pong : s->ping, NULL, &s->subscriber));
    return s;
}

/* Whether the follower's subscriber is connected (the leader polls it). */
int hb_connected(hb_side* s) {
    size_t n = 0;
    if (hako_publisher_subscriber_count(s->publisher, &n) != HAKO_OK) return -1;
    return n == 1;
}

/* Loans a sample, writes tag `t` (first and last byte, or every byte),
 * sends it. */
int hb_send(hb_side* s, uint8_t t) {
    hako_sample_mut m = {0};
    hako_status st = hako_publisher_loan(s->publisher, s->size, &m);
    if (st != HAKO_OK) return fail("loan", st);
    uint8_t* p = m.data;
    if (s->full) {
        memset(p, t, s->size);
    } else {
        p[0] = t;
        p[s->size - 1] = t;
    }
    size_t reached = 0;
    st = hako_publisher_send(s->publisher, &m, &reached);
    if (st != HAKO_OK) return fail("send", st);
    if (reached != 1) {
        snprintf(hb_error, sizeof hb_error, "a message reached %zu subscribers", reached);
        return -1;
    }
    return 0;
}

/* The sum of all bytes, as the Rust side computes it (transport.rs,
 * byte_sum): 8 bytes at a time, each 16-bit lane of an accumulator adding
 * two bytes per word, folded every 1 KiB, so the loop vectorises. */
static uint64_t byte_sum(const uint8_t* p, size_t n) {
    const uint64_t lanes = 0x00ff00ff00ff00ffull;
    uint64_t total = 0;
    size_t i = 0;
    for (; i + 1024 <= n; i += 1024) {
        uint64_t acc = 0;
        for (size_t j = 0; j < 1024; j += 8) {
            uint64_t w;
            memcpy(&w, p + i + j, 8);
            acc += (w & lanes) + ((w >> 8) & lanes);
        }
        total += (acc & 0xffff) + ((acc >> 16) & 0xffff) + ((acc >> 32) & 0xffff) + (acc >> 48);
    }
    for (; i < n; i++) total += p[i];
    return total;
}

/* Busy-polls for the next sample and checks it carries tag `t` (and, in
 * full mode, that its bytes add up to t * size). */
int hb_receive(hb_side* s, uint8_t t) {
    hako_sample r = {0};
    for (uint64_t spins = 0; r.data == NULL; spins++) {
        hako_status st = hako_subscriber_receive(s->subscriber, 0, &r);
        if (st != HAKO_OK) return fail("receive", st);
        if (r.data == NULL && spins > (1ull << 32)) {
            snprintf(hb_error, sizeof hb_error, "gave up waiting for a message");
            return -1;
        }
    }
    const uint8_t* p = r.data;
    size_t n = r.size;
    int ok = n == s->size && p[0] == t && p[n - 1] == t;
    if (ok && s->full) {
        ok = byte_sum(p, n) == (uint64_t)t * n;
    }
    hako_sample_drop(&r);
    if (!ok) {
        snprintf(hb_error, sizeof hb_error, "a message of %zu bytes is not tagged %u", n, t);
        return -1;
    }
    return 0;
}

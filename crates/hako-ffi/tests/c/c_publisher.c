/* Cross-language test, C side: `c_publisher ROOT COUNT` waits for a
 * subscriber (up to 10 s), then publishes COUNT `mixed` messages under
 * backpressure (none is lost), and exits 0. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hako.h"
#include "mixed.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        hako_status s_ = (call);                                                                   \
        if (s_ != HAKO_OK) {                                                                       \
            fprintf(stderr, "%s: %s (%s)\n", #call, hako_error_string(s_), hako_last_error_message()); \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: c_publisher ROOT COUNT\n");
        return 2;
    }
    uint64_t count = strtoull(argv[2], NULL, 10);
    hako_node_options o = {.name = "c_publisher", .root = argv[1]};
    hako_node* node = NULL;
    CHECK(hako_node_create(&o, &node));
    hako_payload_type t = {MIXED_TYPE, sizeof(mixed), _Alignof(mixed), false};
    hako_pubsub_options so = {.overflow = HAKO_OVERFLOW_BACKPRESSURE, .buffer_size = 8};
    hako_pubsub_service* svc = NULL;
    CHECK(hako_pubsub_service_open(node, MIXED_SERVICE, &t, &so, HAKO_OPEN_OR_CREATE, &svc));
    hako_publisher* pub = NULL;
    CHECK(hako_publisher_create(svc, NULL, &pub));
    size_t subscribers = 0;
    for (int i = 0; i < 10000 && subscribers == 0; i++) {
        CHECK(hako_publisher_subscriber_count(pub, &subscribers));
        struct timespec ms = {0, 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    if (subscribers == 0) {
        fprintf(stderr, "no subscriber came\n");
        return 1;
    }
    for (uint64_t seq = 0; seq < count; seq++) {
        hako_sample_mut s = {0};
        CHECK(hako_publisher_loan(pub, 1, &s));
        *(mixed*)s.data = mixed_of(seq);
        size_t reached = 0;
        CHECK(hako_publisher_send(pub, &s, &reached));
        if (reached != 1) {
            fprintf(stderr, "message %llu reached %zu subscribers\n", (unsigned long long)seq, reached);
            return 1;
        }
    }
    printf("RESULT sent=%llu\n", (unsigned long long)count);
    /* Stay until the subscriber has read everything (it leaves then). */
    for (int i = 0; i < 10000 && subscribers > 0; i++) {
        CHECK(hako_publisher_subscriber_count(pub, &subscribers));
        struct timespec ms = {0, 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    CHECK(hako_publisher_drop(&pub));
    CHECK(hako_pubsub_service_drop(&svc));
    CHECK(hako_node_drop(&node));
    return 0;
}

/* The publish/subscribe hot path through the C API, in one thread: loan,
 * write, send, receive, drop of a 64-byte message, N times; the C twin of
 * crates/hako/examples/hotpath.rs. scripts/hotpath counts its instructions
 * per message with callgrind (and compares them with
 * crates/hako/examples/hotpath.figures).
 *
 *   hotpath N [drop_oldest|backpressure]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako.h"

#define TRY(call)                                                                          \
    do {                                                                                   \
        hako_status st_ = (call);                                                          \
        if (st_ != HAKO_OK) {                                                              \
            fprintf(stderr, "%s: %s (%s)\n", #call, hako_error_string(st_),              \
                    hako_last_error_message());                                            \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(int argc, char** argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    const char* mode = argc > 2 ? argv[2] : "drop_oldest";
    hako_overflow overflow;
    if (strcmp(mode, "drop_oldest") == 0) {
        overflow = HAKO_OVERFLOW_DROP_OLDEST;
    } else if (strcmp(mode, "backpressure") == 0) {
        overflow = HAKO_OVERFLOW_BACKPRESSURE;
    } else {
        fprintf(stderr, "unknown mode %s (drop_oldest or backpressure)\n", mode);
        return 2;
    }
    char root[128];
    snprintf(root, sizeof root, "/dev/shm/hako-hotpath-c-%d", (int)getpid());
    hako_node* node = NULL;
    hako_node_options no = {.name = "hotpath-c", .root = root};
    TRY(hako_node_create(&no, &node));
    hako_payload_type bytes = hako_payload_bytes();
    hako_pubsub_options o = {
        .max_publishers = 1, .max_subscribers = 1, .buffer_size = 16, .overflow = overflow};
    hako_pubsub_service* service = NULL;
    TRY(hako_pubsub_service_open(node, "hotpath", &bytes, &o, HAKO_CREATE, &service));
    hako_publisher_options po = {.max_slice_len = 64};
    hako_publisher* publisher = NULL;
    TRY(hako_publisher_create(service, &po, &publisher));
    hako_subscriber* subscriber = NULL;
    TRY(hako_subscriber_create(service, NULL, &subscriber));
    unsigned long sum = 0;
    for (unsigned long i = 0; i < n; i++) {
        hako_sample_mut m = {0};
        TRY(hako_publisher_loan(publisher, 64, &m));
        ((unsigned char*)m.data)[0] = (unsigned char)i;
        TRY(hako_publisher_send(publisher, &m, NULL));
        hako_sample r = {0};
        TRY(hako_subscriber_receive(subscriber, 0, &r));
        if (r.data == NULL) {
            fprintf(stderr, "no sample\n");
            return 1;
        }
        sum += ((const unsigned char*)r.data)[0];
        TRY(hako_sample_drop(&r));
    }
    printf("checksum %lu\n", sum);
    TRY(hako_subscriber_drop(&subscriber));
    TRY(hako_publisher_drop(&publisher));
    TRY(hako_pubsub_service_drop(&service));
    TRY(hako_node_drop(&node));
    rmdir(root);
    return 0;
}

/* Publishes a `transmission` every 100 ms, written in place in shared
 * memory. Start `subscriber_c` (or the Rust `subscriber` example) in
 * another terminal, in either order.
 *
 *   publisher_c [COUNT]
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hako.h"
#include "transmission.h"

static int fail(const char* what, hako_status s) {
    fprintf(stderr, "%s: %s (%s)\n", what, hako_error_string(s), hako_last_error_message());
    return 1;
}

int main(int argc, char** argv) {
    uint64_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : UINT64_MAX;
    hako_node_options node_opts = {.name = "publisher_c", .root = NULL};
    hako_node* node = NULL;
    hako_status s = hako_node_create(&node_opts, &node);
    if (s != HAKO_OK) return fail("node", s);

    hako_payload_type type = {TRANSMISSION_TYPE, sizeof(transmission), _Alignof(transmission), false};
    hako_pubsub_options opts = {.history_size = TRANSMISSION_HISTORY, .buffer_size = TRANSMISSION_BUFFER};
    hako_pubsub_service* service = NULL;
    s = hako_pubsub_service_open(node, TRANSMISSION_SERVICE, &type, &opts, HAKO_OPEN_OR_CREATE, &service);
    if (s != HAKO_OK) return fail("service", s);
    hako_publisher* publisher = NULL;
    s = hako_publisher_create(service, NULL, &publisher);
    if (s != HAKO_OK) return fail("publisher", s);

    for (uint64_t seq = 0; seq < count; seq++) {
        /* Loan a chunk, write the message in place, send it. */
        hako_sample_mut sample = {0};
        s = hako_publisher_loan(publisher, 1, &sample);
        if (s != HAKO_OK) return fail("loan", s);
        transmission* t = sample.data;
        t->seq = seq;
        t->temperature = 20.0 + (double)(seq % 10) * 0.5;
        memset(t->note, 0, sizeof t->note);
        snprintf((char*)t->note, sizeof t->note, "from C #%llu", (unsigned long long)seq);
        size_t reached = 0;
        s = hako_publisher_send(publisher, &sample, &reached);
        if (s != HAKO_OK) return fail("send", s);
        printf("sent #%llu to %zu subscriber(s)\n", (unsigned long long)seq, reached);
        fflush(stdout);
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    hako_publisher_drop(&publisher);
    hako_pubsub_service_drop(&service);
    hako_node_drop(&node);
    return 0;
}

/* Receives `transmission`s, sleeping until each comes (up to a second
 * at a time). Start `publisher_c` (or the Rust `publisher` example) in
 * another terminal, in either order.
 *
 *   subscriber_c [COUNT]
 */
#include <stdio.h>
#include <stdlib.h>

#include "hako.h"
#include "transmission.h"

static int fail(const char* what, hako_status s) {
    fprintf(stderr, "%s: %s (%s)\n", what, hako_error_string(s), hako_last_error_message());
    return 1;
}

int main(int argc, char** argv) {
    uint64_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : UINT64_MAX;
    hako_node_options node_opts = {.name = "subscriber_c", .root = NULL};
    hako_node* node = NULL;
    hako_status s = hako_node_create(&node_opts, &node);
    if (s != HAKO_OK) return fail("node", s);

    hako_payload_type type = {TRANSMISSION_TYPE, sizeof(transmission), _Alignof(transmission), false};
    hako_pubsub_options opts = {.history_size = TRANSMISSION_HISTORY, .buffer_size = TRANSMISSION_BUFFER};
    hako_pubsub_service* service = NULL;
    s = hako_pubsub_service_open(node, TRANSMISSION_SERVICE, &type, &opts, HAKO_OPEN_OR_CREATE, &service);
    if (s != HAKO_OK) return fail("service", s);
    hako_subscriber_options sub_opts = {.wait = HAKO_WAIT_SPIN_THEN_PARK};
    hako_subscriber* subscriber = NULL;
    s = hako_subscriber_create(service, &sub_opts, &subscriber);
    if (s != HAKO_OK) return fail("subscriber", s);

    uint64_t received = 0;
    while (received < count) {
        hako_sample sample = {0};
        s = hako_subscriber_receive(subscriber, 1000 * 1000, &sample);
        if (s == HAKO_ERROR_PEER_GONE) {
            printf("the publishers left; waiting for new ones\n");
            continue;
        }
        if (s != HAKO_OK) return fail("receive", s);
        if (sample.data == NULL) {
            printf("nothing for a second\n");
            continue;
        }
        /* The sample is a view into shared memory, valid until dropped. */
        const transmission* t = sample.data;
        printf("received #%llu %.1f °C \"%s\"\n", (unsigned long long)t->seq, t->temperature,
               (const char*)t->note);
        fflush(stdout);
        hako_sample_drop(&sample);
        received++;
    }
    hako_subscriber_drop(&subscriber);
    hako_pubsub_service_drop(&service);
    hako_node_drop(&node);
    return 0;
}

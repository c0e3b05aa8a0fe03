/* The C API in one process, for valgrind and AddressSanitizer: every
 * handle made and freed, samples both ways, misuse reported (a double
 * drop, another publisher's sample, a slice too long, NULLs), events.
 * `c_api_check ROOT`; exits 0 when every check holds. */
#include <stdio.h>
#include <string.h>

#include "hako.h"

static int failures = 0;
#define EXPECT(cond)                                                        \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, \
                    hako_last_error_message());                            \
            failures++;                                                     \
        }                                                                   \
    } while (0)

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: c_api_check ROOT\n");
        return 2;
    }
    hako_node_options o = {.name = "c_api_check", .root = argv[1]};
    hako_node* node = NULL;
    EXPECT(hako_node_create(&o, &node) == HAKO_OK);
    hako_payload_type bytes = hako_payload_bytes();
    hako_pubsub_service* svc = NULL;
    EXPECT(hako_pubsub_service_open(node, "check/bytes", &bytes, NULL, HAKO_OPEN_OR_CREATE, &svc) == HAKO_OK);
    hako_publisher_options po = {.max_slice_len = 1024, .max_loans = 2};
    hako_publisher *p1 = NULL, *p2 = NULL;
    EXPECT(hako_publisher_create(svc, &po, &p1) == HAKO_OK);
    EXPECT(hako_publisher_create(svc, &po, &p2) == HAKO_OK);
    hako_subscriber* sub = NULL;
    EXPECT(hako_subscriber_create(svc, NULL, &sub) == HAKO_OK);

    /* A loan written in place, received as the same bytes. */
    hako_sample_mut m = {0};
    EXPECT(hako_publisher_loan(p1, 100, &m) == HAKO_OK);
    EXPECT(m.size == 100 && m.len == 100);
    memset(m.data, 0xab, 100);
    size_t reached = 0;
    EXPECT(hako_publisher_send(p1, &m, &reached) == HAKO_OK && m.data == NULL && reached == 1);
    EXPECT(hako_publisher_send(p1, &m, &reached) == HAKO_ERROR_NULL_ARGUMENT);
    EXPECT(hako_publisher_send_copy(p2, "hello", 5, &reached) == HAKO_OK);
    hako_sample s = {0};
    int seen_loan = 0, seen_copy = 0;
    for (int i = 0; i < 2; i++) {
        EXPECT(hako_subscriber_receive(sub, 1000000, &s) == HAKO_OK && s.data != NULL);
        const unsigned char* d = s.data;
        if (s.size == 100 && d[0] == 0xab && d[99] == 0xab) seen_loan = 1;
        if (s.size == 5 && memcmp(d, "hello", 5) == 0) seen_copy = 1;
        /* Receiving into a struct that holds a sample would leak it. */
        EXPECT(hako_subscriber_receive(sub, 0, &s) == HAKO_ERROR_MISUSE);
        EXPECT(hako_sample_drop(&s) == HAKO_OK && s.data == NULL);
    }
    EXPECT(seen_loan && seen_copy);
    EXPECT(hako_subscriber_receive(sub, 0, &s) == HAKO_OK && s.data == NULL);

    /* Misuse, reported. */
    EXPECT(hako_publisher_loan(p1, 8, &m) == HAKO_OK);
    EXPECT(hako_publisher_send(p2, &m, NULL) == HAKO_ERROR_MISUSE && m.data != NULL);
    EXPECT(hako_sample_mut_drop(&m) == HAKO_OK && m.data == NULL);
    EXPECT(hako_sample_mut_drop(&m) == HAKO_ERROR_NULL_ARGUMENT);
    EXPECT(hako_publisher_loan(p1, 1025, &m) == HAKO_ERROR_MISUSE);
    EXPECT(hako_subscriber_receive(sub, 0, NULL) == HAKO_ERROR_NULL_ARGUMENT);
    EXPECT(hako_publisher_send(NULL, &m, NULL) == HAKO_ERROR_NULL_ARGUMENT);
    EXPECT(strlen(hako_last_error_message()) > 0);
    hako_pubsub_service* wrong = NULL;
    hako_payload_type other = {"u32", 4, 4, true};
    EXPECT(hako_pubsub_service_open(node, "check/bytes", &other, NULL, HAKO_OPEN, &wrong) == HAKO_ERROR_INCOMPATIBLE);
    EXPECT(hako_pubsub_service_open(node, "check/none", &bytes, NULL, HAKO_OPEN, &wrong) == HAKO_ERROR_NOT_FOUND);

    /* A sample outlives its subscriber. */
    EXPECT(hako_publisher_send_copy(p1, "late", 4, NULL) == HAKO_OK);
    EXPECT(hako_subscriber_receive(sub, 1000000, &s) == HAKO_OK && s.data != NULL);
    EXPECT(hako_subscriber_drop(&sub) == HAKO_OK);
    EXPECT(s.size == 4 && memcmp(s.data, "late", 4) == 0);
    EXPECT(hako_sample_drop(&s) == HAKO_OK);

    /* Request/response: a stream of two, then the end; misuse refused. */
    hako_payload_type u32t = {"u32", 4, 4, false};
    hako_reqres_service* rr = NULL;
    EXPECT(hako_reqres_service_open(node, "check/rr", &u32t, &u32t, NULL, HAKO_OPEN_OR_CREATE, &rr) == HAKO_OK);
    hako_client* client = NULL;
    hako_server* server = NULL;
    EXPECT(hako_client_create(rr, NULL, &client) == HAKO_OK);
    EXPECT(hako_server_create(rr, NULL, &server) == HAKO_OK);
    hako_message_mut q = {0};
    EXPECT(hako_client_loan(client, 1, &q) == HAKO_OK && q.size == 4);
    *(uint32_t*)q.data = 7;
    hako_pending* pending = NULL;
    EXPECT(hako_client_send(client, &q, &pending) == HAKO_OK && pending != NULL);
    EXPECT(hako_client_drop(&client) == HAKO_ERROR_MISUSE && client != NULL);
    hako_active_request* active = NULL;
    EXPECT(hako_server_receive(server, 1000000, &active) == HAKO_OK && active != NULL);
    EXPECT(*(const uint32_t*)hako_active_request_data(active) == 7);
    for (uint32_t k = 1; k <= 2; k++) {
        hako_message_mut a = {0};
        EXPECT(hako_active_request_loan(active, 1, &a) == HAKO_OK);
        *(uint32_t*)a.data = 7 * k;
        EXPECT(hako_active_request_send(active, &a) == HAKO_OK && a.data == NULL);
    }
    EXPECT(hako_server_drop(&server) == HAKO_ERROR_MISUSE);
    EXPECT(hako_active_request_drop(&active) == HAKO_OK && active == NULL);
    hako_response r = {0};
    bool ended = false;
    for (uint32_t k = 1; k <= 2; k++) {
        EXPECT(hako_pending_receive(pending, 1000000, &r, &ended) == HAKO_OK && r.data != NULL);
        EXPECT(*(const uint32_t*)r.data == 7 * k && !ended);
        EXPECT(hako_response_drop(&r) == HAKO_OK);
    }
    EXPECT(hako_pending_receive(pending, 1000000, &r, &ended) == HAKO_OK && r.data == NULL && ended);
    EXPECT(hako_pending_drop(&pending) == HAKO_OK);
    EXPECT(hako_server_drop(&server) == HAKO_OK);
    EXPECT(hako_client_drop(&client) == HAKO_OK);
    EXPECT(hako_reqres_service_drop(&rr) == HAKO_OK);

    /* Events. */
    hako_event_options eo = {.event_id_max = 3};
    hako_event_service* ev = NULL;
    EXPECT(hako_event_service_open(node, "check/bell", &eo, HAKO_OPEN_OR_CREATE, &ev) == HAKO_OK);
    hako_notifier* n = NULL;
    hako_listener* l = NULL;
    EXPECT(hako_notifier_create(ev, &n) == HAKO_OK);
    EXPECT(hako_listener_create(ev, HAKO_WAIT_PARK, &l) == HAKO_OK);
    EXPECT(hako_notifier_notify(n, 2, &reached) == HAKO_OK && reached == 1);
    EXPECT(hako_notifier_notify(n, 4, NULL) == HAKO_ERROR_INVALID_ARGUMENT);
    hako_event events[4];
    size_t count = 0;
    EXPECT(hako_listener_wait(l, 1000000, events, 4, &count) == HAKO_OK && count == 1);
    EXPECT(events[0].id == 2 && events[0].count == 1);
    EXPECT(hako_listener_wait(l, 0, events, 0, &count) == HAKO_ERROR_BUFFER_TOO_SMALL);

    /* The waitset: the listener ready after a notification, a tick, and
     * an attached listener refusing to drop. */
    hako_waitset* ws = NULL;
    EXPECT(hako_waitset_create(&ws) == HAKO_OK);
    size_t lid = 99, tid = 99;
    EXPECT(hako_waitset_attach_listener(ws, l, &lid) == HAKO_OK && lid == 0);
    EXPECT(hako_waitset_attach_interval(ws, 1000, &tid) == HAKO_OK && tid == 1);
    EXPECT(hako_notifier_notify(n, 1, NULL) == HAKO_OK);
    hako_wait_event we[4];
    hako_wait_outcome how = HAKO_WAIT_TIMED_OUT;
    EXPECT(hako_waitset_wait(ws, 1000000, we, 4, &count, &how) == HAKO_OK && count >= 1);
    EXPECT(how == HAKO_WAIT_EVENTS);
    EXPECT(hako_listener_drop(&l) == HAKO_ERROR_MISUSE && l != NULL);
    EXPECT(hako_waitset_drop(&ws) == HAKO_OK && ws == NULL);

    EXPECT(hako_listener_drop(&l) == HAKO_OK);
    EXPECT(hako_notifier_drop(&n) == HAKO_OK);
    EXPECT(hako_event_service_drop(&ev) == HAKO_OK);
    EXPECT(hako_publisher_drop(&p1) == HAKO_OK);
    EXPECT(hako_publisher_drop(&p2) == HAKO_OK);
    EXPECT(hako_pubsub_service_drop(&svc) == HAKO_OK);
    /* A watcher: made, asked, dropped; a domain that is not there is
     * NOT_FOUND. */
    hako_watcher* watcher = NULL;
    EXPECT(hako_watcher_create(argv[1], &watcher) == HAKO_OK);
    hako_change change;
    bool got = true;
    EXPECT(hako_watcher_next(watcher, 0, &change, &got) == HAKO_OK && !got);
    int wfd = -1;
    EXPECT(hako_watcher_fd(watcher, &wfd) == HAKO_OK && wfd >= 0);
    EXPECT(hako_watcher_drop(&watcher) == HAKO_OK && watcher == NULL);
    EXPECT(hako_watcher_drop(&watcher) == HAKO_ERROR_NULL_ARGUMENT);
    EXPECT(hako_watcher_create("/dev/shm/hako-no-such-domain-here", &watcher) == HAKO_ERROR_NOT_FOUND);
    EXPECT(hako_node_drop(&node) == HAKO_OK);
    EXPECT(hako_node_drop(&node) == HAKO_ERROR_NULL_ARGUMENT);
    if (failures == 0) printf("RESULT checks passed\n");
    return failures == 0 ? 0 : 1;
}

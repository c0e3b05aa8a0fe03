/* A request/response server in C: answers each `add_request` with the sum
 * (one response, the last of its stream). Pairs with `client_cpp` or the
 * Rust `client` example.
 *
 *   server_c [COUNT]
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
    hako_node_options no = {.name = "server_c", .root = NULL};
    hako_node* node = NULL;
    hako_status s = hako_node_create(&no, &node);
    if (s != HAKO_OK) return fail("node", s);
    hako_payload_type rq = {ADD_REQUEST_TYPE, sizeof(add_request), _Alignof(add_request), false};
    hako_payload_type rs = {ADD_RESPONSE_TYPE, sizeof(add_response), _Alignof(add_response), false};
    hako_reqres_options o = {.max_requests_in_flight = ADD_IN_FLIGHT};
    hako_reqres_service* svc = NULL;
    s = hako_reqres_service_open(node, ADD_SERVICE, &rq, &rs, &o, HAKO_OPEN_OR_CREATE, &svc);
    if (s != HAKO_OK) return fail("service", s);
    hako_server* server = NULL;
    s = hako_server_create(svc, NULL, &server);
    if (s != HAKO_OK) return fail("server", s);

    for (uint64_t served = 0; served < count;) {
        hako_active_request* req = NULL;
        s = hako_server_receive(server, 1000 * 1000, &req);
        if (s != HAKO_OK) return fail("receive", s);
        if (req == NULL) continue; /* nothing for a second */
        /* The request is read in place, in the client's shared memory. */
        const add_request* r = hako_active_request_data(req);
        hako_message_mut answer = {0};
        s = hako_active_request_loan(req, 1, &answer);
        if (s != HAKO_OK) return fail("loan", s);
        ((add_response*)answer.data)->sum = r->a + r->b;
        printf("%llu + %llu\n", (unsigned long long)r->a, (unsigned long long)r->b);
        fflush(stdout);
        /* The answer and the end of its stream in one message. */
        s = hako_active_request_send_last(&req, &answer);
        if (s != HAKO_OK) return fail("send", s);
        served++;
    }
    hako_server_drop(&server);
    hako_reqres_service_drop(&svc);
    hako_node_drop(&node);
    return 0;
}

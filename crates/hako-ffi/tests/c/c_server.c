/* Cross-language test, C server: `c_server ROOT COUNT RESPONSES` answers
 * COUNT requests (each checked to be mixed_of(seq)) with a stream of
 * RESPONSES responses mixed_of(seq + 1), ..., then ends it; exits 0. */
#include <stdio.h>
#include <stdlib.h>

#include "hako.h"
#include "mixed.h"

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        hako_status s_ = (call);                                                                       \
        if (s_ != HAKO_OK) {                                                                           \
            fprintf(stderr, "%s: %s (%s)\n", #call, hako_error_string(s_), hako_last_error_message()); \
            return 1;                                                                                  \
        }                                                                                              \
    } while (0)

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: c_server ROOT COUNT RESPONSES\n");
        return 2;
    }
    uint64_t count = strtoull(argv[2], NULL, 10);
    uint64_t responses = strtoull(argv[3], NULL, 10);
    hako_node_options o = {.name = "c_server", .root = argv[1]};
    hako_node* node = NULL;
    CHECK(hako_node_create(&o, &node));
    hako_payload_type t = {MIXED_TYPE, sizeof(mixed), _Alignof(mixed), false};
    hako_reqres_options ro = {.max_requests_in_flight = MIXED_RR_IN_FLIGHT, .max_response_buffer = MIXED_RR_BUFFER};
    hako_reqres_service* svc = NULL;
    CHECK(hako_reqres_service_open(node, MIXED_RR_SERVICE, &t, &t, &ro, HAKO_OPEN_OR_CREATE, &svc));
    hako_server* server = NULL;
    CHECK(hako_server_create(svc, NULL, &server));
    for (uint64_t seq = 0; seq < count; seq++) {
        hako_active_request* req = NULL;
        CHECK(hako_server_receive(server, 10 * 1000 * 1000, &req));
        if (req == NULL) {
            fprintf(stderr, "request %llu did not come\n", (unsigned long long)seq);
            return 1;
        }
        mixed want = mixed_of(seq);
        if (hako_active_request_size(req) != sizeof(mixed) ||
            !mixed_eq((const mixed*)hako_active_request_data(req), &want)) {
            fprintf(stderr, "request %llu is wrong\n", (unsigned long long)seq);
            return 1;
        }
        for (uint64_t k = 1; k <= responses; k++) {
            hako_message_mut m = {0};
            CHECK(hako_active_request_loan(req, 1, &m));
            *(mixed*)m.data = mixed_of(seq + k);
            CHECK(hako_active_request_send(req, &m));
        }
        CHECK(hako_active_request_drop(&req)); /* ends the stream */
    }
    printf("RESULT served=%llu\n", (unsigned long long)count);
    CHECK(hako_server_drop(&server));
    CHECK(hako_reqres_service_drop(&svc));
    CHECK(hako_node_drop(&node));
    return 0;
}

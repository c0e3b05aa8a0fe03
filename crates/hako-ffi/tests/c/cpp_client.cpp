// Cross-language test, C++ client: `cpp_client ROOT COUNT RESPONSES`
// sends COUNT requests (mixed_of(seq)), one at a time, and expects each
// to be answered by RESPONSES responses mixed_of(seq + 1), mixed_of(seq +
// 2), ... and the end of the stream; exits 0 when all are right.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "hako.hpp"
#include "mixed.h"

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: cpp_client ROOT COUNT RESPONSES\n");
        return 2;
    }
    uint64_t count = std::strtoull(argv[2], nullptr, 10);
    uint64_t responses = std::strtoull(argv[3], nullptr, 10);
    try {
        hako::Node node("cpp_client", argv[1]);
        hako::ReqResOptions o{};
        o.max_requests_in_flight = MIXED_RR_IN_FLIGHT;
        o.max_response_buffer = MIXED_RR_BUFFER;
        auto svc = hako::ReqResService<mixed, mixed>::open_or_create(node, MIXED_RR_SERVICE, MIXED_TYPE, MIXED_TYPE, o);
        hako::Client<mixed, mixed> client(svc);
        for (uint64_t seq = 0; seq < count; seq++) {
            // The server may not be there yet: a request with no server to
            // take it fails, and is tried again.
            std::optional<hako::Pending<mixed>> pending;
            for (int tries = 0; !pending; tries++) {
                try {
                    pending.emplace(client.send_copy(mixed_of(seq)));
                } catch (const hako::Error& e) {
                    if (e.status() != HAKO_ERROR_PEER_GONE || tries > 10000) throw;
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
            }
            for (uint64_t k = 1; k <= responses; k++) {
                auto r = pending->receive(hako::Timeout::after(std::chrono::seconds(10)));
                mixed want = mixed_of(seq + k);
                if (!r || r->size() != 1 || !mixed_eq(r->data(), &want)) {
                    std::fprintf(stderr, "response %llu of request %llu is wrong or missing\n",
                                 static_cast<unsigned long long>(k), static_cast<unsigned long long>(seq));
                    return 1;
                }
            }
            auto end = pending->receive(hako::Timeout::after(std::chrono::seconds(10)));
            if (end || !pending->ended()) {
                std::fprintf(stderr, "request %llu: no end of stream\n", static_cast<unsigned long long>(seq));
                return 1;
            }
        }
        std::printf("RESULT answered=%llu\n", static_cast<unsigned long long>(count));
    } catch (const hako::Error& e) {
        std::fprintf(stderr, "hako: %s\n", e.what());
        return 1;
    }
    return 0;
}

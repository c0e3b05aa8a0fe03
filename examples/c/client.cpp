// A request/response client in C++: sends additions one at a time and
// checks each sum. Pairs with `server_c` or the Rust `server` example.
//
//   client_cpp [COUNT]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "hako.hpp"
#include "transmission.h"

int main(int argc, char** argv) {
    uint64_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 5;
    try {
        hako::Node node("client_cpp");
        hako::ReqResOptions o{};
        o.max_requests_in_flight = ADD_IN_FLIGHT;
        auto adder = hako::ReqResService<add_request, add_response>::open_or_create(
            node, ADD_SERVICE, ADD_REQUEST_TYPE, ADD_RESPONSE_TYPE, o);
        hako::Client<add_request, add_response> client(adder);
        for (uint64_t i = 0; i < count; i++) {
            add_request q{i, 10 * i};
            // Until a server is there (up to 10 s).
            std::optional<hako::Pending<add_response>> pending;
            for (int tries = 0; !pending; tries++) {
                try {
                    pending.emplace(client.send_copy(q));
                } catch (const hako::Error& e) {
                    if (e.status() != HAKO_ERROR_PEER_GONE || tries > 1000) throw;
                    std::this_thread::sleep_for(std::chrono::milliseconds(10));
                }
            }
            auto r = pending->receive(hako::Timeout::after(std::chrono::seconds(10)));
            if (!r || (*r)->sum != q.a + q.b) {
                std::fprintf(stderr, "%llu + %llu: no or a wrong answer\n", static_cast<unsigned long long>(q.a),
                             static_cast<unsigned long long>(q.b));
                return 1;
            }
            std::printf("%llu + %llu = %llu\n", static_cast<unsigned long long>(q.a),
                        static_cast<unsigned long long>(q.b), static_cast<unsigned long long>((*r)->sum));
        }
    } catch (const hako::Error& e) {
        std::fprintf(stderr, "hako: %s\n", e.what());
        return 1;
    }
    return 0;
}

// Cross-language test, C++ side: `cpp_subscriber ROOT COUNT` receives
// COUNT `mixed` messages through the C++ wrapper and checks every field
// of each against its sequence number; exits 0 when all are right.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "hako.hpp"
#include "mixed.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: cpp_subscriber ROOT COUNT\n");
        return 2;
    }
    uint64_t count = std::strtoull(argv[2], nullptr, 10);
    try {
        hako::Node node("cpp_subscriber", argv[1]);
        hako::PubSubOptions o{};
        o.overflow = HAKO_OVERFLOW_BACKPRESSURE;
        o.buffer_size = 8;
        auto svc = hako::PubSubService<mixed>::open_or_create(node, MIXED_SERVICE, MIXED_TYPE, o);
        hako::Subscriber<mixed> sub(svc);
        for (uint64_t seq = 0; seq < count; seq++) {
            auto s = sub.receive(hako::Timeout::after(std::chrono::seconds(10)));
            if (!s) {
                std::fprintf(stderr, "message %llu did not come\n", static_cast<unsigned long long>(seq));
                return 1;
            }
            mixed want = mixed_of(seq);
            if (s->size() != 1 || !mixed_eq(s->data(), &want)) {
                std::fprintf(stderr, "message %llu is wrong\n", static_cast<unsigned long long>(seq));
                return 1;
            }
        }
        std::printf("RESULT received=%llu\n", static_cast<unsigned long long>(count));
    } catch (const hako::Error& e) {
        std::fprintf(stderr, "hako: %s\n", e.what());
        return 1;
    }
    return 0;
}

// C++ wrapper test of lossy subscribers: `cpp_lossy ROOT`. On a
// backpressure service whose queues hold 2, a publisher sends 10 samples
// that nobody takes. A lossy subscriber never holds it back (with a plain
// subscriber the third send would wait): it keeps the newest 2, in order,
// while a plain subscriber made afterwards holds the publisher back as
// before (its sends under the Discard strategy report who got them).
// Exits 0 when all is right.
#include <cinttypes>
#include <cstdio>

#include "hako.hpp"

static int fail(const char* what) {
    std::fprintf(stderr, "cpp_lossy: %s\n", what);
    return 1;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: cpp_lossy ROOT\n");
        return 2;
    }
    try {
        hako::Node node("cpp_lossy", argv[1]);
        hako::PubSubOptions o{};
        o.overflow = HAKO_OVERFLOW_BACKPRESSURE;
        o.buffer_size = 2;
        auto svc = hako::PubSubService<uint64_t>::create(node, "Lossy/Counter", "u64", o);
        hako::Subscriber<uint64_t> lossy(svc, hako::Wait::SpinThenPark, false, true);
        hako::PublisherOptions po{};
        po.backpressure = HAKO_BACKPRESSURE_DISCARD;
        hako::Publisher<uint64_t> publisher(svc, po);
        for (uint64_t v = 0; v < 10; v++) {
            // Discard would give up on a plain subscriber's full queue;
            // the lossy one takes every sample, losing its oldest.
            if (publisher.send_copy(v) != 1) {
                return fail("a send did not reach the lossy subscriber");
            }
        }
        for (uint64_t want = 8; want < 10; want++) {
            auto s = lossy.receive();
            if (!s || **s != want) {
                return fail("the lossy subscriber did not keep the newest two, in order");
            }
        }
        if (lossy.receive()) {
            return fail("the lossy subscriber kept more than its queue holds");
        }
        // A plain subscriber keeps its backpressure: the third send finds
        // its queue full and, under Discard, reaches the lossy one alone.
        hako::Subscriber<uint64_t> plain(svc);
        size_t reached[3];
        for (uint64_t v = 0; v < 3; v++) {
            reached[v] = publisher.send_copy(100 + v);
        }
        if (reached[0] != 2 || reached[1] != 2 || reached[2] != 1) {
            std::fprintf(stderr, "cpp_lossy: reached %zu, %zu, %zu subscribers\n", reached[0], reached[1],
                         reached[2]);
            return 1;
        }
        std::printf("RESULT lossy ok\n");
    } catch (const hako::Error& e) {
        std::fprintf(stderr, "hako: %s\n", e.what());
        return 1;
    }
    return 0;
}

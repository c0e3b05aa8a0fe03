// Publish/subscribe from C++ with the header-only wrapper (hako.hpp):
// `pubsub_cpp publish [COUNT]` or `pubsub_cpp subscribe [COUNT]`, on the
// examples' Transmission service, so it pairs with the C and Rust
// publisher and subscriber examples.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "hako.hpp"
#include "transmission.h"

int main(int argc, char** argv) {
    if (argc < 2 || (std::strcmp(argv[1], "publish") != 0 && std::strcmp(argv[1], "subscribe") != 0)) {
        std::fprintf(stderr, "usage: pubsub_cpp publish|subscribe [COUNT]\n");
        return 2;
    }
    uint64_t count = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : UINT64_MAX;
    try {
        hako::Node node("pubsub_cpp");
        hako::PubSubOptions options{};
        options.history_size = TRANSMISSION_HISTORY;
        options.buffer_size = TRANSMISSION_BUFFER;
        auto topic = hako::PubSubService<transmission>::open_or_create(node, TRANSMISSION_SERVICE,
                                                                       TRANSMISSION_TYPE, options);
        if (std::strcmp(argv[1], "publish") == 0) {
            hako::Publisher<transmission> publisher(topic);
            for (uint64_t seq = 0; seq < count; seq++) {
                auto sample = publisher.loan();  // in shared memory
                sample->seq = seq;
                sample->temperature = 20.0 + static_cast<double>(seq % 10) * 0.5;
                std::memset(sample->note, 0, sizeof sample->note);
                std::snprintf(reinterpret_cast<char*>(sample->note), sizeof sample->note, "from C++ #%llu",
                              static_cast<unsigned long long>(seq));
                size_t reached = publisher.send(std::move(sample));
                std::printf("sent #%llu to %zu subscriber(s)\n", static_cast<unsigned long long>(seq), reached);
                std::fflush(stdout);
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        } else {
            hako::Subscriber<transmission> subscriber(topic);
            uint64_t received = 0;
            while (received < count) {
                auto sample = subscriber.receive(hako::Timeout::after(std::chrono::seconds(1)));
                if (!sample) {
                    std::printf("nothing for a second\n");
                    continue;
                }
                std::printf("received #%llu %.1f °C \"%s\"\n", static_cast<unsigned long long>((*sample)->seq),
                            (*sample)->temperature, reinterpret_cast<const char*>((*sample)->note));
                std::fflush(stdout);
                received++;
            }
        }
    } catch (const hako::Error& e) {
        std::fprintf(stderr, "hako: %s\n", e.what());
        return 1;
    }
    return 0;
}

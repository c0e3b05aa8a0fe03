// Events from C++: `events_cpp listen [COUNT]` waits for events of the
// doorbell service and prints them; `events_cpp notify [COUNT]` rings
// it every 100 ms (ids 1..7 in turn). Interoperates with the Rust
// `listener` and `notifier` examples.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "hako.hpp"
#include "transmission.h"

int main(int argc, char** argv) {
    if (argc < 2 || (std::strcmp(argv[1], "listen") != 0 && std::strcmp(argv[1], "notify") != 0)) {
        std::fprintf(stderr, "usage: events_cpp listen|notify [COUNT]\n");
        return 2;
    }
    uint64_t count = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : UINT64_MAX;
    try {
        hako::Node node("events_cpp");
        hako::EventOptions options{};
        options.event_id_max = DOORBELL_EVENT_ID_MAX;
        auto bell = hako::EventService::open_or_create(node, DOORBELL_SERVICE, options);
        if (std::strcmp(argv[1], "notify") == 0) {
            hako::Notifier notifier(bell);
            for (uint64_t i = 0; i < count; i++) {
                uint64_t id = 1 + i % DOORBELL_EVENT_ID_MAX;
                std::printf("rang %llu, %zu listener(s)\n", (unsigned long long)id, notifier.notify(id));
                std::fflush(stdout);
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        } else {
            // A waitset: the listener, and a deadline that fires when it
            // stays silent for 2 s. Ctrl-C ends the wait cleanly.
            hako::Listener listener(bell, hako::Wait::Park);
            hako::WaitSet waitset;
            size_t bell_id = waitset.attach(listener);
            size_t quiet_id = waitset.attach_deadline(bell_id, std::chrono::seconds(2));
            uint64_t seen = 0;
            bool terminated = false;
            while (seen < count && !terminated) {
                for (const auto& w : waitset.wait(hako::Timeout::forever(), &terminated)) {
                    if (w.id == quiet_id) {
                        std::printf("nothing for 2 s\n");
                        continue;
                    }
                    for (const auto& e : listener.wait(hako::Timeout::now())) {
                        std::printf("event %llu (x%llu)\n", (unsigned long long)e.id, (unsigned long long)e.count);
                        seen += e.count;
                    }
                }
                std::fflush(stdout);
            }
        }
    } catch (const hako::Error& e) {
        std::fprintf(stderr, "hako: %s\n", e.what());
        return 1;
    }
    return 0;
}

// Cross-language test, C++ events: `cpp_events ROOT ID` waits (up to 10 s)
// for event ID on "ffi/bell", then notifies ID - 1 and exits 0 (the other
// side is a Go notifier and listener, go/pairs_test.go).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "hako.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: cpp_events ROOT ID\n");
        return 2;
    }
    uint64_t id = std::strtoull(argv[2], nullptr, 10);
    try {
        hako::Node node("cpp_events", argv[1]);
        auto bells = hako::EventService::open_or_create(node, "ffi/bell");
        hako::Listener listener(bells);
        hako::Notifier notifier(bells);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (bool heard = false; !heard;) {
            if (std::chrono::steady_clock::now() > deadline) {
                std::fprintf(stderr, "event %llu did not come\n", static_cast<unsigned long long>(id));
                return 1;
            }
            for (const hako_event& e : listener.wait(hako::Timeout::after(std::chrono::milliseconds(100)))) {
                heard = heard || e.id == id;
            }
        }
        notifier.notify(id - 1);
        std::printf("RESULT heard=%llu\n", static_cast<unsigned long long>(id));
    } catch (const hako::Error& e) {
        std::fprintf(stderr, "hako: %s\n", e.what());
        return 1;
    }
    return 0;
}

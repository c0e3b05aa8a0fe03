// Cross-language test, C++ blackboard: `cpp_board read ROOT COUNT` reads
// the entry "mixed" of the board "ffi/board" each time it changes (by copy
// and in place, in turn), checking that version v holds mixed_of(v), until
// version COUNT (`read-waitset`: the same, woken by a waitset the reader is
// attached to, its entry watched, instead of the entry's own wait);
// `cpp_board write ROOT COUNT` waits for a reader, then
// publishes versions 1..COUNT (by copy and in place, in turn) and waits for
// the reader to leave. Either side may be Rust (rust_peer board-read /
// board-write).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "hako.hpp"
#include "mixed.h"

static hako::Blackboard board(const hako::Node& node) {
    hako::Blackboard b;
    hako::BoardOptions o{};
    o.max_readers = 2;
    b.entry<mixed>("mixed", MIXED_TYPE, mixed_of(0)).open_or_create(node, "ffi/board", o);
    return b;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: cpp_board read|read-waitset|write ROOT COUNT\n");
        return 2;
    }
    bool write = std::strcmp(argv[1], "write") == 0;
    bool waitset = std::strcmp(argv[1], "read-waitset") == 0;
    uint64_t count = std::strtoull(argv[3], nullptr, 10);
    try {
        hako::Node node("cpp_board", argv[2]);
        hako::Blackboard b = board(node);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        if (write) {
            hako::BoardWriter writer(b);
            auto entry = writer.entry<mixed>("mixed", MIXED_TYPE);
            while (b.reader_count() == 0) {
                if (std::chrono::steady_clock::now() > deadline) {
                    std::fprintf(stderr, "no reader came\n");
                    return 1;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            for (uint64_t v = 1; v <= count; v++) {
                uint64_t got = v % 2 ? entry.update(mixed_of(v)) : entry.update_in_place([v](mixed& m) { m = mixed_of(v); });
                if (got != v) {
                    std::fprintf(stderr, "version %llu published as %llu\n", (unsigned long long)v,
                                 (unsigned long long)got);
                    return 1;
                }
            }
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (b.reader_count() > 0 && std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            std::printf("RESULT board-wrote=%llu\n", (unsigned long long)count);
        } else {
            hako::BoardReader reader(b, hako::Wait::Park);
            auto entry = reader.entry<mixed>("mixed", MIXED_TYPE);
            hako::WaitSet ws;
            size_t id = 0;
            if (waitset) {
                entry.watch();
                id = ws.attach(reader);
            }
            uint64_t wakes = 0;
            uint64_t last = 0;
            for (int turn = 0; last < count; turn++) {
                if (waitset) {
                    // Ready while the watched entry changed since it was
                    // last read: wait unless it did already.
                    while (!entry.changed()) {
                        auto events = ws.wait(hako::Timeout::after(std::chrono::seconds(10)));
                        if (events.empty() || events[0].id != id) {
                            std::fprintf(stderr, "no wake after version %llu\n", (unsigned long long)last);
                            return 1;
                        }
                        wakes++;
                    }
                } else if (!entry.wait(hako::Timeout::after(std::chrono::seconds(10)))) {
                    std::fprintf(stderr, "no change after version %llu\n", (unsigned long long)last);
                    return 1;
                }
                bool ok = true;
                uint64_t version = 0;
                if (turn % 2) {
                    entry.read([&](const mixed& m, uint64_t v) {
                        mixed want = mixed_of(v);
                        ok = mixed_eq(&m, &want);
                        version = v;
                    });
                } else {
                    auto [m, v] = entry.get();
                    mixed want = mixed_of(v);
                    ok = mixed_eq(&m, &want);
                    version = v;
                }
                if (!ok || version < last) {
                    std::fprintf(stderr, "version %llu is wrong\n", (unsigned long long)version);
                    return 1;
                }
                last = version;
            }
            if (waitset && wakes == 0) {
                std::fprintf(stderr, "the waitset never woke\n");
                return 1;
            }
            std::printf("RESULT board-read=%llu\n", (unsigned long long)last);
        }
    } catch (const hako::Error& e) {
        std::fprintf(stderr, "hako: %s\n", e.what());
        return 1;
    }
    return 0;
}

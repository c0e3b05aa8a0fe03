// Discovery from C++ (the wrapper) and C (the descriptor, polled): a
// watcher sees a child process join with a subscriber, die of SIGKILL, and
// be reclaimed. `cpp_watch ROOT`; prints "RESULT watch ok" when every
// change came.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hako.hpp"

// Waits (polling the watcher's descriptor, as a C program would) until a
// change of every kind in `kinds` came (about `service`, for the changes
// that name one), in any order.
static bool await_all(hako::Watcher& w, std::vector<hako_change_kind> kinds, const char* service) {
    for (int tries = 0; tries < 600 && !kinds.empty(); tries++) {
        struct pollfd p = {w.fd(), POLLIN, 0};
        poll(&p, 1, 100);
        while (auto c = w.next(hako::Timeout::now())) {
            if (c->service[0] != '\0' && std::strcmp(c->service, service) != 0) continue;
            for (size_t i = 0; i < kinds.size(); i++) {
                if (kinds[i] == c->kind) {
                    kinds.erase(kinds.begin() + static_cast<std::ptrdiff_t>(i));
                    break;
                }
            }
        }
    }
    for (auto k : kinds) std::fprintf(stderr, "no change of kind %d came\n", static_cast<int>(k));
    return kinds.empty();
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: cpp_watch ROOT\n");
        return 2;
    }
    const std::string root = argv[1];
    int go[2];
    if (pipe(go) != 0) return 1;
    pid_t child = fork();
    if (child == 0) {
        // The child: waits for the watcher, then joins with a subscriber
        // and stays until killed.
        char c;
        if (read(go[0], &c, 1) != 1) _exit(1);
        hako::Node node("watched", root);
        auto svc = hako::PubSubService<uint64_t>::open_or_create(node, "watch/me", "u64");
        hako::Subscriber<uint64_t> sub(svc);
        for (;;) pause();
    }
    // The domain must exist to be watched: a node of ours makes it.
    hako::Node node("watcher", root);
    hako::Watcher w(root);
    if (write(go[1], "g", 1) != 1) return 1;
    bool ok = await_all(w, {HAKO_CHANGE_SERVICE_CREATED, HAKO_CHANGE_NODE_JOINED, HAKO_CHANGE_PORT_ADDED},
                        "watch/me");
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    ok = ok && await_all(w, {HAKO_CHANGE_NODE_DIED, HAKO_CHANGE_PORT_DIED}, "watch/me");
    size_t reclaimed = 0;
    ok = ok && hako_reclaim_dead_nodes(root.c_str(), &reclaimed) == HAKO_OK && reclaimed == 1;
    ok = ok && await_all(w, {HAKO_CHANGE_PORT_RECLAIMED, HAKO_CHANGE_SERVICE_REMOVED, HAKO_CHANGE_NODE_RECLAIMED},
                         "watch/me");
    // Nothing more: a wait times out.
    ok = ok && !w.next(hako::Timeout::after(std::chrono::milliseconds(100)));
    std::printf(ok ? "RESULT watch ok\n" : "RESULT watch FAILED\n");
    return ok ? 0 : 1;
}

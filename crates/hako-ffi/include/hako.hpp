// hako: zero-copy inter-process communication over shared memory; the C++17
// wrapper over the C API (hako.h). Header-only.
//
// Errors are exceptions: every failing call throws hako::Error, which
// carries the hako_status and the message of the failure. Handles are
// RAII, move-only types; a sample keeps what it needs alive, so it may
// outlive its port, but it cannot be copied, and sending consumes it.
//
//   hako::Node node;
//   auto topic = hako::PubSubService<Frame>::open_or_create(node, "Camera/Frame", "my_crate::Frame");
//   hako::Publisher<Frame> publisher(topic);
//   auto sample = publisher.loan();
//   sample->width = 640;
//   publisher.send(std::move(sample));
//
// Thread safety as in C: nodes and services from any thread; a port from
// one thread at a time.

#ifndef HAKO_HPP
#define HAKO_HPP

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hako.h"

namespace hako {

/// A failed call: its status and message.
class Error : public std::runtime_error {
public:
    Error(hako_status status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    /// The C status.
    hako_status status() const noexcept { return status_; }

private:
    hako_status status_;
};

namespace detail {

inline void check(hako_status s) {
    if (s != HAKO_OK) {
        std::string message = hako_last_error_message();
        if (message.empty()) {
            message = hako_error_string(s);
        }
        throw Error(s, message);
    }
}

/// An owning C handle, freed by `Drop` (which takes its address and
/// clears it).
template <typename T, hako_status (*Drop)(T**)>
class Handle {
public:
    Handle() noexcept = default;
    explicit Handle(T* p) noexcept : p_(p) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    ~Handle() { reset(); }
    void reset() noexcept {
        if (p_ != nullptr) {
            Drop(&p_);
        }
    }
    T* get() const noexcept { return p_; }
    /// The handle's own slot, for calls that consume it (they clear it).
    T** slot() noexcept { return &p_; }
    T** out() noexcept {
        reset();
        return &p_;
    }
    explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    T* p_ = nullptr;
};

inline uint64_t micros(std::chrono::microseconds d) {
    return d.count() < 0 ? 0 : static_cast<uint64_t>(d.count());
}

}  // namespace detail

/// How waits wait (see hako_wait_strategy).
enum class Wait { SpinThenPark = HAKO_WAIT_SPIN_THEN_PARK, BusySpin = HAKO_WAIT_BUSY_SPIN, Park = HAKO_WAIT_PARK };

/// A waiting time: a duration, or forever.
struct Timeout {
    uint64_t us;
    /// No waiting.
    static Timeout now() { return {0}; }
    /// Until something comes.
    static Timeout forever() { return {HAKO_FOREVER}; }
    /// Up to `d`.
    template <typename Rep, typename Period>
    static Timeout after(std::chrono::duration<Rep, Period> d) {
        return {detail::micros(std::chrono::duration_cast<std::chrono::microseconds>(d))};
    }
};

/// A node: this process's membership of a domain.
class Node {
public:
    /// A node of the domain in effect (HAKO_CONFIG, HAKO_ROOT, else the
    /// user's own /dev/shm/hako-<uid>).
    Node() { detail::check(hako_node_create(nullptr, h_.out())); }
    /// A named node, in `root` if not empty. `signal_handling` false: hako
    /// leaves SIGINT and SIGTERM alone (for programs that handle them).
    explicit Node(const std::string& name, const std::string& root = {},
                  bool signal_handling = true) {
        hako_node_options o{name.empty() ? nullptr : name.c_str(), root.empty() ? nullptr : root.c_str(),
                            !signal_handling};
        detail::check(hako_node_create(&o, h_.out()));
    }
    /// Its id, as `hako nodes` shows it.
    uint64_t id() const {
        uint64_t id = 0;
        detail::check(hako_node_id(h_.get(), &id));
        return id;
    }
    const hako_node* get() const noexcept { return h_.get(); }

private:
    detail::Handle<hako_node, hako_node_drop> h_;
};

/// Removes what dead nodes left in `root` (empty: the domain in effect);
/// the number of dead nodes.
inline size_t reclaim_dead_nodes(const std::string& root = {}) {
    size_t n = 0;
    detail::check(hako_reclaim_dead_nodes(root.empty() ? nullptr : root.c_str(), &n));
    return n;
}

/// Settings of a publish/subscribe service (0: the default on create,
/// anything on open).
using PubSubOptions = hako_pubsub_options;

/// A publish/subscribe service carrying `T` (trivially copyable, laid out
/// as the Rust type of the same name) or, for `Slice<T>`, slices of `T`.
template <typename T>
struct Slice {};

namespace detail {
template <typename P>
struct PayloadOf {
    using Element = P;
    static constexpr bool slice = false;
};
template <typename T>
struct PayloadOf<Slice<T>> {
    using Element = T;
    static constexpr bool slice = true;
};
}  // namespace detail

template <typename P>
class PubSubService {
    using Element = typename detail::PayloadOf<P>::Element;
    static_assert(std::is_trivially_copyable_v<Element>, "payloads are plain data");

public:
    /// Opens the service `name` if it exists, creates it otherwise.
    /// `type_name` is the element type's name as Rust gives it
    /// (`my_crate::Frame`, `u8`).
    static PubSubService open_or_create(const Node& node, const std::string& name, const std::string& type_name,
                                        const PubSubOptions& options = {}) {
        return PubSubService(node, name, type_name, options, HAKO_OPEN_OR_CREATE);
    }
    /// Creates it; throws if it exists.
    static PubSubService create(const Node& node, const std::string& name, const std::string& type_name,
                                const PubSubOptions& options = {}) {
        return PubSubService(node, name, type_name, options, HAKO_CREATE);
    }
    /// Opens it; throws if it does not exist or does not match.
    static PubSubService open(const Node& node, const std::string& name, const std::string& type_name,
                              const PubSubOptions& options = {}) {
        return PubSubService(node, name, type_name, options, HAKO_OPEN);
    }
    const hako_pubsub_service* get() const noexcept { return h_.get(); }

private:
    PubSubService(const Node& node, const std::string& name, const std::string& type_name,
                  const PubSubOptions& options, hako_open_mode mode) {
        hako_payload_type t{type_name.c_str(), sizeof(Element), alignof(Element), detail::PayloadOf<P>::slice};
        detail::check(hako_pubsub_service_open(node.get(), name.c_str(), &t, &options, mode, h_.out()));
    }
    detail::Handle<hako_pubsub_service, hako_pubsub_service_drop> h_;
};

/// A loaned sample of `P`: write through `->` / `*` (or `data()` and
/// `size()` for slices), then hand it to `Publisher::send`. Move-only;
/// dropped unsent, it goes back to the pool.
template <typename P>
class SampleMut {
    using Element = typename detail::PayloadOf<P>::Element;

public:
    SampleMut(const SampleMut&) = delete;
    SampleMut& operator=(const SampleMut&) = delete;
    SampleMut(SampleMut&& o) noexcept : s_(o.s_) { o.s_ = hako_sample_mut{}; }
    SampleMut& operator=(SampleMut&& o) noexcept {
        if (this != &o) {
            reset();
            s_ = o.s_;
            o.s_ = hako_sample_mut{};
        }
        return *this;
    }
    ~SampleMut() { reset(); }
    Element* data() noexcept { return static_cast<Element*>(s_.data); }
    /// Elements.
    size_t size() const noexcept { return s_.len; }
    Element& operator*() noexcept { return *data(); }
    Element* operator->() noexcept { return data(); }
    Element* begin() noexcept { return data(); }
    Element* end() noexcept { return data() + size(); }
    explicit operator bool() const noexcept { return s_.data != nullptr; }

private:
    template <typename>
    friend class Publisher;
    SampleMut() noexcept = default;
    void reset() noexcept {
        if (s_.data != nullptr) {
            hako_sample_mut_drop(&s_);
        }
    }
    hako_sample_mut s_{};
};

/// A received sample of `P`, read-only, valid while this object lives.
/// Move-only; dropping it hands the chunk back.
template <typename P>
class Sample {
    using Element = typename detail::PayloadOf<P>::Element;

public:
    Sample(const Sample&) = delete;
    Sample& operator=(const Sample&) = delete;
    Sample(Sample&& o) noexcept : s_(o.s_) { o.s_ = hako_sample{}; }
    Sample& operator=(Sample&& o) noexcept {
        if (this != &o) {
            reset();
            s_ = o.s_;
            o.s_ = hako_sample{};
        }
        return *this;
    }
    ~Sample() { reset(); }
    const Element* data() const noexcept { return static_cast<const Element*>(s_.data); }
    /// Elements.
    size_t size() const noexcept { return s_.len; }
    const Element& operator*() const noexcept { return *data(); }
    const Element* operator->() const noexcept { return data(); }
    const Element* begin() const noexcept { return data(); }
    const Element* end() const noexcept { return data() + size(); }
    /// The publisher that sent it.
    uint64_t publisher_id() const noexcept { return s_.publisher_id; }

private:
    template <typename>
    friend class Subscriber;
    Sample() noexcept = default;
    void reset() noexcept {
        if (s_.data != nullptr) {
            hako_sample_drop(&s_);
        }
    }
    hako_sample s_{};
};

/// Settings of a publisher.
struct PublisherOptions {
    size_t max_slice_len = 0;
    uint32_t max_loans = 0;
    hako_backpressure backpressure = HAKO_BACKPRESSURE_BLOCK;
    uint32_t retries = 0;
};

/// A publisher of `P`. One thread at a time.
template <typename P>
class Publisher {
    using Element = typename detail::PayloadOf<P>::Element;

public:
    explicit Publisher(const PubSubService<P>& service, const PublisherOptions& o = {}) {
        hako_publisher_options c{o.max_slice_len, o.max_loans, o.backpressure, o.retries};
        detail::check(hako_publisher_create(service.get(), &c, h_.out()));
    }
    /// A sample of one element (or `len` for slices), in shared memory.
    SampleMut<P> loan(size_t len = 1) {
        SampleMut<P> s;
        detail::check(hako_publisher_loan(h_.get(), len, &s.s_));
        return s;
    }
    /// Sends a sample this publisher loaned; the subscribers it reached.
    size_t send(SampleMut<P>&& sample) {
        size_t reached = 0;
        // Sent, the C side marks the sample consumed; refused (another
        // publisher's sample), it stays the caller's.
        detail::check(hako_publisher_send(h_.get(), &sample.s_, &reached));
        return reached;
    }
    /// Loans, copies `value` and sends.
    size_t send_copy(const Element& value) {
        size_t reached = 0;
        detail::check(hako_publisher_send_copy(h_.get(), &value, sizeof(Element), &reached));
        return reached;
    }
    /// Subscribers connected now.
    size_t subscriber_count() const {
        size_t n = 0;
        detail::check(hako_publisher_subscriber_count(h_.get(), &n));
        return n;
    }

private:
    detail::Handle<hako_publisher, hako_publisher_drop> h_;
};

/// A subscriber of `P`. One thread at a time.
template <typename P>
class Subscriber {
public:
    /// `end_when_publishers_gone`: a receive that waits throws once every
    /// publisher seen during the wait has left or died with nothing queued
    /// (by default it waits on, across a restart of the publisher).
    /// `lossy`: publishers never wait for it; on a backpressure service a
    /// full queue loses its oldest, counted as their overflow.
    explicit Subscriber(const PubSubService<P>& service, Wait wait = Wait::SpinThenPark,
                        bool end_when_publishers_gone = false, bool lossy = false) {
        hako_subscriber_options o{static_cast<hako_wait_strategy>(wait), end_when_publishers_gone,
                                  lossy};
        detail::check(hako_subscriber_create(service.get(), &o, h_.out()));
    }
    const hako_subscriber* get() const noexcept { return h_.get(); }
    /// The next sample, waiting up to `timeout`; none if nothing came.
    /// Throws on Ctrl-C, and when the publishers all left during a wait of
    /// a subscriber made with `end_when_publishers_gone`.
    std::optional<Sample<P>> receive(Timeout timeout = Timeout::now()) {
        Sample<P> s;
        detail::check(hako_subscriber_receive(h_.get(), timeout.us, &s.s_));
        if (s.s_.data == nullptr) {
            return std::nullopt;
        }
        return std::optional<Sample<P>>(std::move(s));
    }

private:
    detail::Handle<hako_subscriber, hako_subscriber_drop> h_;
};

/// Settings of an event service (0: the default on create, anything on open).
using EventOptions = hako_event_options;

/// An event service.
class EventService {
public:
    static EventService open_or_create(const Node& node, const std::string& name, const EventOptions& o = {}) {
        return EventService(node, name, o, HAKO_OPEN_OR_CREATE);
    }
    static EventService open(const Node& node, const std::string& name, const EventOptions& o = {}) {
        return EventService(node, name, o, HAKO_OPEN);
    }
    const hako_event_service* get() const noexcept { return h_.get(); }

private:
    EventService(const Node& node, const std::string& name, const EventOptions& o, hako_open_mode mode) {
        detail::check(hako_event_service_open(node.get(), name.c_str(), &o, mode, h_.out()));
    }
    detail::Handle<hako_event_service, hako_event_service_drop> h_;
};

/// A notifier. One thread at a time.
class Notifier {
public:
    explicit Notifier(const EventService& s) { detail::check(hako_notifier_create(s.get(), h_.out())); }
    /// Fires event `id`; the listeners notified.
    size_t notify(uint64_t id) {
        size_t n = 0;
        detail::check(hako_notifier_notify(h_.get(), id, &n));
        return n;
    }

private:
    detail::Handle<hako_notifier, hako_notifier_drop> h_;
};

/// A listener. One thread at a time.
class Listener {
public:
    explicit Listener(const EventService& s, Wait wait = Wait::SpinThenPark) {
        detail::check(hako_listener_create(s.get(), static_cast<hako_wait_strategy>(wait), h_.out()));
    }
    const hako_listener* get() const noexcept { return h_.get(); }
    /// The events that fired (each id once, with its count), waiting up
    /// to `timeout`; empty if none.
    std::vector<hako_event> wait(Timeout timeout = Timeout::forever()) {
        std::vector<hako_event> out(16);
        size_t n = 0;
        detail::check(hako_listener_wait(h_.get(), timeout.us, out.data(), out.size(), &n));
        out.resize(n);
        // More than fit come at once on the next calls.
        while (n == 16) {
            std::vector<hako_event> more(16);
            detail::check(hako_listener_wait(h_.get(), 0, more.data(), more.size(), &n));
            out.insert(out.end(), more.begin(), more.begin() + static_cast<std::ptrdiff_t>(n));
        }
        return out;
    }

private:
    detail::Handle<hako_listener, hako_listener_drop> h_;
};

/// Watches a domain: services created and removed; nodes and ports that
/// come, leave, die and are reclaimed (`hako_change`). `fd()` is readable
/// when there may be changes (for `poll` or a waitset).
class Watcher {
public:
    /// The domain of the configuration in effect, or the one at `root`.
    explicit Watcher(const char* root = nullptr) { detail::check(hako_watcher_create(root, h_.out())); }
    explicit Watcher(const std::string& root) : Watcher(root.c_str()) {}
    /// The next change, waiting up to `timeout`; none if none came.
    std::optional<hako_change> next(Timeout timeout = Timeout::forever()) {
        hako_change c{};
        bool got = false;
        detail::check(hako_watcher_next(h_.get(), timeout.us, &c, &got));
        if (!got) return std::nullopt;
        return c;
    }
    int fd() const {
        int fd = -1;
        detail::check(hako_watcher_fd(h_.get(), &fd));
        return fd;
    }

private:
    detail::Handle<hako_watcher, hako_watcher_drop> h_;
};

/// Settings of a request/response service (0: the default on create,
/// anything on open).
using ReqResOptions = hako_reqres_options;

/// Settings of a client or a server.
struct PortOptions {
    size_t max_slice_len = 0;
    uint32_t max_loans = 0;
    hako_backpressure backpressure = HAKO_BACKPRESSURE_BLOCK;
    uint32_t retries = 0;
    Wait wait = Wait::SpinThenPark;
    hako_port_options c() const {
        return {max_slice_len, max_loans, backpressure, retries, static_cast<hako_wait_strategy>(wait)};
    }
};

/// A request/response service: requests of `Req`, responses of `Resp`
/// (each a plain type or `Slice<T>`), named as the Rust types are.
template <typename Req, typename Resp>
class ReqResService {
    using ReqElement = typename detail::PayloadOf<Req>::Element;
    using RespElement = typename detail::PayloadOf<Resp>::Element;

public:
    static ReqResService open_or_create(const Node& node, const std::string& name, const std::string& request_type,
                                        const std::string& response_type, const ReqResOptions& o = {}) {
        return ReqResService(node, name, request_type, response_type, o, HAKO_OPEN_OR_CREATE);
    }
    static ReqResService open(const Node& node, const std::string& name, const std::string& request_type,
                              const std::string& response_type, const ReqResOptions& o = {}) {
        return ReqResService(node, name, request_type, response_type, o, HAKO_OPEN);
    }
    const hako_reqres_service* get() const noexcept { return h_.get(); }

private:
    ReqResService(const Node& node, const std::string& name, const std::string& request_type,
                  const std::string& response_type, const ReqResOptions& o, hako_open_mode mode) {
        hako_payload_type rq{request_type.c_str(), sizeof(ReqElement), alignof(ReqElement),
                             detail::PayloadOf<Req>::slice};
        hako_payload_type rs{response_type.c_str(), sizeof(RespElement), alignof(RespElement),
                             detail::PayloadOf<Resp>::slice};
        detail::check(hako_reqres_service_open(node.get(), name.c_str(), &rq, &rs, &o, mode, h_.out()));
    }
    detail::Handle<hako_reqres_service, hako_reqres_service_drop> h_;
};

/// A loaned request or response of `P`: write it, then send it through
/// the client or the active request that loaned it. Move-only; dropped
/// unsent, it goes back.
template <typename P>
class MessageMut {
    using Element = typename detail::PayloadOf<P>::Element;

public:
    MessageMut(const MessageMut&) = delete;
    MessageMut& operator=(const MessageMut&) = delete;
    MessageMut(MessageMut&& o) noexcept : m_(o.m_) { o.m_ = hako_message_mut{}; }
    MessageMut& operator=(MessageMut&& o) noexcept {
        if (this != &o) {
            reset();
            m_ = o.m_;
            o.m_ = hako_message_mut{};
        }
        return *this;
    }
    ~MessageMut() { reset(); }
    Element* data() noexcept { return static_cast<Element*>(m_.data); }
    size_t size() const noexcept { return m_.len; }
    Element& operator*() noexcept { return *data(); }
    Element* operator->() noexcept { return data(); }
    Element* begin() noexcept { return data(); }
    Element* end() noexcept { return data() + size(); }
    hako_message_mut* c() noexcept { return &m_; }

private:
    template <typename, typename>
    friend class Client;
    template <typename, typename>
    friend class ActiveRequest;
    MessageMut() noexcept = default;
    void reset() noexcept {
        if (m_.data != nullptr) {
            hako_message_mut_drop(&m_);
        }
    }
    hako_message_mut m_{};
};

/// A response a client received, read-only, valid while this object lives.
template <typename P>
class Response {
    using Element = typename detail::PayloadOf<P>::Element;

public:
    Response(const Response&) = delete;
    Response& operator=(const Response&) = delete;
    Response(Response&& o) noexcept : r_(o.r_) { o.r_ = hako_response{}; }
    Response& operator=(Response&& o) noexcept {
        if (this != &o) {
            reset();
            r_ = o.r_;
            o.r_ = hako_response{};
        }
        return *this;
    }
    ~Response() { reset(); }
    const Element* data() const noexcept { return static_cast<const Element*>(r_.data); }
    size_t size() const noexcept { return r_.len; }
    const Element& operator*() const noexcept { return *data(); }
    const Element* operator->() const noexcept { return data(); }
    const Element* begin() const noexcept { return data(); }
    const Element* end() const noexcept { return data() + size(); }
    uint64_t server_id() const noexcept { return r_.server_id; }

private:
    template <typename>
    friend class Pending;
    Response() noexcept = default;
    void reset() noexcept {
        if (r_.data != nullptr) {
            hako_response_drop(&r_);
        }
    }
    hako_response r_{};
};

/// The responses to come of a request sent. Drop it before its client.
template <typename Resp>
class Pending {
public:
    /// The next response, waiting up to `timeout`; none if none came, or
    /// if the stream ended (`ended()` tells). Throws when the server went
    /// without ending it.
    std::optional<Response<Resp>> receive(Timeout timeout = Timeout::forever()) {
        Response<Resp> r;
        bool ended = false;
        detail::check(hako_pending_receive(h_.get(), timeout.us, &r.r_, &ended));
        ended_ = ended;
        if (r.r_.data == nullptr) {
            return std::nullopt;
        }
        return std::optional<Response<Resp>>(std::move(r));
    }
    /// Whether the stream has ended (as the last receive found).
    bool ended() const noexcept { return ended_; }

private:
    template <typename, typename>
    friend class Client;
    Pending() noexcept = default;
    detail::Handle<hako_pending, hako_pending_drop> h_;
    bool ended_ = false;
};

/// A client. One thread at a time, with its pending responses.
template <typename Req, typename Resp>
class Client {
    using Element = typename detail::PayloadOf<Req>::Element;

public:
    explicit Client(const ReqResService<Req, Resp>& service, const PortOptions& o = {}) {
        hako_port_options c = o.c();
        detail::check(hako_client_create(service.get(), &c, h_.out()));
    }
    /// A request of one element (or `len` for slices), in shared memory.
    MessageMut<Req> loan(size_t len = 1) {
        MessageMut<Req> m;
        detail::check(hako_client_loan(h_.get(), len, &m.m_));
        return m;
    }
    /// Sends a request this client loaned; its responses to come.
    Pending<Resp> send(MessageMut<Req>&& request) {
        Pending<Resp> p;
        detail::check(hako_client_send(h_.get(), &request.m_, p.h_.out()));
        return p;
    }
    const hako_client* get() const noexcept { return h_.get(); }
    /// Waits (asleep) until a server is there to take a request: false if
    /// none came within `timeout`. Throws hako::Error on SIGINT/SIGTERM.
    bool wait_for_server(Timeout timeout = Timeout::forever()) {
        hako_status s = hako_client_wait_for_server(h_.get(), timeout.us);
        if (s == HAKO_ERROR_TIMED_OUT) return false;
        detail::check(s);
        return true;
    }
    /// Loans, copies `value` and sends.
    Pending<Resp> send_copy(const Element& value) {
        auto m = loan();
        *m = value;
        return send(std::move(m));
    }

private:
    detail::Handle<hako_client, hako_client_drop> h_;
};

/// A request a server received; answer it with `send` (a stream) or
/// `send_last`. Destroying it ends the stream.
template <typename Req, typename Resp>
class ActiveRequest {
    using Element = typename detail::PayloadOf<Req>::Element;

public:
    const Element* data() const noexcept {
        return static_cast<const Element*>(hako_active_request_data(h_.get()));
    }
    size_t size() const noexcept { return hako_active_request_size(h_.get()) / sizeof(Element); }
    const Element& operator*() const noexcept { return *data(); }
    const Element* operator->() const noexcept { return data(); }
    uint64_t client_id() const noexcept { return hako_active_request_client_id(h_.get()); }
    /// A response of one element (or `len` for slices).
    MessageMut<Resp> loan(size_t len = 1) {
        MessageMut<Resp> m;
        detail::check(hako_active_request_loan(h_.get(), len, &m.m_));
        return m;
    }
    /// Sends a response; the stream goes on.
    void send(MessageMut<Resp>&& response) { detail::check(hako_active_request_send(h_.get(), &response.m_)); }
    /// Sends the last response with the end of the stream; this request
    /// is done afterwards.
    void send_last(MessageMut<Resp>&& response) {
        detail::check(hako_active_request_send_last(h_.slot(), &response.m_));
    }

private:
    template <typename, typename>
    friend class Server;
    ActiveRequest() noexcept = default;
    detail::Handle<hako_active_request, hako_active_request_drop> h_;
};

/// A server. One thread at a time, with its active requests.
template <typename Req, typename Resp>
class Server {
public:
    explicit Server(const ReqResService<Req, Resp>& service, const PortOptions& o = {}) {
        hako_port_options c = o.c();
        detail::check(hako_server_create(service.get(), &c, h_.out()));
    }
    const hako_server* get() const noexcept { return h_.get(); }
    /// The next request, waiting up to `timeout`; none if none came.
    std::optional<ActiveRequest<Req, Resp>> receive(Timeout timeout = Timeout::forever()) {
        ActiveRequest<Req, Resp> a;
        detail::check(hako_server_receive(h_.get(), timeout.us, a.h_.out()));
        if (!a.h_) {
            return std::nullopt;
        }
        return std::optional<ActiveRequest<Req, Resp>>(std::move(a));
    }

private:
    detail::Handle<hako_server, hako_server_drop> h_;
};

class BoardReader;

/// One thread waits on many ports, descriptors and timers. The ports
/// attached must outlive it (their drop is refused while attached).
class WaitSet {
public:
    WaitSet() { detail::check(hako_waitset_create(h_.out())); }
    template <typename P>
    size_t attach(const Subscriber<P>& s) {
        size_t id = 0;
        detail::check(hako_waitset_attach_subscriber(h_.get(), s.get(), &id));
        return id;
    }
    size_t attach(const Listener& l) {
        size_t id = 0;
        detail::check(hako_waitset_attach_listener(h_.get(), l.get(), &id));
        return id;
    }
    template <typename Req, typename Resp>
    size_t attach(const Server<Req, Resp>& s) {
        size_t id = 0;
        detail::check(hako_waitset_attach_server(h_.get(), s.get(), &id));
        return id;
    }
    template <typename Req, typename Resp>
    size_t attach(const Client<Req, Resp>& c) {
        size_t id = 0;
        detail::check(hako_waitset_attach_client(h_.get(), c.get(), &id));
        return id;
    }
    /// Ready while an entry the reader watches changed since it was read.
    size_t attach(const BoardReader& r);
    /// A tick every `period`.
    template <typename Rep, typename Period>
    size_t attach_interval(std::chrono::duration<Rep, Period> period) {
        size_t id = 0;
        detail::check(hako_waitset_attach_interval(
            h_.get(), detail::micros(std::chrono::duration_cast<std::chrono::microseconds>(period)), &id));
        return id;
    }
    /// An event whenever attachment `source` stays silent for `deadline`.
    template <typename Rep, typename Period>
    size_t attach_deadline(size_t source, std::chrono::duration<Rep, Period> deadline) {
        size_t id = 0;
        detail::check(hako_waitset_attach_deadline(
            h_.get(), source, detail::micros(std::chrono::duration_cast<std::chrono::microseconds>(deadline)),
            &id));
        return id;
    }
    /// Waits for events (up to `timeout`); empty on a timeout. Sets
    /// `terminated` when SIGINT or SIGTERM arrived.
    std::vector<hako_wait_event> wait(Timeout timeout = Timeout::forever(), bool* terminated = nullptr) {
        std::vector<hako_wait_event> out(16);
        size_t n = 0;
        hako_wait_outcome how = HAKO_WAIT_EVENTS;
        detail::check(hako_waitset_wait(h_.get(), timeout.us, out.data(), out.size(), &n, &how));
        out.resize(n);
        if (terminated != nullptr) {
            *terminated = how == HAKO_WAIT_TERMINATION;
        }
        return out;
    }

private:
    detail::Handle<hako_waitset, hako_waitset_drop> h_;
};

/// Settings of a blackboard (0: the default on create, anything on open).
using BoardOptions = hako_board_options;

/// A blackboard: keyed entries of shared state, one writer, many readers.
/// Entries are declared with `entry<T>(key, type_name, default)` before
/// `open_or_create` / `create` (or `open`, which checks them).
class Blackboard {
public:
    /// Declares entry `key` of `T` (trivially copyable, laid out as the
    /// Rust type `type_name`), `value` its default.
    template <typename T>
    Blackboard& entry(const std::string& key, const std::string& type_name, const T& value) {
        static_assert(std::is_trivially_copyable_v<T>, "values are plain data");
        keys_.push_back(key);
        types_.push_back(type_name);
        auto* bytes = reinterpret_cast<const unsigned char*>(&value);
        defaults_.emplace_back(bytes, bytes + sizeof(T));
        sizes_.push_back({sizeof(T), alignof(T)});
        return *this;
    }
    /// Opens the board `name` if it exists, creates it otherwise.
    Blackboard& open_or_create(const Node& node, const std::string& name, const BoardOptions& o = {}) {
        return open_with(node, name, o, HAKO_OPEN_OR_CREATE);
    }
    /// Creates it; throws if it exists.
    Blackboard& create(const Node& node, const std::string& name, const BoardOptions& o = {}) {
        return open_with(node, name, o, HAKO_CREATE);
    }
    /// Opens it; throws if it does not exist or lacks a declared entry.
    Blackboard& open(const Node& node, const std::string& name, const BoardOptions& o = {}) {
        return open_with(node, name, o, HAKO_OPEN);
    }
    const hako_board* get() const noexcept { return h_.get(); }
    /// How many readers it has now.
    size_t reader_count() const {
        size_t n = 0;
        detail::check(hako_board_ports(h_.get(), &n, nullptr));
        return n;
    }

private:
    Blackboard& open_with(const Node& node, const std::string& name, const BoardOptions& o, hako_open_mode mode) {
        std::vector<hako_board_entry> entries;
        for (size_t i = 0; i < keys_.size(); i++) {
            hako_payload_type t{types_[i].c_str(), sizes_[i][0], sizes_[i][1], false};
            entries.push_back({keys_[i].c_str(), t, defaults_[i].data()});
        }
        detail::check(hako_board_open(node.get(), name.c_str(), entries.data(), entries.size(), &o, mode, h_.out()));
        return *this;
    }
    std::vector<std::string> keys_, types_;
    std::vector<std::vector<unsigned char>> defaults_;
    std::vector<std::array<uint64_t, 2>> sizes_;
    detail::Handle<hako_board, hako_board_drop> h_;
};

/// One entry of the writer, holding `T`s.
template <typename T>
class BoardWriterEntry {
public:
    BoardWriterEntry(const hako_board_writer* w, const std::string& key, const std::string& type_name) {
        hako_payload_type t{type_name.c_str(), sizeof(T), alignof(T), false};
        detail::check(hako_board_writer_entry_open(w, key.c_str(), &t, h_.out()));
    }
    /// Publishes `value` as the next version; returns it.
    uint64_t update(const T& value) {
        uint64_t v = 0;
        detail::check(hako_board_writer_entry_update(h_.get(), &value, sizeof(T), &v));
        return v;
    }
    /// Writes the next version in place (`fill(T&)`, over a copy of the
    /// latest value with `latest`, else over an older one), then publishes
    /// it; returns its version.
    template <typename F>
    uint64_t update_in_place(F fill, bool latest = false) {
        void* p = nullptr;
        detail::check(hako_board_writer_entry_begin(h_.get(), latest, &p));
        try {
            fill(*static_cast<T*>(p));
        } catch (...) {
            hako_board_writer_entry_abandon(h_.get());
            throw;
        }
        uint64_t v = 0;
        detail::check(hako_board_writer_entry_commit(h_.get(), &v));
        return v;
    }

private:
    detail::Handle<hako_board_writer_entry, hako_board_writer_entry_drop> h_;
};

/// A blackboard's writer (one at a time).
class BoardWriter {
public:
    explicit BoardWriter(const Blackboard& b) { detail::check(hako_board_writer_create(b.get(), h_.out())); }
    template <typename T>
    BoardWriterEntry<T> entry(const std::string& key, const std::string& type_name) {
        return BoardWriterEntry<T>(h_.get(), key, type_name);
    }

private:
    detail::Handle<hako_board_writer, hako_board_writer_drop> h_;
};

/// One entry of a reader, holding `T`s.
template <typename T>
class BoardReaderEntry {
public:
    BoardReaderEntry(const hako_board_reader* r, const std::string& key, const std::string& type_name) {
        hako_payload_type t{type_name.c_str(), sizeof(T), alignof(T), false};
        detail::check(hako_board_reader_entry_open(r, key.c_str(), &t, h_.out()));
    }
    /// The latest value, copied (never torn), and its version.
    std::pair<T, uint64_t> get() {
        T value{};
        uint64_t v = 0;
        detail::check(hako_board_reader_entry_get(h_.get(), &value, sizeof(T), &v));
        return {value, v};
    }
    /// Calls `use(const T&, version)` on the latest value in place (no
    /// copy); the writer writes elsewhere meanwhile.
    template <typename F>
    void read(F use) {
        const void* p = nullptr;
        uint64_t v = 0;
        detail::check(hako_board_reader_entry_hold(h_.get(), &p, &v));
        try {
            use(*static_cast<const T*>(p), v);
        } catch (...) {
            hako_board_reader_entry_release(h_.get());
            throw;
        }
        detail::check(hako_board_reader_entry_release(h_.get()));
    }
    /// The version now.
    uint64_t version() const {
        uint64_t v = 0;
        detail::check(hako_board_reader_entry_version(h_.get(), &v, nullptr));
        return v;
    }
    /// Whether it changed since this handle last read it.
    bool changed() const {
        uint64_t v = 0;
        bool c = false;
        detail::check(hako_board_reader_entry_version(h_.get(), &v, &c));
        return c;
    }
    /// Asks the writer to wake the reader's waitset when the entry changes
    /// (`false`: no longer).
    void watch(bool on = true) { detail::check(hako_board_reader_entry_watch(h_.get(), on)); }
    /// Waits until the entry changes from the version last read; the new
    /// version, or nothing on a timeout.
    std::optional<uint64_t> wait(Timeout timeout = Timeout::forever()) {
        uint64_t v = 0;
        detail::check(hako_board_reader_entry_wait(h_.get(), timeout.us, &v));
        return v == 0 ? std::nullopt : std::optional<uint64_t>(v);
    }

private:
    detail::Handle<hako_board_reader_entry, hako_board_reader_entry_drop> h_;
};

/// A blackboard's reader.
class BoardReader {
public:
    explicit BoardReader(const Blackboard& b, Wait wait = Wait::SpinThenPark) {
        detail::check(hako_board_reader_create(b.get(), static_cast<hako_wait_strategy>(wait), h_.out()));
    }
    template <typename T>
    BoardReaderEntry<T> entry(const std::string& key, const std::string& type_name) {
        return BoardReaderEntry<T>(h_.get(), key, type_name);
    }
    const hako_board_reader* get() const { return h_.get(); }

private:
    detail::Handle<hako_board_reader, hako_board_reader_drop> h_;
};

inline size_t WaitSet::attach(const BoardReader& r) {
    size_t id = 0;
    detail::check(hako_waitset_attach_board_reader(h_.get(), r.get(), &id));
    return id;
}

}  // namespace hako

#endif  // HAKO_HPP

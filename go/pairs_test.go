package hako

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// The cross-language pairs this file adds to those of hako_test.go,
// reqres_test.go and python_test.go: a Go subscriber of C and Python
// publishers, a Go server answering Rust, C++ and Python clients, a Go
// client of a C server's streams, and events both ways with Rust and C++. Every message is the `mixed` struct of
// fields of every width (tests/c/mixed.h).

// start runs `program ARGS...` with its output captured.
func start(t *testing.T, program string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(program, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &out
}

// finish waits for cmd and checks it printed `result`.
func finish(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer, result string) {
	t.Helper()
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), result) {
		t.Fatalf("%s: %v: %s", cmd.Path, err, out.String())
	}
}

// subscribeFrom receives count `mixed` values from the publisher `program
// ARGS...` of another language and checks each, in order.
func subscribeFrom(t *testing.T, r string, count uint64, program string, args ...string) {
	t.Helper()
	node := must(NewNode(NodeOptions{Name: "go-subscriber", Root: r}))
	defer node.Close()
	svc := must(node.PublishSubscribe("ffi/cross", mixedType, OpenOrCreate,
		PubSubOptions{Backpressure: true, BufferSize: 8}))
	defer svc.Close()
	sub := must(svc.NewSubscriber(SubscriberOptions{}))
	defer sub.Close()
	cmd, out := start(t, program, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for seq := uint64(0); seq < count; seq++ {
		s, err := sub.Receive(ctx)
		if err != nil {
			t.Fatalf("message %d: %v (%s)", seq, err, out.String())
		}
		if v := must(Value[mixed](s)); *v != mixedOf(seq) {
			t.Fatalf("message %d: got %+v", seq, *v)
		}
		s.Release()
	}
	sub.Close()
	finish(t, cmd, out, "")
}

func TestCPublisherGoSubscriber(t *testing.T) {
	r := root(t)
	subscribeFrom(t, r, 2000, program(t, "target/c/tests-c/c_publisher", "./scripts/c --build-only"), r, "2000")
}

func TestPythonPublisherGoSubscriber(t *testing.T) {
	r := root(t)
	python := program(t, "target/python/venv/bin/python", "./scripts/python --build-only")
	subscribeFrom(t, r, 500, python, "-c", `
import sys, time
sys.path.insert(0, "../crates/hako-python/tests")
import hako
from conftest import Mixed, mixed_of
root, count = sys.argv[1], int(sys.argv[2])
node = hako.Node("py-publisher", root=root)
pub = node.publish_subscribe("ffi/cross", Mixed, overflow="backpressure", buffer_size=8).publisher()
deadline = time.monotonic() + 20
while pub.subscriber_count == 0:
    assert time.monotonic() < deadline, "no subscriber came"
    time.sleep(0.001)
for seq in range(count):
    pub.send_copy(mixed_of(seq))
`, r, "500")
}

// serveMixed answers count requests of `mixed` (each checked to be
// mixedOf(seq)) with `responses` responses mixedOf(seq+1), ..., then ends
// each stream, for the client `program ARGS...` of another language.
func serveMixed(t *testing.T, r string, count, responses uint64, program string, args ...string) {
	t.Helper()
	node := must(NewNode(NodeOptions{Name: "go-server", Root: r}))
	defer node.Close()
	svc := must(node.RequestResponse("ffi/cross-rr", mixedType, mixedType, OpenOrCreate,
		ReqResOptions{MaxRequestsInFlight: 4, MaxResponseBuffer: 4}))
	defer svc.Close()
	server := must(svc.NewServer(0))
	defer server.Close()
	cmd, out := start(t, program, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for seq := uint64(0); seq < count; seq++ {
		req, err := server.Receive(ctx)
		if err != nil {
			t.Fatalf("request %d: %v (%s)", seq, err, out.String())
		}
		if b := req.Bytes(); len(b) != int(unsafe.Sizeof(mixed{})) || *(*mixed)(unsafe.Pointer(&b[0])) != mixedOf(seq) {
			t.Fatalf("request %d: got %d bytes, %x", seq, len(b), b)
		}
		for k := uint64(1); k <= responses; k++ {
			m := must(req.Loan(1))
			*(*mixed)(m.m.data) = mixedOf(seq + k)
			if err := req.Send(m); err != nil {
				t.Fatal(err)
			}
		}
		req.Close()
	}
	finish(t, cmd, out, fmt.Sprintf("RESULT answered=%d", count))
}

func TestRustClientGoServer(t *testing.T) {
	r := root(t)
	serveMixed(t, r, 500, 1, peer(t), "request", r, "500")
}

func TestCppClientGoServer(t *testing.T) {
	r := root(t)
	serveMixed(t, r, 300, 2, program(t, "target/c/tests-c/cpp_client", "./scripts/c --build-only"), r, "300", "2")
}

func TestPythonClientGoServer(t *testing.T) {
	r := root(t)
	python := program(t, "target/python/venv/bin/python", "./scripts/python --build-only")
	serveMixed(t, r, 200, 1, python, "-c", `
import sys, time
sys.path.insert(0, "../crates/hako-python/tests")
import hako
from conftest import Mixed, mixed_of, same
root, count = sys.argv[1], int(sys.argv[2])
node = hako.Node("py-client", root=root)
svc = node.request_response("ffi/cross-rr", Mixed, Mixed, max_requests_in_flight=4, max_response_buffer=4)
client = svc.client()
deadline = time.monotonic() + 20
while client.server_count == 0:
    assert time.monotonic() < deadline, "no server came"
    time.sleep(0.001)
for seq in range(count):
    got = [r.value for r in client.send_copy(mixed_of(seq))]
    assert len(got) == 1 and same(got[0], mixed_of(seq + 1)), f"request {seq}: {got}"
print(f"RESULT answered={count}", flush=True)
`, r, "200")
}

// A Go client of a C server that answers each request with a stream of
// two responses.
func TestGoClientCServer(t *testing.T) {
	const count, responses = 300, 2
	r := root(t)
	cmd, out := start(t, program(t, "target/c/tests-c/c_server", "./scripts/c --build-only"),
		r, fmt.Sprint(count), fmt.Sprint(responses))
	node := must(NewNode(NodeOptions{Name: "go-client", Root: r}))
	defer node.Close()
	svc := must(node.RequestResponse("ffi/cross-rr", mixedType, mixedType, OpenOrCreate,
		ReqResOptions{MaxRequestsInFlight: 4, MaxResponseBuffer: 4}))
	defer svc.Close()
	client := must(svc.NewClient(0))
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.WaitForServer(ctx); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for seq := uint64(0); seq < count; seq++ {
		m := must(client.Loan(1))
		*(*mixed)(m.m.data) = mixedOf(seq)
		pending := must(client.Send(m))
		for k := uint64(1); k <= responses; k++ {
			resp := must(pending.Receive(ctx))
			if resp == nil {
				t.Fatalf("request %d: response %d missing (%s)", seq, k, out.String())
			}
			if v := *(*mixed)(resp.r.data); v != mixedOf(seq+k) {
				t.Fatalf("request %d, response %d: got %+v", seq, k, v)
			}
			resp.Release()
		}
		if end := must(pending.Receive(ctx)); end != nil {
			t.Fatalf("request %d: a response past the stream's end", seq)
		}
		pending.Close()
	}
	finish(t, cmd, out, fmt.Sprintf("RESULT served=%d", count))
}

// eventsWith exchanges events both ways with `program ARGS...`, which
// waits for event 9 on "ffi/bell" and answers with event 8: a Go notifier
// wakes its listener, whose notifier wakes a Go listener.
func eventsWith(t *testing.T, r, result, program string, args ...string) {
	t.Helper()
	node := must(NewNode(NodeOptions{Root: r}))
	defer node.Close()
	bells := must(node.Event("ffi/bell", OpenOrCreate, EventOptions{}))
	defer bells.Close()
	listener := must(bells.NewListener())
	defer listener.Close()
	notifier := must(bells.NewNotifier())
	defer notifier.Close()
	cmd, out := start(t, program, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Until its listener is there beside this one.
	for must(notifier.Notify(9)) < 2 {
		if ctx.Err() != nil {
			t.Fatalf("the other listener never came: %s", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	for heard := false; !heard; {
		fired, err := listener.Wait(ctx)
		if err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		for _, f := range fired {
			heard = heard || f.ID == 8
		}
	}
	finish(t, cmd, out, result)
}

func TestEventsWithRust(t *testing.T) {
	r := root(t)
	eventsWith(t, r, "RESULT heard=9", peer(t), "events", r, "9")
}

func TestEventsWithCpp(t *testing.T) {
	r := root(t)
	eventsWith(t, r, "RESULT heard=9", program(t, "target/c/tests-c/cpp_events", "./scripts/c --build-only"), r, "9")
}

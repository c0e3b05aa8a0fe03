package hako

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mixed is `Mixed` of crates/hako-ffi/examples/rust_peer.rs (and
// tests/c/mixed.h): fields of every width, padding between.
type mixed struct {
	A uint8
	B uint16
	C uint32
	D uint64
	E float32
	F float64
}

func mixedOf(seq uint64) mixed {
	return mixed{A: uint8(seq * 7), B: uint16(seq * 31), C: uint32(seq * 1_000_003),
		D: seq * 0x9e37_79b9_7f4a_7c15, E: float32(seq) * 0.5, F: float64(seq) * 0.25}
}

var mixedType = TypeOf[mixed]("hako_tests::Mixed")

// root is a fresh domain root of the test, removed after it.
func root(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/dev/shm", "hako-go-test.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// must is v, or a panic (which fails the test with its stack) on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestBytesZeroCopyBothWays(t *testing.T) {
	node := must(NewNode(NodeOptions{Name: "go-test", Root: root(t)}))
	defer node.Close()
	svc := must(node.PublishSubscribe("go/bytes", Bytes(), OpenOrCreate, PubSubOptions{}))
	defer svc.Close()
	pub := must(svc.NewPublisher(1024))
	defer pub.Close()
	sub := must(svc.NewSubscriber(SubscriberOptions{}))
	defer sub.Close()

	loan := must(pub.Loan(5))
	copy(loan.Bytes(), "hello")
	if n := must(loan.Send()); n != 1 {
		t.Fatalf("reached %d subscribers", n)
	}
	if _, err := loan.Send(); !errors.Is(err, ErrClosed) {
		t.Fatalf("a second send: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s := must(sub.Receive(ctx))
	if !bytes.Equal(s.Bytes(), []byte("hello")) || s.Len() != 5 {
		t.Fatalf("got %q", s.Bytes())
	}
	id := must(node.ID())
	if id == 0 || s.PublisherID() == 0 {
		t.Fatal("no ids")
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); !errors.Is(err, ErrClosed) || s.Bytes() != nil {
		t.Fatalf("a second release: %v", err)
	}
	if got := must(sub.TryReceive()); got != nil {
		t.Fatal("a sample from nowhere")
	}
	// A loan given back unsent.
	loan = must(pub.Loan(1))
	if err := loan.Release(); err != nil {
		t.Fatal(err)
	}
	if got := must(sub.TryReceive()); got != nil {
		t.Fatal("a released loan arrived")
	}
}

func TestTypedValuesAndErrors(t *testing.T) {
	node := must(NewNode(NodeOptions{Root: root(t)}))
	defer node.Close()
	svc := must(node.PublishSubscribe("go/typed", mixedType, OpenOrCreate, PubSubOptions{BufferSize: 4}))
	defer svc.Close()
	pub := must(svc.NewPublisher(0))
	sub := must(svc.NewSubscriber(SubscriberOptions{}))
	for seq := uint64(0); seq < 3; seq++ {
		must(Send(pub, mixedOf(seq)))
		s := must(sub.TryReceive())
		v := must(Value[mixed](s))
		if *v != mixedOf(seq) {
			t.Fatalf("%d: got %+v", seq, *v)
		}
		s.Release()
	}
	// A value of another size is refused; so is a service of another type.
	if _, err := Send(pub, uint32(1)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a wrong size: %v", err)
	}
	if _, err := node.PublishSubscribe("go/typed", Bytes(), Open, PubSubOptions{}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("another type: %v", err)
	}
	if _, err := node.PublishSubscribe("go/none", Bytes(), Open, PubSubOptions{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing service: %v", err)
	}
	// A wait ends with its context.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := sub.Receive(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait past its deadline: %v", err)
	}
	// Closed means closed.
	pub.Close()
	sub.Close()
	if _, err := pub.SendCopy(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("a closed publisher: %v", err)
	}
	if err := sub.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed twice: %v", err)
	}
}

// peer is the Rust side of the cross-language tests (built by
// ./scripts/c: target/release/examples/rust_peer).
func peer(t *testing.T) string {
	p := must(filepath.Abs("../target/release/examples/rust_peer"))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run ./scripts/c --build-only first", p)
	}
	return p
}

// publishTo publishes count `mixed` values, written in place, to the
// subscriber `program ARGS...` of another language, which checks them and
// prints RESULT received=COUNT.
func publishTo(t *testing.T, r string, count uint64, program string, args ...string) {
	t.Helper()
	cmd := exec.Command(program, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	node := must(NewNode(NodeOptions{Name: "go-publisher", Root: r}))
	defer node.Close()
	svc := must(node.PublishSubscribe("ffi/cross", mixedType, OpenOrCreate,
		PubSubOptions{Backpressure: true, BufferSize: 8}))
	defer svc.Close()
	pub := must(svc.NewPublisher(0))
	defer pub.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); must(pub.SubscriberCount()) == 0; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the subscriber never came: %s", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	for seq := uint64(0); seq < count; seq++ {
		loan, v := must2(LoanOf[mixed](pub))
		*v = mixedOf(seq)
		must(loan.Send())
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), fmt.Sprintf("RESULT received=%d", count)) {
		t.Fatalf("the subscriber: %v: %s", err, out.String())
	}
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// program is a program another script of the repository builds.
func program(t *testing.T, path, builtBy string) string {
	p := must(filepath.Abs("../" + path))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run %s first", p, builtBy)
	}
	return p
}

func TestGoPublisherRustSubscriber(t *testing.T) {
	r := root(t)
	publishTo(t, r, 2000, peer(t), "subscribe", r, "2000")
}

func TestGoPublisherCppSubscriber(t *testing.T) {
	r := root(t)
	publishTo(t, r, 2000, program(t, "target/c/tests-c/cpp_subscriber", "./scripts/c --build-only"), r, "2000")
}

// The Python face's subscriber, with the `Mixed` of its tests.
const pythonSubscriber = `
import sys
sys.path.insert(0, "../crates/hako-python/tests")
import hako
from conftest import Mixed, mixed_of, same
root, count = sys.argv[1], int(sys.argv[2])
node = hako.Node("py-subscriber", root=root)
svc = node.publish_subscribe("ffi/cross", Mixed, overflow="backpressure", buffer_size=8)
sub = svc.subscriber()
for seq in range(count):
    s = sub.receive(timeout=10.0)
    assert s is not None, f"message {seq} did not come"
    v = s.value
    assert same(v, mixed_of(seq)), f"message {seq} is wrong"
    s.release()
print(f"RESULT received={count}", flush=True)
`

func TestGoPublisherPythonSubscriber(t *testing.T) {
	r := root(t)
	python := program(t, "target/python/venv/bin/python", "./scripts/python --build-only")
	publishTo(t, r, 500, python, "-c", pythonSubscriber, r, "500")
}

func TestRustPublisherGoSubscriber(t *testing.T) {
	r := root(t)
	subscribeFrom(t, r, 2000, peer(t), "publish", r, "2000")
}

// A counted view keeps its message from being released or sent under it.
func TestViewsKeepTheirMessage(t *testing.T) {
	node := must(NewNode(NodeOptions{Root: root(t)}))
	defer node.Close()
	svc := must(node.PublishSubscribe("go/views", Bytes(), OpenOrCreate, PubSubOptions{}))
	defer svc.Close()
	pub := must(svc.NewPublisher(16))
	defer pub.Close()
	sub := must(svc.NewSubscriber(SubscriberOptions{}))
	defer sub.Close()

	loan := must(pub.Loan(4))
	lv := must(loan.View())
	copy(lv.Bytes(), "view")
	if _, err := loan.Send(); !errors.Is(err, ErrMisuse) {
		t.Fatalf("sending under an open view: %v", err)
	}
	if err := lv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lv.Close(); !errors.Is(err, ErrClosed) || lv.Bytes() != nil {
		t.Fatalf("closing a view twice: %v", err)
	}
	must(loan.Send())

	s := must(sub.TryReceive())
	v1, v2 := must(s.View()), must(s.View())
	if string(v1.Bytes()) != "view" {
		t.Fatalf("got %q", v1.Bytes())
	}
	if err := s.Release(); !errors.Is(err, ErrMisuse) || !strings.Contains(err.Error(), "2 view(s)") {
		t.Fatalf("releasing under two views: %v", err)
	}
	v1.Close()
	if err := s.Release(); !errors.Is(err, ErrMisuse) {
		t.Fatalf("releasing under one view: %v", err)
	}
	v2.Close()
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.View(); !errors.Is(err, ErrClosed) {
		t.Fatalf("a view of a released sample: %v", err)
	}
}

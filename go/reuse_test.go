package hako

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A kept Loan and Sample carry message after message, with no allocation
// per message; filling one that holds a message is refused.
func TestKeptLoansAndSamplesCarryEveryMessage(t *testing.T) {
	node := must(NewNode(NodeOptions{Root: root(t)}))
	defer node.Close()
	svc := must(node.PublishSubscribe("go/reuse", Bytes(), OpenOrCreate, PubSubOptions{BufferSize: 4}))
	defer svc.Close()
	pub := must(svc.NewPublisher(16))
	defer pub.Close()
	sub := must(svc.NewSubscriber(SubscriberOptions{}))
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var loan Loan
	var sample Sample
	n := byte(0)
	one := func() {
		n++
		if err := pub.LoanInto(3, &loan); err != nil {
			t.Fatal(err)
		}
		copy(loan.Bytes(), []byte{n, n + 1, n + 2})
		if _, err := loan.Send(); err != nil {
			t.Fatal(err)
		}
		if err := sub.ReceiveInto(ctx, &sample); err != nil {
			t.Fatal(err)
		}
		if b := sample.Bytes(); len(b) != 3 || b[0] != n || b[2] != n+2 {
			t.Fatalf("message %d: got %v", n, b)
		}
		if err := sample.Release(); err != nil {
			t.Fatal(err)
		}
	}
	one()
	if allocs := testing.AllocsPerRun(1000, one); allocs != 0 {
		t.Errorf("%v allocations per message, want 0", allocs)
	}

	// Full ones are refused, and keep their message.
	must(0, pub.LoanInto(1, &loan))
	if err := pub.LoanInto(1, &loan); !errors.Is(err, ErrMisuse) {
		t.Fatalf("loaning into a full loan: %v", err)
	}
	loan.Bytes()[0] = 42
	must(loan.Send())
	if !must(sub.TryReceiveInto(&sample)) {
		t.Fatal("no sample")
	}
	if got, err := sub.TryReceiveInto(&sample); got || !errors.Is(err, ErrMisuse) {
		t.Fatalf("receiving into a full sample: %v %v", got, err)
	}
	if sample.Bytes()[0] != 42 {
		t.Fatalf("got %v", sample.Bytes())
	}
	must(0, sample.Release())
	if must(sub.TryReceiveInto(&sample)) {
		t.Fatal("a sample from nowhere")
	}
}

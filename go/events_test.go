package hako

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestEventsAndTheWaitSet(t *testing.T) {
	node := must(NewNode(NodeOptions{Root: root(t)}))
	defer node.Close()
	bells := must(node.Event("go/bell", OpenOrCreate, EventOptions{}))
	defer bells.Close()
	listener := must(bells.NewListener())
	notifier := must(bells.NewNotifier())
	chat := must(node.PublishSubscribe("go/chat", Bytes(), OpenOrCreate, PubSubOptions{}))
	defer chat.Close()
	sub := must(chat.NewSubscriber(SubscriberOptions{}))
	pub := must(chat.NewPublisher(64))

	ws := must(NewWaitSet())
	bell := must(ws.AttachListener(listener))
	msgs := must(ws.AttachSubscriber(sub))
	tick := must(ws.AttachInterval(time.Hour))
	if bell == msgs || msgs == tick {
		t.Fatal("ids repeat")
	}
	// An attached port refuses to close until the waitset does.
	if err := sub.Close(); !errors.Is(err, ErrMisuse) {
		t.Fatalf("closing an attached subscriber: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n := must(notifier.Notify(7)); n != 1 {
		t.Fatalf("reached %d listeners", n)
	}
	must(notifier.Notify(7))
	got := must(ws.Wait(ctx))
	if len(got) != 1 || got[0] != (WaitEvent{Kind: Ready, ID: bell}) {
		t.Fatalf("woke for %v", got)
	}
	if fired := must(listener.TryWait()); len(fired) != 1 || fired[0] != (Fired{ID: 7, Count: 2}) {
		t.Fatalf("fired %v", fired)
	}
	must(pub.SendCopy([]byte("ding")))
	got = must(ws.Wait(ctx))
	if len(got) != 1 || got[0].ID != msgs {
		t.Fatalf("woke for %v", got)
	}
	s := must(sub.TryReceive())
	if string(s.Bytes()) != "ding" {
		t.Fatalf("got %q", s.Bytes())
	}
	s.Release()

	// A listener's wait ends with its context.
	short, stop := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer stop()
	if _, err := listener.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait past its deadline: %v", err)
	}
	must(notifier.Notify(3))
	if fired := must(listener.Wait(ctx)); len(fired) != 1 || fired[0].ID != 3 {
		t.Fatalf("fired %v", fired)
	}

	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{sub, listener, notifier, pub} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

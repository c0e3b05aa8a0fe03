package main

import (
	"fmt"
	"time"

	"hako.local/hako"
)

// peerTimeout is how long a side waits for its peer before giving up.
const peerTimeout = 10 * time.Second

// hakoSide is a side of the "hako-go" transport: the services and settings
// of the bench's Rust "hako" transport, "pingpong/<row>/ping" and
// ".../pong", byte slices, backpressure, one borrowed sample, busy-polled.
// One way uses "ping" only. It loans and receives into objects it keeps,
// as a Go program would in a loop of millions of messages a second.
type hakoSide struct {
	s        spec
	node     *hako.Node
	services []*hako.PubSubService
	pub      *hako.Publisher  // leader: ping; follower: pong
	sub      *hako.Subscriber // leader: pong; follower: ping
	// Kept and filled again for every message: no allocation per message
	// (see the module's LoanInto and ReceiveInto).
	loan   hako.Loan
	sample hako.Sample
}

func newHakoSide(s spec) (side, error) {
	name := "pingpong-go-leader"
	if !s.leader {
		name = fmt.Sprintf("pingpong-go-follower-%d", s.index)
	}
	node, err := hako.NewNode(hako.NodeOptions{Name: name, Root: s.root})
	if err != nil {
		return nil, err
	}
	h := &hakoSide{s: s, node: node}
	open := func(what string, subscribers, buffer uint32) (*hako.PubSubService, error) {
		svc := fmt.Sprintf("pingpong/%d/%s", s.row, what)
		if !s.leader {
			return node.PublishSubscribe(svc, hako.Bytes(), hako.Open, hako.PubSubOptions{})
		}
		return node.PublishSubscribe(svc, hako.Bytes(), hako.Create, hako.PubSubOptions{
			MaxPublishers: 1, MaxSubscribers: subscribers, MaxNodes: subscribers + 1,
			BufferSize: buffer, MaxBorrowed: 1, Backpressure: true,
		})
	}
	ping, err := open("ping", uint32(s.followers), uint32(s.buffer))
	if err != nil {
		h.close()
		return nil, err
	}
	h.services = append(h.services, ping)
	var pong *hako.PubSubService
	if !s.oneWay {
		if pong, err = open("pong", 1, 2); err != nil {
			h.close()
			return nil, err
		}
		h.services = append(h.services, pong)
	}
	pubOn, subOn := ping, pong
	if !s.leader {
		pubOn, subOn = pong, ping
	}
	if pubOn != nil {
		if h.pub, err = pubOn.NewPublisher(s.size); err != nil {
			h.close()
			return nil, err
		}
	}
	if subOn != nil {
		if h.sub, err = subOn.NewSubscriber(hako.SubscriberOptions{}); err != nil {
			h.close()
			return nil, err
		}
	}
	return h, nil
}

func (h *hakoSide) close() error {
	if h.sub != nil {
		h.sub.Close()
	}
	if h.pub != nil {
		h.pub.Close()
	}
	for _, s := range h.services {
		s.Close()
	}
	return h.node.Close()
}

func (h *hakoSide) connect() error {
	deadline := time.Now().Add(peerTimeout)
	for {
		n, err := h.pub.SubscriberCount()
		if err != nil {
			return err
		}
		if n == h.s.followers {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %v waiting for %d followers to connect (%d did)", peerTimeout, h.s.followers, n)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// publish loans a message, tags it t and sends it to want subscribers.
func (h *hakoSide) publish(t byte, want int) error {
	if err := h.pub.LoanInto(h.s.size, &h.loan); err != nil {
		return err
	}
	write(h.loan.Bytes(), t, h.s.full)
	reached, err := h.loan.Send()
	if err != nil {
		return err
	}
	if reached != want {
		return fmt.Errorf("a message reached %d subscribers, expected %d", reached, want)
	}
	return nil
}

// next busy-polls for the next sample and checks it carries tag t.
func (h *hakoSide) next(t byte, what string) error {
	var start time.Time
	for spins := 1; ; spins++ {
		got, err := h.sub.TryReceiveInto(&h.sample)
		if err != nil {
			return err
		}
		if got {
			err := check(h.sample.Bytes(), h.s.size, t, h.s.full, what)
			if rerr := h.sample.Release(); err == nil {
				err = rerr
			}
			return err
		}
		if spins&0xffff == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > peerTimeout {
				return fmt.Errorf("gave up after %v waiting for a %s", peerTimeout, what)
			}
		}
	}
}

func (h *hakoSide) roundTrip(seq uint64, sent func()) error {
	t := tag(seq)
	if err := h.publish(t, 1); err != nil {
		return err
	}
	sent()
	return h.next(t+1, "pong")
}

func (h *hakoSide) send(seq uint64) error { return h.publish(tag(seq), h.s.followers) }

func (h *hakoSide) serve(seq uint64) error {
	t := tag(seq)
	if err := h.next(t, "ping"); err != nil {
		return err
	}
	return h.publish(t+1, 1)
}

func (h *hakoSide) receive(seq uint64) error { return h.next(tag(seq), "message") }

package hako

/*
#include "hako.h"
*/
import "C"

import (
	"context"
	"time"
)

// EventOptions are an event service's settings; zero fields take the
// configured defaults on create and anything on open.
type EventOptions struct {
	// Largest event id.
	EventIDMax                           uint64
	MaxNotifiers, MaxListeners, MaxNodes uint32
}

// EventService is an event service: notifiers fire event ids, listeners
// learn which fired and how often.
type EventService struct {
	h *C.hako_event_service
}

// Event opens or creates (mode) the event service `name`.
func (n *Node) Event(name string, mode OpenMode, o EventOptions) (*EventService, error) {
	if n.h == nil {
		return nil, ErrClosed
	}
	cname := cString(name)
	defer free(cname)
	opts := C.hako_event_options{event_id_max: C.uint64_t(o.EventIDMax),
		max_notifiers: C.uint32_t(o.MaxNotifiers), max_listeners: C.uint32_t(o.MaxListeners),
		max_nodes: C.uint32_t(o.MaxNodes)}
	s := &EventService{}
	err := call(func() C.enum_hako_status {
		return C.hako_event_service_open(n.h, cname, &opts, C.enum_hako_open_mode(mode), &s.h)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Close drops the service handle; its ports may outlive it.
func (s *EventService) Close() error {
	if s.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_event_service_drop(&s.h) })
}

// Notifier fires events.
type Notifier struct {
	h *C.hako_notifier
}

// NewNotifier creates a notifier.
func (s *EventService) NewNotifier() (*Notifier, error) {
	if s.h == nil {
		return nil, ErrClosed
	}
	n := &Notifier{}
	if err := call(func() C.enum_hako_status { return C.hako_notifier_create(s.h, &n.h) }); err != nil {
		return nil, err
	}
	return n, nil
}

// Notify fires event `id`; returns how many listeners it reached.
func (n *Notifier) Notify(id uint64) (int, error) {
	if n.h == nil {
		return 0, ErrClosed
	}
	var reached C.size_t
	err := call(func() C.enum_hako_status { return C.hako_notifier_notify(n.h, C.uint64_t(id), &reached) })
	return int(reached), err
}

// Close drops the notifier.
func (n *Notifier) Close() error {
	if n.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_notifier_drop(&n.h) })
}

// Listener learns which events fired.
type Listener struct {
	h *C.hako_listener
}

// Fired is an event id that fired, and how often since the last wait.
type Fired struct {
	ID    uint64
	Count uint64
}

// NewListener creates a listener.
func (s *EventService) NewListener() (*Listener, error) {
	if s.h == nil {
		return nil, ErrClosed
	}
	l := &Listener{}
	err := call(func() C.enum_hako_status {
		return C.hako_listener_create(s.h, C.HAKO_WAIT_SPIN_THEN_PARK, &l.h)
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Close drops the listener.
func (l *Listener) Close() error {
	if l.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_listener_drop(&l.h) })
}

func (l *Listener) wait(us uint64) ([]Fired, error) {
	if l.h == nil {
		return nil, ErrClosed
	}
	var events [16]C.hako_event
	var n C.size_t
	err := call(func() C.enum_hako_status {
		return C.hako_listener_wait(l.h, C.uint64_t(us), &events[0], C.size_t(len(events)), &n)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Fired, 0, int(n))
	for _, e := range events[:n] {
		out = append(out, Fired{ID: uint64(e.id), Count: uint64(e.count)})
	}
	// More than fit come at once on the next call.
	if int(n) == len(events) {
		more, err := l.wait(0)
		return append(out, more...), err
	}
	return out, nil
}

// TryWait is the events that fired, without waiting (none: empty).
func (l *Listener) TryWait() ([]Fired, error) { return l.wait(0) }

// Wait waits for events until ctx ends (then ctx's error).
func (l *Listener) Wait(ctx context.Context) ([]Fired, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, err := l.wait(uint64(slice(ctx).Microseconds()))
		if err != nil || len(got) > 0 {
			return got, err
		}
	}
}

// slice is how long one step of a context wait sleeps in hako: short, so
// that a cancellation ends the wait soon, and no later than the deadline.
func slice(ctx context.Context) time.Duration {
	wait := 50 * time.Millisecond
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left < wait {
			wait = max(left, 0)
		}
	}
	return wait
}

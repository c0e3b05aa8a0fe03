package hako

/*
#include "hako.h"
*/
import "C"

import (
	"context"
	"time"
)

// WaitSet waits on many sources at once: subscribers (ready when they
// have samples), listeners (events), file descriptors (readable),
// intervals. It leaves signals to Go's runtime.
type WaitSet struct {
	h *C.hako_waitset
	// The ports attached, kept from the collector while attached.
	held []any
}

// WaitEventKind is what happened to an attachment.
type WaitEventKind int

// The kinds of wait events.
const (
	// Ready: a port has something to take, or a descriptor is readable.
	Ready WaitEventKind = C.HAKO_EVENT_READY
	// Tick: an interval elapsed.
	Tick WaitEventKind = C.HAKO_EVENT_TICK
	// DeadlineMissed: a watched source stayed silent too long.
	DeadlineMissed WaitEventKind = C.HAKO_EVENT_DEADLINE_MISSED
)

// WaitEvent is one event of a wait: its kind and the attachment's id.
type WaitEvent struct {
	Kind WaitEventKind
	ID   int
}

// NewWaitSet creates a waitset.
func NewWaitSet() (*WaitSet, error) {
	w := &WaitSet{}
	if err := call(func() C.enum_hako_status { return C.hako_waitset_create_without_signal_handling(&w.h) }); err != nil {
		return nil, err
	}
	return w, nil
}

// Close drops the waitset; the ports attached may close after it.
func (w *WaitSet) Close() error {
	if w.h == nil {
		return ErrClosed
	}
	err := call(func() C.enum_hako_status { return C.hako_waitset_drop(&w.h) })
	w.held = nil
	return err
}

func (w *WaitSet) attached(f func(id *C.size_t) C.enum_hako_status, port any) (int, error) {
	if w.h == nil {
		return 0, ErrClosed
	}
	var id C.size_t
	if err := call(func() C.enum_hako_status { return f(&id) }); err != nil {
		return 0, err
	}
	w.held = append(w.held, port)
	return int(id), nil
}

// AttachSubscriber attaches s (which then refuses to close until the
// waitset does); returns its id.
func (w *WaitSet) AttachSubscriber(s *Subscriber) (int, error) {
	if s.h == nil {
		return 0, ErrClosed
	}
	return w.attached(func(id *C.size_t) C.enum_hako_status {
		return C.hako_waitset_attach_subscriber(w.h, s.h, id)
	}, s)
}

// AttachListener attaches l; returns its id.
func (w *WaitSet) AttachListener(l *Listener) (int, error) {
	if l.h == nil {
		return 0, ErrClosed
	}
	return w.attached(func(id *C.size_t) C.enum_hako_status {
		return C.hako_waitset_attach_listener(w.h, l.h, id)
	}, l)
}

// AttachFd attaches a file descriptor (ready when readable); the caller
// keeps it open while attached.
func (w *WaitSet) AttachFd(fd int) (int, error) {
	return w.attached(func(id *C.size_t) C.enum_hako_status {
		return C.hako_waitset_attach_fd(w.h, C.int32_t(fd), id)
	}, nil)
}

// AttachInterval attaches a tick every period.
func (w *WaitSet) AttachInterval(period time.Duration) (int, error) {
	return w.attached(func(id *C.size_t) C.enum_hako_status {
		return C.hako_waitset_attach_interval(w.h, C.uint64_t(period.Microseconds()), id)
	}, nil)
}

// Wait waits until something happens or ctx ends (then ctx's error).
func (w *WaitSet) Wait(ctx context.Context) ([]WaitEvent, error) {
	if w.h == nil {
		return nil, ErrClosed
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var events [32]C.hako_wait_event
		var n C.size_t
		var outcome C.enum_hako_wait_outcome
		err := call(func() C.enum_hako_status {
			return C.hako_waitset_wait(w.h, C.uint64_t(slice(ctx).Microseconds()), &events[0],
				C.size_t(len(events)), &n, &outcome)
		})
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out := make([]WaitEvent, 0, int(n))
			for _, e := range events[:n] {
				out = append(out, WaitEvent{Kind: WaitEventKind(e.kind), ID: int(e.id)})
			}
			return out, nil
		}
	}
}

package hako

/*
#include <stdlib.h>
#include "hako.h"

// What a port's per-message calls write into lies in C memory: Go memory
// holding pointers passed to C is checked on every call (cgocheck), a
// cost per message; C memory is not.
typedef struct {
	hako_sample_mut loan;
	size_t reached;
} go_publisher_out;
*/
import "C"

import (
	"context"
	"fmt"
	"unsafe"
)

// OpenMode says whether a service is created, opened, or either.
type OpenMode int

// The open modes.
const (
	OpenOrCreate OpenMode = C.HAKO_OPEN_OR_CREATE
	Create       OpenMode = C.HAKO_CREATE
	Open         OpenMode = C.HAKO_OPEN
)

// PubSubOptions are a publish/subscribe service's settings; zero fields
// take the configured defaults on create and anything on open.
type PubSubOptions struct {
	MaxPublishers, MaxSubscribers, MaxNodes uint32
	// Samples each subscriber queues per publisher.
	BufferSize uint32
	// Samples a subscriber may hold at once.
	MaxBorrowed uint32
	// Samples kept for late-joining subscribers.
	HistorySize uint32
	// Backpressure: publishers wait for a full subscriber instead of
	// dropping its oldest sample.
	Backpressure bool
}

// PubSubService is a publish/subscribe service.
type PubSubService struct {
	h       *C.hako_pubsub_service
	payload PayloadType
}

// PublishSubscribe opens or creates (mode) the service `name` carrying
// `payload`.
func (n *Node) PublishSubscribe(name string, payload PayloadType, mode OpenMode, o PubSubOptions) (*PubSubService, error) {
	if n.h == nil {
		return nil, ErrClosed
	}
	cname, tname := cString(name), cString(payload.Name)
	defer free(cname)
	defer free(tname)
	pt := C.hako_payload_type{type_name: tname, size: C.uint64_t(payload.Size),
		align: C.uint64_t(payload.Align), slice: C.bool(payload.Slice)}
	opts := C.hako_pubsub_options{
		max_publishers: C.uint32_t(o.MaxPublishers), max_subscribers: C.uint32_t(o.MaxSubscribers),
		max_nodes: C.uint32_t(o.MaxNodes), buffer_size: C.uint32_t(o.BufferSize),
		max_borrowed: C.uint32_t(o.MaxBorrowed), history_size: C.uint32_t(o.HistorySize),
	}
	if o.Backpressure {
		opts.overflow = C.HAKO_OVERFLOW_BACKPRESSURE
	}
	s := &PubSubService{payload: payload}
	err := call(func() C.enum_hako_status {
		return C.hako_pubsub_service_open(n.h, cname, &pt, &opts, C.enum_hako_open_mode(mode), &s.h)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Payload is the type the service carries.
func (s *PubSubService) Payload() PayloadType { return s.payload }

// Close drops the service handle; its ports may outlive it.
func (s *PubSubService) Close() error {
	if s.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_pubsub_service_drop(&s.h) })
}

// Publisher sends samples of its service.
type Publisher struct {
	h       *C.hako_publisher
	payload PayloadType
	out     *C.go_publisher_out
}

// NewPublisher creates a publisher; maxSliceLen is the most elements of a
// sample of a slice service (ignored otherwise; 0: 1).
func (s *PubSubService) NewPublisher(maxSliceLen int) (*Publisher, error) {
	if s.h == nil {
		return nil, ErrClosed
	}
	opts := C.hako_publisher_options{max_slice_len: C.size_t(maxSliceLen)}
	p := &Publisher{payload: s.payload}
	if err := call(func() C.enum_hako_status { return C.hako_publisher_create(s.h, &opts, &p.h) }); err != nil {
		return nil, err
	}
	p.out = (*C.go_publisher_out)(C.calloc(1, C.sizeof_go_publisher_out))
	return p, nil
}

// Close drops the publisher; loans it made stay valid until sent or
// released.
func (p *Publisher) Close() error {
	if p.h == nil {
		return ErrClosed
	}
	if err := call(func() C.enum_hako_status { return C.hako_publisher_drop(&p.h) }); err != nil {
		return err
	}
	C.free(unsafe.Pointer(p.out))
	p.out = nil
	return nil
}

// SubscriberCount is the number of subscribers connected now.
func (p *Publisher) SubscriberCount() (int, error) {
	if p.h == nil {
		return 0, ErrClosed
	}
	var n C.size_t
	err := call(func() C.enum_hako_status { return C.hako_publisher_subscriber_count(p.h, &n) })
	return int(n), err
}

// SendCopy copies b (a whole number of elements) into a sample and sends
// it; returns how many subscribers it reached.
func (p *Publisher) SendCopy(b []byte) (int, error) {
	if p.h == nil {
		return 0, ErrClosed
	}
	var reached C.size_t
	var ptr unsafe.Pointer
	if len(b) > 0 {
		ptr = unsafe.Pointer(&b[0])
	}
	err := call(func() C.enum_hako_status {
		return C.hako_publisher_send_copy(p.h, ptr, C.size_t(len(b)), &reached)
	})
	return int(reached), err
}

// Loan is a sample being written in shared memory: write through Bytes
// (or the *T of LoanOf), then Send, or Release it unsent.
type Loan struct {
	p     *Publisher
	s     C.hako_sample_mut
	views views
}

// Loan lends a sample of n elements (1 for a service of a single value).
func (p *Publisher) Loan(n int) (*Loan, error) {
	if p.h == nil {
		return nil, ErrClosed
	}
	m, err := p.lend(n)
	if err != nil {
		return nil, err
	}
	return &Loan{p: p, s: m}, nil
}

// lend loans n elements through the publisher's C-side out struct.
func (p *Publisher) lend(n int) (C.hako_sample_mut, error) {
	out := &p.out.loan
	*out = C.hako_sample_mut{}
	if err := call(func() C.enum_hako_status { return C.hako_publisher_loan(p.h, C.size_t(n), out) }); err != nil {
		return C.hako_sample_mut{}, err
	}
	m := *out
	*out = C.hako_sample_mut{}
	return m, nil
}

// Bytes is the loan's payload in shared memory. It is the loan's until
// Send or Release; using it after is a bug this package cannot see.
func (l *Loan) Bytes() []byte {
	if l.s.data == nil {
		return nil
	}
	return unsafe.Slice((*byte)(l.s.data), int(l.s.size))
}

// Send sends the loan; returns how many subscribers it reached.
func (l *Loan) Send() (int, error) {
	if l.s.data == nil {
		return 0, ErrClosed
	}
	if l.p.h == nil {
		return 0, ErrClosed
	}
	if err := l.views.check("sending a loan"); err != nil {
		return 0, err
	}
	out := l.p.out
	out.loan = l.s
	err := call(func() C.enum_hako_status { return C.hako_publisher_send(l.p.h, &out.loan, &out.reached) })
	l.s = out.loan
	return int(out.reached), err
}

// Release gives the loan back unsent.
func (l *Loan) Release() error {
	if l.s.data == nil {
		return ErrClosed
	}
	if err := l.views.check("releasing a loan"); err != nil {
		return err
	}
	return call(func() C.enum_hako_status { return C.hako_sample_mut_drop(&l.s) })
}

// Subscriber receives samples of its service.
type Subscriber struct {
	h *C.hako_subscriber
	// Where receive writes (C memory, see go_publisher_out); a Sample is
	// allocated only when one came, not on every empty look of a polling
	// loop.
	next *C.hako_sample
}

// SubscriberOptions are a subscriber's settings.
type SubscriberOptions struct {
	// Lossy: publishers never wait for it (a full queue loses its oldest).
	Lossy bool
}

// NewSubscriber creates a subscriber.
func (s *PubSubService) NewSubscriber(o SubscriberOptions) (*Subscriber, error) {
	if s.h == nil {
		return nil, ErrClosed
	}
	opts := C.hako_subscriber_options{wait: C.HAKO_WAIT_SPIN_THEN_PARK, lossy: C.bool(o.Lossy)}
	sub := &Subscriber{}
	if err := call(func() C.enum_hako_status { return C.hako_subscriber_create(s.h, &opts, &sub.h) }); err != nil {
		return nil, err
	}
	sub.next = (*C.hako_sample)(C.calloc(1, C.sizeof_hako_sample))
	return sub, nil
}

// Close drops the subscriber; samples it received stay valid until
// released.
func (s *Subscriber) Close() error {
	if s.h == nil {
		return ErrClosed
	}
	if err := call(func() C.enum_hako_status { return C.hako_subscriber_drop(&s.h) }); err != nil {
		return err
	}
	C.free(unsafe.Pointer(s.next))
	s.next = nil
	return nil
}

// Sample is a received sample, read-only in shared memory until Release.
type Sample struct {
	s     C.hako_sample
	views views
}

// TryReceive takes the next sample without waiting; nil if none is there.
func (s *Subscriber) TryReceive() (*Sample, error) {
	return s.receive(0)
}

func (s *Subscriber) receive(us uint64) (*Sample, error) {
	got, err := s.take(us)
	if err != nil || got.data == nil {
		return nil, err
	}
	return &Sample{s: got}, nil
}

// take receives through the subscriber's C-side struct, waiting up to us
// µs; a zero struct if nothing came.
func (s *Subscriber) take(us uint64) (C.hako_sample, error) {
	if s.h == nil {
		return C.hako_sample{}, ErrClosed
	}
	next := s.next
	*next = C.hako_sample{}
	if err := call(func() C.enum_hako_status { return C.hako_subscriber_receive(s.h, C.uint64_t(us), next) }); err != nil {
		return C.hako_sample{}, err
	}
	got := *next
	*next = C.hako_sample{}
	return got, nil
}

// Receive waits for the next sample until ctx ends (then ctx's error).
func (s *Subscriber) Receive(ctx context.Context) (*Sample, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, err := s.receive(uint64(slice(ctx).Microseconds()))
		if err != nil || got != nil {
			return got, err
		}
	}
}

// Bytes is the sample's payload in shared memory, read-only. It is valid
// until Release; a view kept after Release reads a chunk the publisher
// may have reused.
func (s *Sample) Bytes() []byte {
	if s.s.data == nil {
		return nil
	}
	return unsafe.Slice((*byte)(s.s.data), int(s.s.size))
}

// Len is the number of elements.
func (s *Sample) Len() int { return int(s.s.len) }

// PublisherID is the id of the publisher that sent it.
func (s *Sample) PublisherID() uint64 { return uint64(s.s.publisher_id) }

// Release gives the sample back to its publisher; refused (ErrMisuse)
// while a View of it is open.
func (s *Sample) Release() error {
	if s.s.data == nil {
		return ErrClosed
	}
	if err := s.views.check("releasing a sample"); err != nil {
		return err
	}
	return call(func() C.enum_hako_status { return C.hako_sample_drop(&s.s) })
}

// Send sends v (a plain struct matching the service's type) by copy.
func Send[T any](p *Publisher, v T) (int, error) {
	if uint64(unsafe.Sizeof(v)) != p.payload.Size || p.payload.Slice {
		return 0, fmt.Errorf("hako: a %d-byte value on a service of %v: %w", unsafe.Sizeof(v), p.payload, ErrInvalidArgument)
	}
	return p.SendCopy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)))
}

// Value is the sample's payload as a *T in shared memory (valid until
// Release), if its size is T's.
func Value[T any](s *Sample) (*T, error) {
	var v T
	if s.s.data == nil {
		return nil, ErrClosed
	}
	if uintptr(s.s.size) != unsafe.Sizeof(v) {
		return nil, fmt.Errorf("hako: a %d-byte sample is no %d-byte value: %w", s.s.size, unsafe.Sizeof(v), ErrInvalidArgument)
	}
	return (*T)(s.s.data), nil
}

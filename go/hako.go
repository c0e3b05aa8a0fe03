// Package hako is hako's Go face: zero-copy inter-process communication
// over shared memory, interoperating with Rust, C, C++ and Python
// processes on the same services.
//
// It calls hako's C API through cgo and links its static library, so a Go
// program is one binary. Build the library once in the repository
// (`cargo build --release -p hako-ffi`, or ./scripts/go, which also runs
// the tests), then use this module through a replace directive (see the
// README's Go section).
//
// Every object has Close (ports, services, nodes); a closed object's
// methods return ErrClosed. Errors wrap hako's status codes: test them
// with errors.Is (ErrNotFound, ErrExists, ErrTimedOut, ...). Blocking
// waits take a context.Context and end on its cancellation. A port
// (publisher, subscriber, client, server, listener, notifier, waitset) is
// used by one goroutine at a time, as its C handle is by one thread;
// services and nodes by any.
package hako

/*
#cgo CFLAGS: -I${SRCDIR}/../crates/hako-ffi/include
#cgo LDFLAGS: ${SRCDIR}/../target/release/libhako_c.a -lpthread -ldl -lm
#include <stdlib.h>
#include "hako.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Status is one of the C API's status codes.
type Status int

// The status codes an Error wraps.
const (
	StatusNullArgument    Status = C.HAKO_ERROR_NULL_ARGUMENT
	StatusInvalidArgument Status = C.HAKO_ERROR_INVALID_ARGUMENT
	StatusNotFound        Status = C.HAKO_ERROR_NOT_FOUND
	StatusExists          Status = C.HAKO_ERROR_EXISTS
	StatusIncompatible    Status = C.HAKO_ERROR_INCOMPATIBLE
	StatusTooMany         Status = C.HAKO_ERROR_TOO_MANY
	StatusOutOfMemory     Status = C.HAKO_ERROR_OUT_OF_MEMORY
	StatusPeerGone        Status = C.HAKO_ERROR_PEER_GONE
	StatusCorrupted       Status = C.HAKO_ERROR_CORRUPTED
	StatusIO              Status = C.HAKO_ERROR_IO
	StatusMisuse          Status = C.HAKO_ERROR_MISUSE
	StatusBufferTooSmall  Status = C.HAKO_ERROR_BUFFER_TOO_SMALL
	StatusInternal        Status = C.HAKO_ERROR_INTERNAL
	StatusTerminated      Status = C.HAKO_ERROR_TERMINATED
	StatusTimedOut        Status = C.HAKO_ERROR_TIMED_OUT
)

// Error is a failed call: its status and hako's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return "hako: " + e.Message }

// Is makes errors.Is(err, ErrNotFound) true for any Error of that status.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Message == "" && t.Status == e.Status
}

// Errors to test with errors.Is.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrNotFound        = &Error{Status: StatusNotFound}
	ErrExists          = &Error{Status: StatusExists}
	ErrIncompatible    = &Error{Status: StatusIncompatible}
	ErrTooMany         = &Error{Status: StatusTooMany}
	ErrOutOfMemory     = &Error{Status: StatusOutOfMemory}
	ErrPeerGone        = &Error{Status: StatusPeerGone}
	ErrCorrupted       = &Error{Status: StatusCorrupted}
	ErrMisuse          = &Error{Status: StatusMisuse}
	ErrTimedOut        = &Error{Status: StatusTimedOut}
	ErrTerminated      = &Error{Status: StatusTerminated}
)

// ErrClosed is the error of a method called on a closed object, or on a
// loan or sample already sent or released.
var ErrClosed = errors.New("hako: used after Close (or after Send/Release)")

// call runs f, a call of the C API, on one OS thread with the read of its
// error message: the message is the calling thread's.
func call(f func() C.enum_hako_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := f()
	if s == C.HAKO_OK {
		return nil
	}
	msg := C.GoString(C.hako_last_error_message())
	if msg == "" {
		msg = C.GoString(C.hako_error_string(s))
	}
	return &Error{Status: Status(s), Message: msg}
}

// cString is s as a C string the caller frees.
func cString(s string) *C.char { return C.CString(s) }

func free(p *C.char) { C.free(unsafe.Pointer(p)) }

// Node is a process's membership of a domain.
type Node struct {
	h *C.hako_node
}

// NodeOptions are a node's settings; the zero value is the defaults.
type NodeOptions struct {
	// Name shown by `hako nodes`.
	Name string
	// Root of the domain; empty: the configuration in effect (HAKO_ROOT,
	// HAKO_CONFIG, else the user's own /dev/shm/hako-<uid>).
	Root string
	// SignalHandling: hako's waits end with ErrTerminated on SIGINT or
	// SIGTERM. Off by default in Go, whose runtime handles signals.
	SignalHandling bool
}

// NewNode joins the domain.
func NewNode(o NodeOptions) (*Node, error) {
	var opts C.hako_node_options
	if o.Name != "" {
		opts.name = cString(o.Name)
		defer free(opts.name)
	}
	if o.Root != "" {
		opts.root = cString(o.Root)
		defer free(opts.root)
	}
	opts.no_signal_handling = C.bool(!o.SignalHandling)
	n := &Node{}
	if err := call(func() C.enum_hako_status { return C.hako_node_create(&opts, &n.h) }); err != nil {
		return nil, err
	}
	return n, nil
}

// ID is the node's id, as `hako nodes` shows it.
func (n *Node) ID() (uint64, error) {
	if n.h == nil {
		return 0, ErrClosed
	}
	var id C.uint64_t
	err := call(func() C.enum_hako_status { return C.hako_node_id(n.h, &id) })
	return uint64(id), err
}

// Close leaves the domain; services and ports made through the node may
// outlive it.
func (n *Node) Close() error {
	if n.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_node_drop(&n.h) })
}

// PayloadType describes what a service carries, as a Rust process's type:
// its full name, size and alignment, and whether a payload is a slice of
// such elements.
type PayloadType struct {
	Name  string
	Size  uint64
	Align uint64
	Slice bool
}

// Bytes is the payload type of byte slices (`[u8]`).
func Bytes() PayloadType { return PayloadType{Name: "u8", Size: 1, Align: 1, Slice: true} }

// TypeOf is the payload type of T (a plain struct of fixed-size fields,
// no pointers), named as the Rust type it matches (`my_crate::Frame`).
func TypeOf[T any](name string) PayloadType {
	var v T
	return PayloadType{Name: name, Size: uint64(unsafe.Sizeof(v)), Align: uint64(unsafe.Alignof(v))}
}

func (p PayloadType) String() string {
	if p.Slice {
		return fmt.Sprintf("[%s] (elements of %d B, align %d)", p.Name, p.Size, p.Align)
	}
	return fmt.Sprintf("%s (%d B, align %d)", p.Name, p.Size, p.Align)
}

// ReclaimDeadNodes removes what nodes that died left in the domain at root
// (empty: the configuration in effect): their ports, services no live node
// holds, their files. Returns how many dead nodes it reclaimed.
func ReclaimDeadNodes(root string) (int, error) {
	var croot *C.char
	if root != "" {
		croot = cString(root)
		defer free(croot)
	}
	var n C.size_t
	err := call(func() C.enum_hako_status { return C.hako_reclaim_dead_nodes(croot, &n) })
	return int(n), err
}

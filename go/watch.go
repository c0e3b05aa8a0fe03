package hako

/*
#include "hako.h"
*/
import "C"

import "context"

// ChangeKind is what changed in a domain.
type ChangeKind int

// The kinds of changes.
const (
	ServiceCreated ChangeKind = C.HAKO_CHANGE_SERVICE_CREATED
	ServiceRemoved ChangeKind = C.HAKO_CHANGE_SERVICE_REMOVED
	NodeJoined     ChangeKind = C.HAKO_CHANGE_NODE_JOINED
	NodeLeft       ChangeKind = C.HAKO_CHANGE_NODE_LEFT
	NodeDied       ChangeKind = C.HAKO_CHANGE_NODE_DIED
	NodeReclaimed  ChangeKind = C.HAKO_CHANGE_NODE_RECLAIMED
	PortAdded      ChangeKind = C.HAKO_CHANGE_PORT_ADDED
	PortRemoved    ChangeKind = C.HAKO_CHANGE_PORT_REMOVED
	PortDied       ChangeKind = C.HAKO_CHANGE_PORT_DIED
	PortReclaimed  ChangeKind = C.HAKO_CHANGE_PORT_RECLAIMED
)

// Role is what a port is to its service.
type Role int

// The roles ("" when a change is not about a port).
const (
	NoRole         Role = C.HAKO_ROLE_NONE
	RolePublisher  Role = C.HAKO_ROLE_PUBLISHER
	RoleSubscriber Role = C.HAKO_ROLE_SUBSCRIBER
	RoleNotifier   Role = C.HAKO_ROLE_NOTIFIER
	RoleListener   Role = C.HAKO_ROLE_LISTENER
	RoleClient     Role = C.HAKO_ROLE_CLIENT
	RoleServer     Role = C.HAKO_ROLE_SERVER
	RoleWriter     Role = C.HAKO_ROLE_WRITER
	RoleReader     Role = C.HAKO_ROLE_READER
)

// Change is a change of the domain; fields its kind does not use are zero.
type Change struct {
	Kind     ChangeKind
	Service  string
	Pattern  string
	Node     uint64
	Pid      uint32
	NodeName string
	Role     Role
	Port     uint64
}

// Watcher learns the changes of a domain as they happen: services created
// and removed; nodes and ports that come, leave, die and are reclaimed.
type Watcher struct {
	h *C.hako_watcher
}

// NewWatcher watches the domain at root (empty: the configuration in
// effect), which must exist (ErrNotFound otherwise).
func NewWatcher(root string) (*Watcher, error) {
	var croot *C.char
	if root != "" {
		croot = cString(root)
		defer free(croot)
	}
	w := &Watcher{}
	if err := call(func() C.enum_hako_status { return C.hako_watcher_create(croot, &w.h) }); err != nil {
		return nil, err
	}
	return w, nil
}

// Close stops watching.
func (w *Watcher) Close() error {
	if w.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_watcher_drop(&w.h) })
}

func (w *Watcher) next(us uint64) (*Change, error) {
	if w.h == nil {
		return nil, ErrClosed
	}
	var c C.hako_change
	var got C.bool
	if err := call(func() C.enum_hako_status { return C.hako_watcher_next(w.h, C.uint64_t(us), &c, &got) }); err != nil {
		return nil, err
	}
	if !got {
		return nil, nil
	}
	return &Change{
		Kind: ChangeKind(c.kind), Service: C.GoString(&c.service[0]), Pattern: C.GoString(&c.pattern[0]),
		Node: uint64(c.node), Pid: uint32(c.pid), NodeName: C.GoString(&c.node_name[0]),
		Role: Role(c.role), Port: uint64(c.port),
	}, nil
}

// TryNext is the next change without waiting; nil if there is none.
func (w *Watcher) TryNext() (*Change, error) { return w.next(0) }

// Next waits for the next change until ctx ends (then ctx's error).
func (w *Watcher) Next(ctx context.Context) (*Change, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := w.next(uint64(slice(ctx).Microseconds()))
		if err != nil || c != nil {
			return c, err
		}
	}
}

// Fd is a descriptor readable when there may be changes (for a WaitSet's
// AttachFd); the watcher owns it.
func (w *Watcher) Fd() (int, error) {
	if w.h == nil {
		return -1, ErrClosed
	}
	var fd C.int32_t
	err := call(func() C.enum_hako_status { return C.hako_watcher_fd(w.h, &fd) })
	return int(fd), err
}

package hako

import (
	"fmt"
	"sync/atomic"
)

// The payload of a sample, a loan or a response lies in shared memory,
// where Go's collector cannot see it: a []byte or *T over it does not keep
// the message alive, and after Release (or Send) it reads or writes a
// chunk the publisher may already have reused for another message. So
// there are two ways to look at a payload:
//
//   - Bytes (and Value, LoanOf): the fast path, unchecked: the view is the
//     message's until Release or Send, as documented.
//   - View: a counted view. While one is open, Release and Send refuse
//     with ErrMisuse instead of letting the memory go under it; Close the
//     view first. This is the check the Python face makes on its buffer
//     exports, and turns the common mistake (a view still in use when the
//     message is released) into an error.

// View is a counted view of a message's payload (see above).
type View struct {
	b     []byte
	views *atomic.Int32
}

// Bytes is the payload; nil once the view is closed.
func (v *View) Bytes() []byte { return v.b }

// Close ends the view; the message may then be released or sent.
func (v *View) Close() error {
	if v.b == nil {
		return ErrClosed
	}
	v.b = nil
	v.views.Add(-1)
	return nil
}

// views counts the open views of a message.
type views struct{ n atomic.Int32 }

func (vs *views) open(b []byte) (*View, error) {
	if b == nil {
		return nil, ErrClosed
	}
	vs.n.Add(1)
	return &View{b: b, views: &vs.n}, nil
}

// check is ErrMisuse while views are open.
func (vs *views) check(what string) error {
	if n := vs.n.Load(); n > 0 {
		return &Error{Status: StatusMisuse, Message: fmt.Sprintf(
			"%s while %d view(s) of its payload are open: close them first", what, n)}
	}
	return nil
}

// View opens a counted view of the sample's payload.
func (s *Sample) View() (*View, error) { return s.views.open(s.Bytes()) }

// View opens a counted view of the loan's payload.
func (l *Loan) View() (*View, error) { return l.views.open(l.Bytes()) }

// View opens a counted view of the response's payload.
func (r *Response) View() (*View, error) { return r.views.open(r.Bytes()) }

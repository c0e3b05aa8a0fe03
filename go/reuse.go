package hako

import "context"

// Receiving and loaning into objects the caller keeps: each Receive or
// Loan returns a new Sample or Loan, a small allocation per message that
// Go's collector reclaims later. A loop that handles millions of messages
// a second can keep one Sample (or Loan) and fill it again each time:
//
//	var s hako.Sample
//	for {
//		if err := sub.ReceiveInto(ctx, &s); err != nil { ... }
//		use(s.Bytes())
//		s.Release() // empty again, ready for the next
//	}
//
// The object must be empty (new, sent or released): filling one that
// still holds a message is ErrMisuse, so a message is never dropped
// unreleased. With no allocation per message the collector seldom runs,
// and a busy loop is not slowed by its work.

func refill(what string) error {
	return &Error{Status: StatusMisuse, Message: what + " that still holds a message: send or release it first"}
}

// TryReceiveInto takes the next sample into out without waiting; false
// if none is there.
func (s *Subscriber) TryReceiveInto(out *Sample) (bool, error) {
	if out.s.data != nil {
		return false, refill("receiving into a sample")
	}
	got, err := s.take(0)
	if err != nil || got.data == nil {
		return false, err
	}
	out.s = got
	return true, nil
}

// ReceiveInto waits for the next sample, into out, until ctx ends (then
// ctx's error).
func (s *Subscriber) ReceiveInto(ctx context.Context, out *Sample) error {
	if out.s.data != nil {
		return refill("receiving into a sample")
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		got, err := s.take(uint64(slice(ctx).Microseconds()))
		if err != nil {
			return err
		}
		if got.data != nil {
			out.s = got
			return nil
		}
	}
}

// LoanInto lends a sample of n elements into out.
func (p *Publisher) LoanInto(n int, out *Loan) error {
	if out.s.data != nil {
		return refill("loaning into a loan")
	}
	if p.h == nil {
		return ErrClosed
	}
	m, err := p.lend(n)
	if err != nil {
		return err
	}
	out.p, out.s = p, m
	return nil
}

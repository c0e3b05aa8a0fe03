package hako

import "unsafe"

// loanPointer is the start of the loan's payload (nil once sent or
// released).
func loanPointer(l *Loan) unsafe.Pointer { return l.s.data }

// LoanOf lends a sample of the service's single value and gives its
// payload as a *T in shared memory, to write in place before Send (the
// pointer is the loan's until Send or Release).
func LoanOf[T any](p *Publisher) (*Loan, *T, error) {
	var v T
	if uint64(unsafe.Sizeof(v)) != p.payload.Size || p.payload.Slice {
		return nil, nil, ErrInvalidArgument
	}
	l, err := p.Loan(1)
	if err != nil {
		return nil, nil, err
	}
	return l, (*T)(l.s.data), nil
}

package hako

/*
#include "hako.h"
*/
import "C"

import (
	"context"
	"unsafe"
)

// ReqResOptions are a request/response service's settings; zero fields
// take the configured defaults on create and anything on open.
type ReqResOptions struct {
	MaxClients, MaxServers, MaxNodes uint32
	// Requests a client may have in flight.
	MaxRequestsInFlight uint32
	// Responses a client may hold or have queued per request.
	MaxResponseBuffer uint32
}

// ReqResService is a request/response service.
type ReqResService struct {
	h                 *C.hako_reqres_service
	request, response PayloadType
}

func payloadC(p PayloadType) (C.hako_payload_type, func()) {
	name := cString(p.Name)
	return C.hako_payload_type{type_name: name, size: C.uint64_t(p.Size),
		align: C.uint64_t(p.Align), slice: C.bool(p.Slice)}, func() { free(name) }
}

// RequestResponse opens or creates (mode) the service `name` of requests
// `request` answered by streams of responses `response`.
func (n *Node) RequestResponse(name string, request, response PayloadType, mode OpenMode, o ReqResOptions) (*ReqResService, error) {
	if n.h == nil {
		return nil, ErrClosed
	}
	cname := cString(name)
	defer free(cname)
	req, freeReq := payloadC(request)
	defer freeReq()
	resp, freeResp := payloadC(response)
	defer freeResp()
	opts := C.hako_reqres_options{max_clients: C.uint32_t(o.MaxClients),
		max_servers: C.uint32_t(o.MaxServers), max_nodes: C.uint32_t(o.MaxNodes),
		max_requests_in_flight: C.uint32_t(o.MaxRequestsInFlight),
		max_response_buffer:    C.uint32_t(o.MaxResponseBuffer)}
	s := &ReqResService{request: request, response: response}
	err := call(func() C.enum_hako_status {
		return C.hako_reqres_service_open(n.h, cname, &req, &resp, &opts, C.enum_hako_open_mode(mode), &s.h)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Close drops the service handle; its ports may outlive it.
func (s *ReqResService) Close() error {
	if s.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_reqres_service_drop(&s.h) })
}

// Client sends requests and takes their streams of responses.
type Client struct {
	h *C.hako_client
}

// NewClient creates a client; maxSliceLen is the most elements of a slice
// request (0: 1).
func (s *ReqResService) NewClient(maxSliceLen int) (*Client, error) {
	if s.h == nil {
		return nil, ErrClosed
	}
	opts := C.hako_port_options{max_slice_len: C.size_t(maxSliceLen)}
	c := &Client{}
	if err := call(func() C.enum_hako_status { return C.hako_client_create(s.h, &opts, &c.h) }); err != nil {
		return nil, err
	}
	return c, nil
}

// Close drops the client; refused (ErrMisuse) while its loans or pending
// responses live.
func (c *Client) Close() error {
	if c.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_client_drop(&c.h) })
}

// WaitForServer waits, asleep, until a server is there to take a request,
// or ctx ends.
func (c *Client) WaitForServer(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.h == nil {
			return ErrClosed
		}
		err := call(func() C.enum_hako_status {
			return C.hako_client_wait_for_server(c.h, C.uint64_t(slice(ctx).Microseconds()))
		})
		if err == nil || !isStatus(err, StatusTimedOut) {
			return err
		}
	}
}

func isStatus(err error, s Status) bool {
	e, ok := err.(*Error)
	return ok && e.Status == s
}

// Message is a loaned request or response in shared memory: write through
// Bytes, then send it (Client.Send, ActiveRequest.Send or SendLast) or
// Release it.
type Message struct {
	m C.hako_message_mut
}

// Bytes is the message's payload in shared memory; the message's until
// it is sent or released.
func (m *Message) Bytes() []byte {
	if m.m.data == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.m.data), int(m.m.size))
}

// Release gives the message back unsent.
func (m *Message) Release() error {
	if m.m.data == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_message_mut_drop(&m.m) })
}

// Loan lends a request of n elements (1 unless requests are slices).
func (c *Client) Loan(n int) (*Message, error) {
	if c.h == nil {
		return nil, ErrClosed
	}
	m := &Message{}
	if err := call(func() C.enum_hako_status { return C.hako_client_loan(c.h, C.size_t(n), &m.m) }); err != nil {
		return nil, err
	}
	return m, nil
}

// Send sends a request loaned by this client; its responses come through
// the Pending.
func (c *Client) Send(m *Message) (*Pending, error) {
	if c.h == nil || m.m.data == nil {
		return nil, ErrClosed
	}
	p := &Pending{}
	if err := call(func() C.enum_hako_status { return C.hako_client_send(c.h, &m.m, &p.h) }); err != nil {
		return nil, err
	}
	return p, nil
}

// Request copies b into a request and sends it.
func (c *Client) Request(b []byte, elements int) (*Pending, error) {
	m, err := c.Loan(elements)
	if err != nil {
		return nil, err
	}
	copy(m.Bytes(), b)
	return c.Send(m)
}

// Pending is the stream of responses to one request.
type Pending struct {
	h *C.hako_pending
}

// Response is a response received, read-only in shared memory until
// Release.
type Response struct {
	r     C.hako_response
	views views
}

// Bytes is the response's payload, valid until Release.
func (r *Response) Bytes() []byte {
	if r.r.data == nil {
		return nil
	}
	return unsafe.Slice((*byte)(r.r.data), int(r.r.size))
}

// Release gives the response back to its server; refused (ErrMisuse)
// while a View of it is open.
func (r *Response) Release() error {
	if r.r.data == nil {
		return ErrClosed
	}
	if err := r.views.check("releasing a response"); err != nil {
		return err
	}
	return call(func() C.enum_hako_status { return C.hako_response_drop(&r.r) })
}

// Receive waits for the next response until ctx ends; (nil, nil) when the
// stream has ended.
func (p *Pending) Receive(ctx context.Context) (*Response, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p.h == nil {
			return nil, ErrClosed
		}
		r := &Response{}
		var ended C.bool
		err := call(func() C.enum_hako_status {
			return C.hako_pending_receive(p.h, C.uint64_t(slice(ctx).Microseconds()), &r.r, &ended)
		})
		if err != nil {
			return nil, err
		}
		if r.r.data != nil {
			return r, nil
		}
		if ended {
			return nil, nil
		}
	}
}

// Close drops the pending response: responses still on their way go back
// unread.
func (p *Pending) Close() error {
	if p.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_pending_drop(&p.h) })
}

// Server takes requests and answers each with a stream of responses.
type Server struct {
	h *C.hako_server
}

// NewServer creates a server; maxSliceLen is the most elements of a slice
// response (0: 1).
func (s *ReqResService) NewServer(maxSliceLen int) (*Server, error) {
	if s.h == nil {
		return nil, ErrClosed
	}
	opts := C.hako_port_options{max_slice_len: C.size_t(maxSliceLen)}
	srv := &Server{}
	if err := call(func() C.enum_hako_status { return C.hako_server_create(s.h, &opts, &srv.h) }); err != nil {
		return nil, err
	}
	return srv, nil
}

// Close drops the server; refused (ErrMisuse) while its active requests
// live.
func (s *Server) Close() error {
	if s.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_server_drop(&s.h) })
}

// ActiveRequest is a request being answered: read it with Bytes, answer
// with Loan and Send (the stream goes on) or SendLast, or Close it to end
// the stream.
type ActiveRequest struct {
	h *C.hako_active_request
}

// Receive waits for the next request until ctx ends.
func (s *Server) Receive(ctx context.Context) (*ActiveRequest, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.h == nil {
			return nil, ErrClosed
		}
		a := &ActiveRequest{}
		err := call(func() C.enum_hako_status {
			return C.hako_server_receive(s.h, C.uint64_t(slice(ctx).Microseconds()), &a.h)
		})
		if err != nil {
			return nil, err
		}
		if a.h != nil {
			return a, nil
		}
	}
}

// Bytes is the request's payload in the client's shared memory, valid
// until the request is closed or answered last.
func (a *ActiveRequest) Bytes() []byte {
	if a.h == nil {
		return nil
	}
	data := C.hako_active_request_data(a.h)
	if data == nil {
		return nil
	}
	return unsafe.Slice((*byte)(data), int(C.hako_active_request_size(a.h)))
}

// ClientID is the id of the client that sent it.
func (a *ActiveRequest) ClientID() uint64 { return uint64(C.hako_active_request_client_id(a.h)) }

// Loan lends a response of n elements (1 unless responses are slices).
func (a *ActiveRequest) Loan(n int) (*Message, error) {
	if a.h == nil {
		return nil, ErrClosed
	}
	m := &Message{}
	if err := call(func() C.enum_hako_status { return C.hako_active_request_loan(a.h, C.size_t(n), &m.m) }); err != nil {
		return nil, err
	}
	return m, nil
}

// Send sends a response; the stream goes on.
func (a *ActiveRequest) Send(m *Message) error {
	if a.h == nil || m.m.data == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_active_request_send(a.h, &m.m) })
}

// SendLast sends a response as the last of the stream and closes the
// request.
func (a *ActiveRequest) SendLast(m *Message) error {
	if a.h == nil || m.m.data == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_active_request_send_last(&a.h, &m.m) })
}

// Close ends the stream (the client sees its end) and lets the request go.
func (a *ActiveRequest) Close() error {
	if a.h == nil {
		return ErrClosed
	}
	return call(func() C.enum_hako_status { return C.hako_active_request_drop(&a.h) })
}

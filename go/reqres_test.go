package hako

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRequestsAnsweredByStreams(t *testing.T) {
	node := must(NewNode(NodeOptions{Root: root(t)}))
	defer node.Close()
	svc := must(node.RequestResponse("go/echo", Bytes(), Bytes(), OpenOrCreate, ReqResOptions{}))
	defer svc.Close()
	client := must(svc.NewClient(64))
	server := must(svc.NewServer(64))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.WaitForServer(ctx); err != nil {
		t.Fatal(err)
	}

	// The server answers each request with three responses: the request,
	// upper-cased, then its length, the last one ending the stream.
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 2; i++ {
			req, err := server.Receive(ctx)
			if err != nil {
				done <- err
				return
			}
			body := string(req.Bytes())
			for j, answer := range []string{body, strings.ToUpper(body), fmt.Sprint(len(body))} {
				m, err := req.Loan(len(answer))
				if err != nil {
					done <- err
					return
				}
				copy(m.Bytes(), answer)
				if j == 2 {
					err = req.SendLast(m)
				} else {
					err = req.Send(m)
				}
				if err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	for _, body := range []string{"hello", "go"} {
		pending := must(client.Request([]byte(body), len(body)))
		var got []string
		for {
			r := must(pending.Receive(ctx))
			if r == nil {
				break
			}
			got = append(got, string(r.Bytes()))
			r.Release()
		}
		want := []string{body, strings.ToUpper(body), fmt.Sprint(len(body))}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("got %v, want %v", got, want)
		}
		if err := pending.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A request loaned and not sent keeps the client from closing.
	m := must(client.Loan(1))
	if err := client.Close(); !errors.Is(err, ErrMisuse) {
		t.Fatalf("closing a client with a loan: %v", err)
	}
	m.Release()
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
}

// `rust_peer serve ROOT COUNT` answers COUNT requests of `Mixed` with one
// response each; a Go client asks them.
func TestGoClientRustServer(t *testing.T) {
	const count = 500
	r := root(t)
	cmd := exec.Command(peer(t), "serve", r, fmt.Sprint(count))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	node := must(NewNode(NodeOptions{Name: "go-client", Root: r}))
	defer node.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var svc *ReqResService
	for svc == nil {
		var err error
		svc, err = node.RequestResponse("ffi/cross-rr", mixedType, mixedType, Open, ReqResOptions{})
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("the Rust server never made its service: %s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	defer svc.Close()
	client := must(svc.NewClient(0))
	defer client.Close()
	if err := client.WaitForServer(ctx); err != nil {
		t.Fatal(err)
	}
	for seq := uint64(0); seq < count; seq++ {
		m := must(client.Loan(1))
		*(*mixed)(m.m.data) = mixedOf(seq)
		pending := must(client.Send(m))
		resp := must(pending.Receive(ctx))
		if resp == nil {
			t.Fatalf("request %d: no response (%s)", seq, out.String())
		}
		if v := *(*mixed)(resp.r.data); v != mixedOf(seq+1) {
			t.Fatalf("request %d: got %+v", seq, v)
		}
		resp.Release()
		pending.Close()
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), fmt.Sprintf("RESULT served=%d", count)) {
		t.Fatalf("the Rust server: %v: %s", err, out.String())
	}
}

// Server answers each request on the service "go/upper" with the request
// upper-cased, then its length, ending the stream; until Ctrl-C. Run
// examples/client beside it, in either order.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"hako.local/hako"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	node, err := hako.NewNode(hako.NodeOptions{Name: "go-server"})
	if err != nil {
		return err
	}
	defer node.Close()
	svc, err := node.RequestResponse("go/upper", hako.Bytes(), hako.Bytes(), hako.OpenOrCreate, hako.ReqResOptions{})
	if err != nil {
		return err
	}
	defer svc.Close()
	server, err := svc.NewServer(256)
	if err != nil {
		return err
	}
	defer server.Close()
	fmt.Println("serving go/upper")
	for {
		req, err := server.Receive(ctx)
		if err != nil {
			return err
		}
		body := req.Bytes()
		for _, answer := range [][]byte{bytes.ToUpper(body), []byte(fmt.Sprint(len(body)))} {
			m, err := req.Loan(len(answer))
			if err != nil {
				return err
			}
			copy(m.Bytes(), answer)
			if err := req.Send(m); err != nil {
				return err
			}
		}
		fmt.Printf("answered %q\n", body)
		req.Close() // ends the response stream
	}
}

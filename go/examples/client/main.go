// Client sends its arguments (or "hello") as requests to the service
// "go/upper" and prints every response of each stream. Run
// examples/server beside it; the client waits up to 10 s for one.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"hako.local/hako"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	words := os.Args[1:]
	if len(words) == 0 {
		words = []string{"hello"}
	}
	node, err := hako.NewNode(hako.NodeOptions{Name: "go-client"})
	if err != nil {
		return err
	}
	defer node.Close()
	svc, err := node.RequestResponse("go/upper", hako.Bytes(), hako.Bytes(), hako.OpenOrCreate, hako.ReqResOptions{})
	if err != nil {
		return err
	}
	defer svc.Close()
	client, err := svc.NewClient(256)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.WaitForServer(ctx); err != nil {
		return fmt.Errorf("no server on go/upper (start examples/server): %w", err)
	}
	for _, w := range words {
		pending, err := client.Request([]byte(w), len(w))
		if err != nil {
			return err
		}
		for {
			resp, err := pending.Receive(ctx)
			if err != nil {
				return err
			}
			if resp == nil { // the stream ended
				break
			}
			fmt.Printf("%s -> %s\n", w, resp.Bytes())
			resp.Release()
		}
		pending.Close()
	}
	return nil
}

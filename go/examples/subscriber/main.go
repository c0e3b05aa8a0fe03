// Subscriber prints what arrives on the service "go/example" until Ctrl-C;
// run examples/publisher beside it, in either order (or, once this runs,
// `hako pub go/example TEXT`).
package main

import (
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
	node, err := hako.NewNode(hako.NodeOptions{Name: "go-subscriber"})
	if err != nil {
		return err
	}
	defer node.Close()
	svc, err := node.PublishSubscribe("go/example", hako.Bytes(), hako.OpenOrCreate, hako.PubSubOptions{})
	if err != nil {
		return err
	}
	defer svc.Close()
	sub, err := svc.NewSubscriber(hako.SubscriberOptions{})
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		sample, err := sub.Receive(ctx) // sleeps until a message comes
		if err != nil {
			return err
		}
		fmt.Printf("received %q\n", sample.Bytes()) // read where it lies
		sample.Release()
	}
}

// Publisher sends a counter as text, once a second, on the service
// "go/example" until Ctrl-C. Run examples/subscriber (or `hako sub
// go/example`) beside it, in either order.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"hako.local/hako"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	node, err := hako.NewNode(hako.NodeOptions{Name: "go-publisher"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer node.Close()
	svc, err := node.PublishSubscribe("go/example", hako.Bytes(), hako.OpenOrCreate, hako.PubSubOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer svc.Close()
	pub, err := svc.NewPublisher(64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer pub.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		text := fmt.Sprintf("hello %d", n)
		loan, err := pub.Loan(len(text)) // the message, in shared memory
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		copy(loan.Bytes(), text) // written in place
		reached, err := loan.Send()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("sent %q to %d subscriber(s)\n", text, reached)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

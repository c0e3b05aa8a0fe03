package hako_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"hako.local/hako"
)

// A publisher and a subscriber of byte slices, zero-copy both ways (here
// in one process; any Rust, C, C++ or Python process on the service pairs
// with either).
func Example() {
	root, _ := os.MkdirTemp("/dev/shm", "hako-go-example.")
	defer os.RemoveAll(root)

	node, err := hako.NewNode(hako.NodeOptions{Name: "go-example", Root: root})
	if err != nil {
		panic(err)
	}
	defer node.Close()
	chat, err := node.PublishSubscribe("demo/chat", hako.Bytes(), hako.OpenOrCreate, hako.PubSubOptions{})
	if err != nil {
		panic(err)
	}
	defer chat.Close()
	sub, _ := chat.NewSubscriber(hako.SubscriberOptions{})
	defer sub.Close()
	pub, _ := chat.NewPublisher(1024)
	defer pub.Close()

	loan, _ := pub.Loan(5)      // 5 bytes in shared memory
	copy(loan.Bytes(), "hello") // written in place
	reached, _ := loan.Send()   // only a descriptor crosses
	fmt.Println("reached", reached)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	sample, err := sub.Receive(ctx) // waits until one comes, or ctx ends
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s\n", sample.Bytes()) // read where it lies
	sample.Release()                   // back to the publisher
	// Output:
	// reached 1
	// hello
}

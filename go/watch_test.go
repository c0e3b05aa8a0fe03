package hako

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// A watcher sees a Rust process join with a port, die of SIGKILL, and be
// reclaimed; on a waitset.
func TestAWatcherSeesAProcessJoinDieAndBeReclaimed(t *testing.T) {
	r := root(t)
	node := must(NewNode(NodeOptions{Name: "go-watcher", Root: r}))
	defer node.Close()
	w := must(NewWatcher(r))
	defer w.Close()
	ws := must(NewWaitSet())
	defer ws.Close()
	must(ws.AttachFd(must(w.Fd())))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The Rust peer subscribes and waits for messages that never come.
	peerProc := exec.Command(peer(t), "subscribe", r, "1")
	if err := peerProc.Start(); err != nil {
		t.Fatal(err)
	}
	seen := map[ChangeKind]*Change{}
	await := func(kinds ...ChangeKind) {
		t.Helper()
		for {
			missing := 0
			for _, k := range kinds {
				if seen[k] == nil {
					missing++
				}
			}
			if missing == 0 {
				return
			}
			if _, err := ws.Wait(ctx); err != nil {
				t.Fatalf("waiting for %v: %v (saw %v)", kinds, err, seen)
			}
			for c := must(w.TryNext()); c != nil; c = must(w.TryNext()) {
				if c.Service == "" || c.Service == "ffi/cross" {
					seen[c.Kind] = c
				}
			}
		}
	}
	await(ServiceCreated, NodeJoined, PortAdded)
	if c := seen[PortAdded]; c.Role != RoleSubscriber || c.Port == 0 || c.Node == 0 {
		t.Fatalf("port added: %+v", c)
	}
	if c := seen[NodeJoined]; c.NodeName != "rust_peer" || c.Pid != uint32(peerProc.Process.Pid) {
		t.Fatalf("node joined: %+v", c)
	}
	if c := seen[ServiceCreated]; c.Pattern != "publish_subscribe" {
		t.Fatalf("service created: %+v", c)
	}
	peerProc.Process.Kill()
	peerProc.Wait()
	await(NodeDied, PortDied)
	// What it left, reclaimed (as `hako clean` does).
	if n := must(ReclaimDeadNodes(r)); n != 1 {
		t.Fatalf("reclaimed %d nodes", n)
	}
	await(NodeReclaimed, PortReclaimed, ServiceRemoved)
	// Nothing more: a short wait ends with its deadline.
	short, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	if c, err := w.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the reclaim: %v %v", c, err)
	}
	if _, err := NewWatcher(r + "-not-there"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a domain that is not there: %v", err)
	}
}

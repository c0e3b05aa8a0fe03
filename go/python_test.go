package hako

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// python runs Python code with the repository's Python face (built by
// ./scripts/python); its stdout lines come through the returned reader.
func python(t *testing.T, code string, args ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	py := program(t, "target/python/venv/bin/python", "./scripts/python --build-only")
	cmd := exec.Command(py, append([]string{"-u", "-c", code}, args...)...)
	var errs bytes.Buffer
	cmd.Stderr = &errs
	out := must(cmd.StdoutPipe())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out), &errs
}

func line(t *testing.T, r *bufio.Reader, errs *bytes.Buffer) string {
	t.Helper()
	l, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("%v: %s", err, errs.String())
	}
	return strings.TrimSpace(l)
}

// Events both ways: a Python notifier wakes a Go listener, a Go notifier
// a Python listener.
func TestEventsWithPython(t *testing.T) {
	r := root(t)
	node := must(NewNode(NodeOptions{Root: r}))
	defer node.Close()
	bells := must(node.Event("go/py-bell", OpenOrCreate, EventOptions{}))
	defer bells.Close()
	listener := must(bells.NewListener())
	defer listener.Close()
	notifier := must(bells.NewNotifier())
	defer notifier.Close()
	_, out, errs := python(t, `
import sys, hako
node = hako.Node("py-bell", root=sys.argv[1])
bells = node.event("go/py-bell")
listener = bells.listener()
notifier = bells.notifier()
print("ready", flush=True)
got = []
while not any(i == 9 for i, _ in got):
    got += listener.wait(timeout=10.0)
notifier.notify(4)
print("heard 9", flush=True)
sys.stdin.readline()
`, r)
	if l := line(t, out, errs); l != "ready" {
		t.Fatalf("python said %q", l)
	}
	for must(notifier.Notify(9)) < 2 {
		time.Sleep(time.Millisecond)
	}
	if l := line(t, out, errs); l != "heard 9" {
		t.Fatalf("python said %q", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for heard := false; !heard; {
		for _, f := range must(listener.Wait(ctx)) {
			heard = heard || f.ID == 4
		}
	}
}

// A Go client and a Python server: every request answered with its bytes
// reversed.
func TestGoClientPythonServer(t *testing.T) {
	const count = 200
	r := root(t)
	node := must(NewNode(NodeOptions{Root: r}))
	defer node.Close()
	svc := must(node.RequestResponse("go/py-rr", Bytes(), Bytes(), OpenOrCreate, ReqResOptions{}))
	defer svc.Close()
	client := must(svc.NewClient(64))
	defer client.Close()
	_, out, errs := python(t, `
import sys, hako
node = hako.Node("py-server", root=sys.argv[1])
svc = node.request_response("go/py-rr", request_slice=True, response_slice=True)
server = svc.server(max_slice_len=64)
print("ready", flush=True)
for _ in range(int(sys.argv[2])):
    req = server.receive(timeout=10.0)
    assert req is not None
    req.respond(bytes(req)[::-1])
    req.finish()
print("served", flush=True)
`, r, "200")
	if l := line(t, out, errs); l != "ready" {
		t.Fatalf("python said %q", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.WaitForServer(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < count; i++ {
		body := []byte("request " + strings.Repeat("x", i%10))
		pending := must(client.Request(body, len(body)))
		resp := must(pending.Receive(ctx))
		if resp == nil {
			t.Fatalf("request %d: no response: %s", i, errs.String())
		}
		want := make([]byte, len(body))
		for j := range body {
			want[j] = body[len(body)-1-j]
		}
		if !bytes.Equal(resp.Bytes(), want) {
			t.Fatalf("request %d: got %q", i, resp.Bytes())
		}
		resp.Release()
		if end := must(pending.Receive(ctx)); end != nil {
			t.Fatalf("request %d: a second response", i)
		}
		pending.Close()
	}
	if l := line(t, out, errs); l != "served" {
		t.Fatalf("python said %q", l)
	}
}

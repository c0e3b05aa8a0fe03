// Command hako-bench-go is the Go side of two transports of `hako bench`:
// "hako-go", hako's ping-pong and one-way stream written in Go against
// this module, and "go-unix", the same over Go's own net unix socket. The
// bench starts one process per side and drives it over its standard input
// and output, one line each way per block of messages, so only the
// messages themselves cross between the two Go processes while a block is
// timed.
//
//	hako-bench-go -side leader|follower -transport hako|unix -root DIR
//	    -row N -size BYTES -payload touch|full -pattern ping-pong|one-way
//	    [-followers N] [-index K] [-buffer N]
//
// It answers "ready" once its side is set up (the leader's services or
// socket exist), then reads commands:
//
//	connect                 leader: wait until every follower is linked; "ok"
//	round-trips WARMUP N    leader: WARMUP untimed, N timed round trips;
//	                        "ok CPU USER SYS SLEEPS T1 ... TN", each Ti in ns
//	send WARMUP N           leader: send WARMUP messages untimed, then N
//	                        timed, one way; "ok START CPU USER SYS SLEEPS",
//	                        START the CLOCK_MONOTONIC ns just before the
//	                        first timed one
//	serve WARMUP N ONEWAY   follower: answer (ONEWAY 0) or receive (1)
//	                        WARMUP messages untimed, then N timed; "ok LAST
//	                        CPU USER SYS SLEEPS", LAST the CLOCK_MONOTONIC
//	                        ns just after the last
//
// Messages are numbered from 1, warm-up first.
//
// CPU, USER and SYS are this process's CPU time over the timed messages in
// ns, SLEEPS its voluntary context switches. A failure answers "error
// MESSAGE" and the process exits; end of input ends it cleanly.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// spec is a row's description, from the flags.
type spec struct {
	leader    bool
	root      string
	row       uint64
	size      int
	full      bool
	oneWay    bool
	followers int
	index     int
	buffer    int
}

// side is one side of a row, on some transport.
type side interface {
	// connect waits until every follower is linked (leader).
	connect() error
	// roundTrip sends message seq, calls sent once it is on its way, and
	// waits for and checks its answer (leader, ping-pong).
	roundTrip(seq uint64, sent func()) error
	// send sends message seq one way (leader).
	send(seq uint64) error
	// serve waits for message seq and answers it (follower, ping-pong).
	serve(seq uint64) error
	// receive waits for message seq and checks it (follower, one way).
	receive(seq uint64) error
	close() error
}

func main() {
	var s spec
	var sideName, transport, payload, pattern string
	flag.StringVar(&sideName, "side", "", "leader or follower")
	flag.StringVar(&transport, "transport", "hako", "hako or unix")
	flag.StringVar(&s.root, "root", "", "the domain root (hako) or socket directory (unix)")
	flag.Uint64Var(&s.row, "row", 0, "the row's id")
	flag.IntVar(&s.size, "size", 0, "message size in bytes")
	flag.StringVar(&payload, "payload", "touch", "touch or full")
	flag.StringVar(&pattern, "pattern", "ping-pong", "ping-pong or one-way")
	flag.IntVar(&s.followers, "followers", 1, "followers of a one-way row")
	flag.IntVar(&s.index, "index", 0, "this follower's index")
	flag.IntVar(&s.buffer, "buffer", 2, "queue depth of each subscriber (hako)")
	flag.Parse()
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	fail := func(err error) {
		fmt.Fprintf(out, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		out.Flush()
		os.Exit(1)
	}
	s.leader = sideName == "leader"
	s.full = payload == "full"
	s.oneWay = pattern == "one-way"
	switch {
	case sideName != "leader" && sideName != "follower":
		fail(fmt.Errorf("-side must be leader or follower, not %q", sideName))
	case payload != "touch" && payload != "full":
		fail(fmt.Errorf("-payload must be touch or full, not %q", payload))
	case pattern != "ping-pong" && pattern != "one-way":
		fail(fmt.Errorf("-pattern must be ping-pong or one-way, not %q", pattern))
	case s.size < 1:
		fail(fmt.Errorf("-size must be at least 1 byte"))
	case s.followers < 1 || (!s.oneWay && s.followers != 1):
		fail(fmt.Errorf("-followers must be 1 in ping-pong and at least 1 one way"))
	}
	var sd side
	var err error
	switch transport {
	case "hako":
		// One goroutine on one OS thread makes every call, as a
		// latency-minded Go program would (hako's calls lock the thread
		// for each call anyway). Not for the socket, whose blocking reads
		// park the goroutine in Go's network poller: a locked goroutine
		// would cost a thread hand-off on every wake-up.
		runtime.LockOSThread()
		sd, err = newHakoSide(s)
	case "unix":
		sd, err = newUnixSide(s)
	default:
		err = fmt.Errorf("-transport must be hako or unix, not %q", transport)
	}
	if err != nil {
		fail(err)
	}
	defer sd.close()
	fmt.Fprintln(out, "ready")
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := command(sd, strings.Fields(in.Text()), out); err != nil {
			fail(err)
		}
		out.Flush()
	}
}

// command runs one command line and writes its answer.
func command(sd side, words []string, out *bufio.Writer) error {
	if len(words) == 0 {
		return fmt.Errorf("an empty command")
	}
	args := make([]uint64, len(words)-1)
	for i, w := range words[1:] {
		v, err := strconv.ParseUint(w, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: argument %q is not a number", words[0], w)
		}
		args[i] = v
	}
	want := map[string]int{"connect": 0, "round-trips": 2, "send": 2, "serve": 3}
	n, known := want[words[0]]
	if !known {
		return fmt.Errorf("unknown command %q", words[0])
	}
	if len(args) != n {
		return fmt.Errorf("%s takes %d arguments, not %d", words[0], n, len(args))
	}
	switch words[0] {
	case "connect":
		if err := sd.connect(); err != nil {
			return err
		}
		fmt.Fprintln(out, "ok")
	case "round-trips":
		samples, cpu, err := roundTrips(sd, args[0], args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ok %s", cpu)
		for _, t := range samples {
			out.WriteByte(' ')
			out.WriteString(strconv.FormatUint(t, 10))
		}
		out.WriteByte('\n')
	case "send":
		start, cpu, err := sendRange(sd, args[0], args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ok %d %s\n", start, cpu)
	case "serve":
		last, cpu, err := serveRange(sd, args[0], args[1], args[2] == 1)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ok %d %s\n", last, cpu)
	}
	return nil
}

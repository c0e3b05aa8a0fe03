package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestByteSumAddsEveryByte(t *testing.T) {
	for _, n := range []int{1, 7, 8, 1023, 1024, 1025, 4096 + 3} {
		b := make([]byte, n)
		var want uint64
		for i := range b {
			b[i] = byte(i*7 + 3)
			want += uint64(b[i])
		}
		if got := byteSum(b); got != want {
			t.Errorf("%d bytes: sum %d, want %d", n, got, want)
		}
	}
}

func TestWrittenMessagesPassTheirCheckAndOthersFail(t *testing.T) {
	for _, full := range []bool{false, true} {
		for _, n := range []int{1, 64, 3000} {
			b := make([]byte, n)
			write(b, 9, full)
			if err := check(b, n, 9, full, "m"); err != nil {
				t.Errorf("full %v, %d bytes: %v", full, n, err)
			}
			if check(b, n, 10, full, "m") == nil || check(b, n+1, 9, full, "m") == nil {
				t.Errorf("full %v, %d bytes: a wrong tag or size passed", full, n)
			}
		}
	}
	b := make([]byte, 64)
	write(b, 9, false)
	if check(b, 64, 9, true, "m") == nil {
		t.Error("a message tagged at its ends only passed the full check")
	}
}

// TestHakoBenchRunsTheGoRows runs `hako bench` (the program $HAKO_BENCH
// names; ./scripts/go builds it) on the Go transports with this program
// built afresh, and checks every row ran, the fan-out rows were skipped
// with a reason, and the Go goals were judged. Behaviour only, no speed.
func TestHakoBenchRunsTheGoRows(t *testing.T) {
	bench := os.Getenv("HAKO_BENCH")
	if bench == "" {
		t.Skip("$HAKO_BENCH does not name a hako-bench program (./scripts/go sets it)")
	}
	dir := t.TempDir()
	program := filepath.Join(dir, "hako-bench-go")
	if out, err := exec.Command("go", "build", "-o", program, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out.json")
	if err := os.Mkdir(filepath.Join(dir, "shm"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bench, "--transports", "hako,hako-go,go-unix",
		"--patterns", "pingpong,throughput,fanout", "--sizes", "64,1M",
		"--iterations", "200", "--warmup", "20", "--block-ms", "5", "--blocks", "2",
		"--probe-iterations", "100", "--no-footprint", "--no-progress",
		"--shm-dir", filepath.Join(dir, "shm"), "--json", out)
	cmd.Env = append(os.Environ(), "HAKO_BENCH_GO="+program)
	if text, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hako bench: %v\n%s", err, text)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		PingPong []struct {
			Size       int
			Payload    string
			Transports []struct {
				Transport string
				Stats     struct {
					Count    int     `json:"count"`
					MedianNs float64 `json:"median_ns"`
				}
			}
		} `json:"ping_pong"`
		OneWay []struct {
			Transport    string
			Pattern      string
			Size         int
			Skipped      *string
			MessagesPerS float64 `json:"messages_per_s"`
		} `json:"one_way"`
		Targets []struct {
			Goal  string
			Value *float64
		}
	}
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, row := range report.PingPong {
		for _, tr := range row.Transports {
			if tr.Transport == "hako-go" || tr.Transport == "go-unix" {
				seen[tr.Transport]++
				if tr.Stats.Count == 0 || tr.Stats.MedianNs <= 0 {
					t.Errorf("%s %d B %s: no round trips timed", tr.Transport, row.Size, row.Payload)
				}
			}
		}
	}
	for _, name := range []string{"hako-go", "go-unix"} {
		if seen[name] != 4 {
			t.Errorf("%s: %d ping-pong rows, want 4 (2 sizes, 2 payloads)", name, seen[name])
		}
	}
	rates := 0
	for _, row := range report.OneWay {
		if row.Transport != "hako-go" && row.Transport != "go-unix" {
			continue
		}
		switch row.Pattern {
		case "throughput":
			rates++
			if row.Skipped != nil || row.MessagesPerS <= 0 {
				t.Errorf("%s throughput %d B: not measured", row.Transport, row.Size)
			}
		case "fanout":
			if row.Transport == "hako-go" && (row.Skipped == nil || !strings.Contains(*row.Skipped, "ping-pong and throughput only")) {
				t.Errorf("hako-go fan-out %d B: not skipped with the reason", row.Size)
			}
		}
	}
	if rates != 8 {
		t.Errorf("%d Go throughput rows, want 8", rates)
	}
	goals := 0
	for _, g := range report.Targets {
		if strings.Contains(g.Goal, "(hako-go)") {
			goals++
			if g.Value == nil {
				t.Errorf("goal %q has no figure", g.Goal)
			}
		}
	}
	if goals != 3 {
		t.Errorf("%d Go goals judged, want 3", goals)
	}
}

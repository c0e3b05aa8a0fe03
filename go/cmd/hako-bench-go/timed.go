package main

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// clockNs reads clock id (CLOCK_MONOTONIC: 1, the process's CPU clock:
// 2) in ns. A system call, read at the ends of a block only.
func clockNs(id uintptr) uint64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, id, uintptr(unsafe.Pointer(&ts)), 0)
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec)
}

const (
	clockMonotonic  = 1
	clockProcessCPU = 2
)

// cpuTime is the CPU time a process used, as the bench reads its own.
type cpuTime struct{ cpu, user, sys, sleeps uint64 }

func cpuNow() cpuTime {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpuTime{
		cpu:    clockNs(clockProcessCPU),
		user:   uint64(syscall.TimevalToNsec(ru.Utime)),
		sys:    uint64(syscall.TimevalToNsec(ru.Stime)),
		sleeps: uint64(ru.Nvcsw),
	}
}

func (c cpuTime) since(b cpuTime) cpuTime {
	return cpuTime{c.cpu - b.cpu, c.user - b.user, c.sys - b.sys, c.sleeps - b.sleeps}
}

func (c cpuTime) String() string {
	return fmt.Sprintf("%d %d %d %d", c.cpu, c.user, c.sys, c.sleeps)
}

// roundTrips runs warmup (at least one) untimed, then n timed round trips,
// as the bench times its own: the clock is read once per round trip, just
// after the message is sent, while it travels; each sample runs from one
// send to the next, and the last warm-up round trip starts the first.
func roundTrips(sd side, warmup, n uint64) ([]uint64, cpuTime, error) {
	warmup = max(warmup, 1)
	for seq := uint64(1); seq < warmup; seq++ {
		if err := sd.roundTrip(seq, func() {}); err != nil {
			return nil, cpuTime{}, err
		}
	}
	samples := make([]uint64, n)
	base := time.Now()
	var t0 time.Duration
	before := cpuNow()
	if err := sd.roundTrip(warmup, func() { t0 = time.Since(base) }); err != nil {
		return nil, cpuTime{}, err
	}
	for i := range samples {
		s := &samples[i]
		err := sd.roundTrip(warmup+1+uint64(i), func() {
			t1 := time.Since(base)
			*s = uint64(t1 - t0)
			t0 = t1
		})
		if err != nil {
			return nil, cpuTime{}, err
		}
	}
	return samples, cpuNow().since(before), nil
}

// sendRange sends messages 1..warmup untimed, then n timed, one way;
// returns the monotonic time just before the first timed one and the CPU
// time of the timed ones.
func sendRange(sd side, warmup, n uint64) (uint64, cpuTime, error) {
	for seq := uint64(1); seq <= warmup; seq++ {
		if err := sd.send(seq); err != nil {
			return 0, cpuTime{}, err
		}
	}
	before := cpuNow()
	start := clockNs(clockMonotonic)
	for seq := warmup + 1; seq <= warmup+n; seq++ {
		if err := sd.send(seq); err != nil {
			return 0, cpuTime{}, err
		}
	}
	return start, cpuNow().since(before), nil
}

// serveRange answers (or, oneWay, receives) messages 1..warmup untimed,
// then n timed; returns the monotonic time just after the last and the CPU
// time of the timed ones.
func serveRange(sd side, warmup, n uint64, oneWay bool) (uint64, cpuTime, error) {
	one := func(seq uint64) error {
		if oneWay {
			return sd.receive(seq)
		}
		return sd.serve(seq)
	}
	for seq := uint64(1); seq <= warmup; seq++ {
		if err := one(seq); err != nil {
			return 0, cpuTime{}, err
		}
	}
	before := cpuNow()
	for seq := warmup + 1; seq <= warmup+n; seq++ {
		if err := one(seq); err != nil {
			return 0, cpuTime{}, err
		}
	}
	return clockNs(clockMonotonic), cpuNow().since(before), nil
}

// tag is the tag of message seq (its first and last byte), as the bench's.
func tag(seq uint64) byte { return byte(seq % 251) }

// write tags b with t: its first and last byte, or (full) every byte.
func write(b []byte, t byte, full bool) {
	if full {
		// Doubling copies: memmove's speed, not a byte loop's.
		b[0] = t
		for n := 1; n < len(b); n *= 2 {
			copy(b[n:], b[:n])
		}
		return
	}
	b[0] = t
	b[len(b)-1] = t
}

// check checks that b is a whole message of size bytes tagged t, and in
// full mode that its bytes add up to t*size.
func check(b []byte, size int, t byte, full bool, what string) error {
	if len(b) != size || b[0] != t || b[len(b)-1] != t {
		return fmt.Errorf("%s: a message of %d bytes is not a %d-byte one tagged %d", what, len(b), size, t)
	}
	if full {
		if sum := byteSum(b); sum != uint64(t)*uint64(size) {
			return fmt.Errorf("%s: the checksum of %d bytes tagged %d is %d", what, size, t, sum)
		}
	}
	return nil
}

// byteSum adds every byte of b as the bench's own sum does: 8 bytes at a
// time, each 16-bit lane of an accumulator taking two bytes of a word,
// folded every 1 KiB; the words read through one unchecked slice, four
// accumulators so the adds do not wait on each other.
func byteSum(b []byte) uint64 {
	const lanes = 0x00ff00ff00ff00ff
	var total uint64
	blocks := len(b) / 1024
	if blocks > 0 {
		words := unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), blocks*128)
		for k := 0; k < len(words); k += 128 {
			var a0, a1, a2, a3 uint64
			w := words[k : k+128]
			for j := 0; j+3 < len(w); j += 4 {
				a0 += (w[j] & lanes) + ((w[j] >> 8) & lanes)
				a1 += (w[j+1] & lanes) + ((w[j+1] >> 8) & lanes)
				a2 += (w[j+2] & lanes) + ((w[j+2] >> 8) & lanes)
				a3 += (w[j+3] & lanes) + ((w[j+3] >> 8) & lanes)
			}
			for _, acc := range [4]uint64{a0, a1, a2, a3} {
				total += (acc & 0xffff) + ((acc >> 16) & 0xffff) + ((acc >> 32) & 0xffff) + (acc >> 48)
			}
		}
	}
	for _, x := range b[blocks*1024:] {
		total += uint64(x)
	}
	return total
}

package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// unixSide is a side of the "go-unix" transport: Go's own net package, a
// stream socket per follower at <root>/go-unix-<row>-<follower>.sock, each
// message written whole and read with io.ReadFull.
type unixSide struct {
	s         spec
	listeners []*net.UnixListener
	conns     []*net.UnixConn
	buf       []byte
}

func socketPath(s spec, k int) string {
	return filepath.Join(s.root, fmt.Sprintf("go-unix-%d-%d.sock", s.row, k))
}

func newUnixSide(s spec) (side, error) {
	u := &unixSide{s: s, buf: make([]byte, s.size)}
	if s.leader {
		for k := 0; k < s.followers; k++ {
			path := socketPath(s, k)
			os.Remove(path)
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				u.close()
				return nil, err
			}
			u.listeners = append(u.listeners, l)
		}
		return u, nil
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socketPath(s, s.index), Net: "unix"})
	if err != nil {
		return nil, err
	}
	u.conns = append(u.conns, c)
	return u, nil
}

func (u *unixSide) close() error {
	for _, c := range u.conns {
		c.Close()
	}
	for _, l := range u.listeners {
		l.Close()
		os.Remove(l.Addr().String())
	}
	return nil
}

func (u *unixSide) connect() error {
	for _, l := range u.listeners {
		l.SetDeadline(time.Now().Add(peerTimeout))
		c, err := l.AcceptUnix()
		if err != nil {
			return err
		}
		u.conns = append(u.conns, c)
	}
	return nil
}

func (u *unixSide) write(c *net.UnixConn, t byte) error {
	write(u.buf, t, u.s.full)
	_, err := c.Write(u.buf)
	return err
}

func (u *unixSide) read(c *net.UnixConn, t byte, what string) error {
	if _, err := io.ReadFull(c, u.buf); err != nil {
		return fmt.Errorf("reading a %s: %w", what, err)
	}
	return check(u.buf, u.s.size, t, u.s.full, what)
}

func (u *unixSide) roundTrip(seq uint64, sent func()) error {
	t := tag(seq)
	if err := u.write(u.conns[0], t); err != nil {
		return err
	}
	sent()
	return u.read(u.conns[0], t+1, "pong")
}

func (u *unixSide) send(seq uint64) error {
	for _, c := range u.conns {
		if err := u.write(c, tag(seq)); err != nil {
			return err
		}
	}
	return nil
}

func (u *unixSide) serve(seq uint64) error {
	t := tag(seq)
	if err := u.read(u.conns[0], t, "ping"); err != nil {
		return err
	}
	return u.write(u.conns[0], t+1)
}

func (u *unixSide) receive(seq uint64) error { return u.read(u.conns[0], tag(seq), "message") }

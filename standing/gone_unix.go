//go:build unix

package standing

import (
	"errors"
	"net"
	"syscall"
)

// gone says whether the client of conn has closed or reset it, without
// waiting and without taking any byte: one non-blocking peek. A byte to
// read counts as gone too: no client sends on a stream it reads (over TLS,
// whose socket is peeked beneath it, what a client sends is its close_notify).
func gone(conn net.Conn) bool {
	if tc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var (
		perr error
		b    [1]byte
	)
	if err := raw.Read(func(fd uintptr) bool {
		_, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait
	}); err != nil {
		return true
	}
	switch {
	case errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK) || errors.Is(perr, syscall.EINTR):
		return false
	case perr != nil:
		return true
	}
	return true // 0 bytes: the client closed; more: it sent what no stream client sends
}

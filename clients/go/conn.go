// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// dialer makes the client's connections: a net.Dialer whose connections
// hold back an answer that arrives before the request was sent.
type dialer struct {
	net.Dialer
}

func newDialer() *dialer {
	return &dialer{net.Dialer{KeepAlive: 30 * time.Second}}
}

// DialContext dials as net.Dialer does and wraps the connection.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &writeFirstConn{Conn: c, ready: make(chan struct{})}, nil
}

// writeFirstConn hands bytes read before its first write to the reader
// only once that write has begun.
//
// The service's connection cap answers its 503 the moment it accepts,
// before the request is sent. net/http reads a new connection at once,
// and to it an answer that arrives before the request is on its way is
// an "unsolicited response": logged, dropped, and the call fails without
// the 503 that says it may be retried. Held back until the request is
// being written, that 503 becomes the request's answer, as it is. An end
// of stream is not held back, so a connection the server closed while
// idle is still seen and dropped at once.
type writeFirstConn struct {
	net.Conn
	written atomic.Bool
	once    sync.Once
	ready   chan struct{} // closed at the first Write or at Close
}

// Read reads; bytes that arrive before the first Write wait for it, and
// are dropped if the connection is closed first.
func (c *writeFirstConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.written.Load() {
		<-c.ready
		if !c.written.Load() {
			return 0, net.ErrClosed
		}
	}
	return n, err
}

// Write lets bytes read so far through, then writes.
func (c *writeFirstConn) Write(b []byte) (int, error) {
	c.written.Store(true)
	c.once.Do(func() { close(c.ready) })
	return c.Conn.Write(b)
}

// Close closes the connection and ends a Read that waits for a Write.
func (c *writeFirstConn) Close() error {
	c.once.Do(func() { close(c.ready) })
	return c.Conn.Close()
}

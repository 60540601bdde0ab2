// SPDX-License-Identifier: Apache-2.0

package abuseguard

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// readEarly makes a wrapped connection whose peer has sent "503" before
// anything was written, and returns it once the wrapper has read those
// bytes, with the channel its Read's result arrives on.
func readEarly(t *testing.T) (*writeFirstConn, net.Conn, chan error) {
	local, peer := net.Pipe()
	t.Cleanup(func() { local.Close(); peer.Close() })
	c := &writeFirstConn{Conn: local, ready: make(chan struct{})}
	result := make(chan error, 1)
	go func() {
		b := make([]byte, 3)
		n, err := c.Read(b)
		if err == nil && string(b[:n]) != "503" {
			err = errors.New("read " + string(b[:n]))
		}
		result <- err
	}()
	// A pipe's Write returns once a Read took its bytes.
	if _, err := peer.Write([]byte("503")); err != nil {
		t.Fatal(err)
	}
	return c, peer, result
}

func TestEarlyAnswerIsHeldUntilTheRequestIsWritten(t *testing.T) {
	c, peer, result := readEarly(t)
	go io.Copy(io.Discard, peer)
	if _, err := c.Write([]byte("POST / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := <-result; err != nil {
		t.Fatal(err)
	}
}

func TestEarlyAnswerOfAConnectionNeverUsedIsDropped(t *testing.T) {
	c, _, result := readEarly(t)
	c.Close()
	if err := <-result; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("want the closed connection's error, got %v", err)
	}
}

// capListener answers every odd connection as the service's connection
// cap does, at accept, before reading anything; every even one with an
// allowed check.
func capListener(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for n := 1; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn, refuse bool) {
				defer c.Close()
				if refuse {
					io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"+
						"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(capBody))+"\r\n\r\n"+capBody)
					c.(*net.TCPConn).CloseWrite()
					io.Copy(io.Discard, c)
					return
				}
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n"+
					"Content-Length: "+strconv.Itoa(len(allowBody))+"\r\n\r\n"+allowBody)
			}(c, n%2 == 1)
		}
	}()
	return l.Addr().String()
}

// zeroSource makes the backoff's jitter 0, so many retries take no time.
type zeroSource struct{}

func (zeroSource) Int63() int64 { return 0 }
func (zeroSource) Seed(int64)   {}

func TestConnectionCapAnsweredAtAcceptIsRetried(t *testing.T) {
	c := newClient(t, "http://"+capListener(t), Options{Retries: Int(1), Timeout: retryTimeout})
	c.jitter = rand.New(zeroSource{})
	for i := 0; i < 200; i++ {
		v, err := c.CheckLogin(context.Background(), login)
		if err != nil || v.Failed != "" {
			t.Fatalf("call %d: got %+v, %v", i, v, err)
		}
	}
}

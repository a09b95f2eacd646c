// Package freeport hands out 127.0.0.1 TCP ports for servers a test or the
// chaos suite is about to start in another process (or later in this one).
//
// A port is found by listening on port 0 and closing the listener, so it is
// only free "a moment ago". The kernel may give the same port to the next
// listen on port 0 once it is closed: two ports asked for in a row (a node's
// Kafka and admin addresses, or two nodes') could be one, and the second
// server then fails to bind, or, worse, a readiness probe reaches the first
// server's port. Port therefore never returns a port twice in one process.
// Another process can still take a port before its user binds it; that
// window stays, and is small.
package freeport

import (
	"fmt"
	"net"
	"strconv"
	"sync"
)

// maxTries bounds the search for a port not handed out before; the kernel
// picks ports at random from tens of thousands, so a repeat is rare.
const maxTries = 64

var handed struct {
	sync.Mutex
	ports map[int]bool
}

// Port returns a 127.0.0.1 TCP port that was free a moment ago and that
// this process has not been given before.
func Port() (int, error) {
	handed.Lock()
	defer handed.Unlock()
	if handed.ports == nil {
		handed.ports = make(map[int]bool)
	}
	for range maxTries {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("freeport: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !handed.ports[port] {
			handed.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("freeport: no port not handed out before in %d tries", maxTries)
}

// Addr is Port as a "127.0.0.1:port" address.
func Addr() (string, error) {
	port, err := Port()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

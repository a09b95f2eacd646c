// Package freeport hands out 127.0.0.1 TCP ports for servers a test or the
// chaos suite is about to start in another process (or later in this one).
//
// A port is only free "a moment ago": between Port and its user's bind,
// anything that asks the kernel for a port may take it. Two things ask all
// the time: a listen on port 0 (an in-process server or proxy of a test)
// and every outgoing connection, whose source port comes from the same
// ephemeral range (net.ipv4.ip_local_port_range). A port picked by
// listening on port 0 lies in that range, so a client connecting elsewhere
// could take it as its source port before the server binds it (seen: a
// NATS proxy on port 0 given a node's admin port). Port therefore picks
// ports below the ephemeral range, where the kernel hands out nothing on its
// own, at random (test binaries of several packages run at once), checks
// each is bindable, and never returns a port twice in one process. Where
// the ephemeral range leaves no room below it, it falls back to port 0.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// maxTries bounds the search for a bindable port not handed out before.
const maxTries = 256

// lowest is the first port Port picks from: above the well-known and the
// commonly registered service ports a developer's machine may run.
const lowest = 10000

var handed struct {
	sync.Mutex
	ports map[int]bool
}

// Port returns a 127.0.0.1 TCP port that was free a moment ago, outside the
// kernel's ephemeral range where it can, and that this process has not been
// given before.
func Port() (int, error) {
	handed.Lock()
	defer handed.Unlock()
	if handed.ports == nil {
		handed.ports = make(map[int]bool)
	}
	if hi := ephemeralLow(); hi-lowest >= 1000 {
		for range maxTries {
			port := lowest + rand.IntN(hi-lowest)
			if handed.ports[port] || !bindable(port) {
				continue
			}
			handed.ports[port] = true
			return port, nil
		}
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

// bindable reports whether a listener can bind 127.0.0.1:port now.
func bindable(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// when it cannot be read (not Linux).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

// Addr is Port as a "127.0.0.1:port" address.
func Addr() (string, error) {
	port, err := Port()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

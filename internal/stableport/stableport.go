// Package stableport picks loopback TCP ports that stay free while their
// owner is down: ports below the kernel's ephemeral range.
//
// A listener restarted on the port it had before (a fake backend's
// respawn, a container's published port after a partition) fails when the
// port was taken meanwhile. A port from the ephemeral range is handed out
// by the kernel to any outgoing connection or :0 listener on the machine,
// and under load one was seen taken between a kill and the restart
// ("address already in use"). Ports below the range are never handed out
// by the kernel, only bound by name.
package stableport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
)

// floor is the lowest port picked: below it live well-known services.
const floor = 10000

// Pick returns a port on 127.0.0.1 that was free a moment ago, below the
// ephemeral range when the range leaves room, else any free port.
func Pick() (int, error) {
	if lo := ephemeralLow(); lo-floor >= 1000 {
		for range 64 {
			p := floor + rand.IntN(lo-floor)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				_ = ln.Close()
				return p, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("stableport: no free port on 127.0.0.1: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux
// /proc/sys/net/ipv4/ip_local_port_range; 32768 elsewhere).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil && lo > 0 {
			return lo
		}
	}
	return 32768
}

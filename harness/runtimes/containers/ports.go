package containers

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// publishPort picks a free 127.0.0.1 port to publish a container port on,
// outside the kernel's ephemeral range. Docker releases a published port
// while its container is disconnected from the network (a partition) and
// binds it again on reconnect; a port from the ephemeral range was seen
// taken meanwhile (an outgoing connection's local port, or another
// listener on :0), and the reconnect failed with "port is already
// allocated". Ports below the range are never handed out by the kernel.
// Falls back to any free port when none is found.
func publishPort() (int, error) {
	lo := ephemeralLow()
	const floor = 10000
	if lo-floor >= 1000 {
		for range 64 {
			p := floor + rand.IntN(lo-floor)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				_ = ln.Close()
				return p, nil
			}
		}
	}
	return targets.FreePort()
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

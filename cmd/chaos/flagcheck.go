package main

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"
)

// Bounds of the lease flags of chaos backend and chaos proxy: a lease
// shorter than a second expires before a controller can renew it; one
// longer than a day is no lease (a fault left behind by a dead controller
// should not outlive the day).
const (
	minLeaseTTL = time.Second
	maxLeaseTTL = 24 * time.Hour
)

// checkLease refuses lease flags outside [1s, 24h] or a lease longer than
// the longest one a controller may ask for (exit 2).
func checkLease(cmd string, lease, maxLease time.Duration) error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"lease-ttl", lease}, {"max-lease-ttl", maxLease}} {
		if f.d < minLeaseTTL || f.d > maxLeaseTTL {
			return usageError(fmt.Errorf("%s: --%s %s: want %s to %s", cmd, f.name, f.d, minLeaseTTL, maxLeaseTTL))
		}
	}
	if lease > maxLease {
		return usageError(fmt.Errorf("%s: --lease-ttl %s, --max-lease-ttl %s: want 0 < lease-ttl <= max-lease-ttl", cmd, lease, maxLease))
	}
	return nil
}

// checkListenAddr refuses a listen address that is not HOST:PORT with a
// port in 0..65535 (exit 2), before anything starts.
func checkListenAddr(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			err = fmt.Errorf("port %q: want 0 to 65535", port)
		}
	}
	if err != nil {
		return usageError(fmt.Errorf("--%s %q: want HOST:PORT, such as 127.0.0.1:4483 (%v)", flag, addr, err))
	}
	return nil
}

// checkUpstreamURL refuses a URL to connect to that is not http(s) with a
// host and, when it names a port, a port in 1..65535 (exit 2).
func checkUpstreamURL(flag, raw string) error {
	if err := checkHTTPURL(flag, raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return usageError(fmt.Errorf("--%s %q: port %s: want 1 to 65535", flag, raw, p))
		}
	}
	return nil
}

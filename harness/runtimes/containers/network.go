package containers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// netState is a topology's private network: a bridge with its own /24
// subnet (so a container can be reconnected on a chosen address), removed
// when its last container is.
type netState struct {
	id, name string
	subnet   netip.Prefix
	next     netip.Addr // the next address handed out by newIP
	refs     int
}

// netHolder creates the network on first use and removes it after the
// last release.
type netHolder struct {
	mu sync.Mutex
	n  *netState
}

// acquire returns the network, creating it when there is none.
func (h *netHolder) acquire(ctx context.Context, e *Engine) (*netState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		n, err := e.createNetwork(ctx)
		if err != nil {
			return nil, err
		}
		h.n = n
	}
	h.n.refs++
	return h.n, nil
}

// release drops one reference; the last removes the network.
func (h *netHolder) release(ctx context.Context, e *Engine) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		return nil
	}
	h.n.refs--
	if h.n.refs > 0 {
		return nil
	}
	n := h.n
	h.n = nil
	if _, err := e.cli.NetworkRemove(ctx, n.id, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
		return fmt.Errorf("containers: remove network %s: %w", n.name, err)
	}
	return nil
}

// newIP hands out an address of the subnet no container was given yet
// (from .200 up; Docker's IPAM hands out from .2).
func (h *netHolder) newIP() (netip.Addr, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		return netip.Addr{}, fmt.Errorf("containers: no network")
	}
	ip := h.n.next
	if !h.n.subnet.Contains(ip.Next()) {
		return netip.Addr{}, fmt.Errorf("containers: subnet %s exhausted", h.n.subnet)
	}
	h.n.next = ip.Next()
	return ip, nil
}

// createNetwork creates a labelled bridge network on a random
// 10.x.y.0/24 (retried when it overlaps another network).
func (e *Engine) createNetwork(ctx context.Context) (*netState, error) {
	name := fmt.Sprintf("vmcp-chaos-%s-%d", e.runID, e.netSeq.Add(1))
	var lastErr error
	for range 8 {
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + rand.IntN(150)), byte(rand.IntN(256)), 0}), 24)
		gw := subnet.Addr().Next()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("containers: create network %s: %w", name, err)
		}
		// Never cancelled mid-flight: the engine may still create a network
		// whose request was cancelled, after the run's cleanup listed what
		// to remove (an interrupted run left one). Created, it is found.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		res, err := e.cli.NetworkCreate(cctx, name, client.NetworkCreateOptions{
			Driver: "bridge", Labels: e.labels(),
			IPAM: &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: subnet, Gateway: gw}}},
		})
		cancel()
		if err != nil {
			lastErr = err
			if strings.Contains(err.Error(), "overlap") {
				continue
			}
			return nil, fmt.Errorf("containers: create network %s: %w", name, err)
		}
		a := subnet.Addr().As4()
		a[3] = 200
		return &netState{id: res.ID, name: name, subnet: subnet, next: netip.AddrFrom4(a)}, nil
	}
	return nil, fmt.Errorf("containers: create network %s: %w", name, lastErr)
}

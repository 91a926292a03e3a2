// Package access decides who may reach the gateway: the listen address
// an anonymous gateway may bind (CheckListen), the bearer token of the MCP
// endpoint (RequireToken) and who may read the admin endpoints
// (RequireAdmin).
package access

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// ErrExposed is wrapped by CheckListen's error when it refuses to serve an
// anonymous gateway on a non-loopback address.
var ErrExposed = fmt.Errorf("anonymous gateway on a non-loopback address")

// CheckListen refuses to listen on a non-loopback address with
// incomingAuth anonymous, unless incomingAuth.allowNetwork says so: such a
// gateway serves every backend's tools to anyone who can reach the host.
// It decides before binding. A host name counts as loopback only when every
// address it resolves to is loopback.
func CheckListen(ctx context.Context, auth config.IncomingAuth, addr string) error {
	if auth.Type != config.AuthAnonymous || auth.AllowNetwork {
		return nil
	}
	loopback, err := isLoopbackAddr(ctx, addr)
	if err != nil {
		return fmt.Errorf("vmcp: listen %q: %w", addr, err)
	}
	if loopback {
		return nil
	}
	return fmt.Errorf("vmcp: refusing to listen on %q: %w (incomingAuth.type anonymous): anyone who can reach this host "+
		"could call every backend's tools. Listen on 127.0.0.1, or require a token with "+
		"`incomingAuth: {type: bearer, tokenEnv: VMCP_TOKEN}`, or, to expose it without authentication on purpose, "+
		"set `incomingAuth: {type: anonymous, allowNetwork: true}`", addr, ErrExposed)
}

// isLoopbackAddr reports whether a listen address (host:port) binds only
// loopback interfaces. An empty host or an unspecified address (0.0.0.0,
// ::) binds all of them.
func isLoopbackAddr(ctx context.Context, addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "" {
		return false, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback(), nil
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return false, err
	}
	return len(ips) > 0 && !slices.ContainsFunc(ips, func(ip net.IPAddr) bool { return !ip.IP.IsLoopback() }), nil
}

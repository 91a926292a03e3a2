// Package access decides who may reach the gateway: the listen address
// (CheckListen), the MCP endpoint (RequireToken), the admin endpoints (RequireAdmin).
package access

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
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

// RequireToken enforces auth on next: with bearer auth, a request without
// the token gets 401; anonymous lets every request through.
func RequireToken(auth config.IncomingAuth, next http.Handler) http.Handler {
	if auth.Type != config.AuthBearer {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || auth.Token == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(auth.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vmcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RequireAdmin allows the admin endpoints to loopback clients, or, with
// bearer auth configured, to holders of the token.
func RequireAdmin(auth config.IncomingAuth, next http.Handler) http.Handler {
	if auth.Type == config.AuthBearer {
		return RequireToken(auth, next)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			http.Error(w, "admin endpoints are served to loopback clients only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

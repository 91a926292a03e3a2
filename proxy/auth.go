package proxy

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"

	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// checkListenAddr refuses a non-loopback MCP address without a token: the
// proxy relays whoever reaches it to the real backend behind it.
func checkListenAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("proxy: --listen %q: %w", addr, err)
	}
	if !control.IsLoopback(host) && token == "" {
		return fmt.Errorf("proxy: MCP listener on non-loopback address %q needs a token (--token-file FILE or $VMCP_CHAOS_TOKEN)", addr)
	}
	return nil
}

// requireProxyToken serves next only for requests that carry the proxy's
// token, as "Proxy-Authorization: Bearer token" (so the client's own
// Authorization still goes upstream) or as "Authorization: Bearer token";
// the header that carried it is removed before the request is relayed.
// An empty token lets every request through.
func requireProxyToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range []string{"Proxy-Authorization", "Authorization"} {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get(h)), want) == 1 {
				r.Header.Del(h)
				next.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="chaos-proxy"`)
		control.WriteError(w, http.StatusUnauthorized, fmt.Errorf("missing or wrong proxy token (Proxy-Authorization: Bearer TOKEN)"))
	})
}

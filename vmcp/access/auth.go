package access

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// RequireToken enforces auth on next: with bearer auth, a request without
// the token gets 401; anonymous lets every request through.
func RequireToken(auth config.IncomingAuth, next http.Handler) http.Handler {
	if auth.Type != config.AuthBearer {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearerOK(auth, r) {
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
		if !isLoopback(r.RemoteAddr) {
			http.Error(w, "admin endpoints are served to loopback clients only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearerOK(auth config.IncomingAuth, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && auth.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(auth.Token)) == 1
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package backend

import (
	"maps"
	"sort"
)

// StdioEnvAllowlist names the variables of the gateway's own environment a
// stdio backend inherits; everything else (the bearer token's variable,
// cloud credentials…) it gets only when the backend's `env:` sets it.
var StdioEnvAllowlist = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// stdioEnv is a stdio backend's whole environment: the allowlisted
// variables of the gateway's environment, then the configured ones (which
// win), sorted.
func stdioEnv(configured map[string]string, lookup func(string) (string, bool)) []string {
	vars := map[string]string{}
	for _, k := range StdioEnvAllowlist {
		if v, ok := lookup(k); ok {
			vars[k] = v
		}
	}
	maps.Copy(vars, configured)
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

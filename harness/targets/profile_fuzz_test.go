package targets

import (
	"errors"
	"slices"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/internal/fuzzseed"
)

// FuzzParseProfile: the target profile decoder never panics; every error
// is a *ProfileError naming the file; an accepted profile has a name and a
// command, capabilities that parse, and value maps within our vocabulary.
func FuzzParseProfile(f *testing.F) {
	// The shipped profiles cut into seeds of one field each, under 256
	// bytes (fuzzseed): from the whole 1-3 kB files, plain go test -fuzz
	// minimized its first new input for the whole minute.
	for _, glob := range []string{"../../profiles/*.yaml", "../../scenarios/testdata/profiles/*.yaml"} {
		for _, seed := range fuzzseed.Glob(glob, nil, "name", "command") {
			f.Add(seed)
		}
	}
	const ok = "name: gw\ncommand: [gw, serve]\n"
	for _, s := range []string{
		ok + "healthAPI:\n  statusValues: {up: teleported}\n",
		ok + "healthAPI:\n  circuitValues: {up: sideways}\n",
		ok + "sessionAPI:\n  path: /s/{{.SessionID}}\n  statusValues: {ok: connected}\n",
		ok + "ready: {timeout: -1s}\n", ok + "capabilities: [health-api, 'a,b']\n",
		"name: &a [*a]\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(data, "p.yaml")
		if err != nil {
			var pe *ProfileError
			if !errors.As(err, &pe) || pe.File != "p.yaml" || pe.Msg == "" {
				t.Fatalf("error %q (%T) is not a *ProfileError naming p.yaml", err, err)
			}
			return
		}
		if p.Name == "" || len(p.Command) == 0 {
			t.Fatalf("accepted without a name or command: %+v", p)
		}
		if _, err := p.Caps(); err != nil {
			t.Fatalf("accepted, but Caps fails: %v", err)
		}
		for _, a := range []struct {
			api   *ProfileStateAPI
			words []string
		}{{p.HealthAPI, HealthStateWords}, {p.SessionAPI, SessionStateWords}} {
			if a.api == nil {
				continue
			}
			for _, to := range a.api.StatusValues {
				if !slices.Contains(a.words, to) {
					t.Fatalf("accepted status value %q outside %v", to, a.words)
				}
			}
			for _, to := range a.api.CircuitValues {
				if !slices.Contains(CircuitStateWords, to) {
					t.Fatalf("accepted circuit value %q", to)
				}
			}
		}
	})
}

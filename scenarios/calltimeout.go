package scenarios

// CallTimeoutChecks are the checks of s that a gateway enforcing no call
// timeout fails (its backend calls bounded at an hour, otherwise
// correct), in the order they are judged: every check that a stalled
// call fails within the call timeout, and with them those that the error
// of a call only the client's deadline ended names the backend or is
// recorded as the session's error. Pinned from runs of fixture-b-broken
// (testdata/profiles): TestFixtureGateways runs it and fails unless it
// fails exactly these (the first variant of each group;
// VMCP_CHAOS_FIXTURES_FULL=1 every variant). None for the other groups,
// and none pinned for the container scenarios (a fixture gateway does not
// run in a container): CallTimeoutPinned says which are.
func CallTimeoutChecks(s Scenario) []string {
	var out []string
	switch s.Group {
	case LabelWrapping:
		for _, m := range []string{"tools/call", "resources/read", "prompts/get"} {
			out = append(out, "timeout: "+m+" names beta", "timeout: "+m+" fails within call timeout + 1 s")
		}
	case LabelHang:
		for _, stall := range []string{"stall_before_headers", "stall_after_headers", "stall_after_progress", "stall_mid_body"} {
			out = append(out, stall+": fails within call timeout + 1 s")
		}
	case "hang-pause":
		out = append(out, "the call in flight at the SIGSTOP fails within call timeout + 1 s",
			"the next call to the stopped backend fails within call timeout + 1 s")
	case LabelSession:
		out = append(out, "timeout: the call fails", "timeout: the session reports beta error with its lastError", "the stalled call fails")
	}
	return out
}

// CallTimeoutPinned reports whether CallTimeoutChecks(s) was pinned from
// a run (every scenario but the container ones).
func CallTimeoutPinned(s Scenario) bool { return !s.HasLabel(LabelContainer) }

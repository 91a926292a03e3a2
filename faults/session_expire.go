package faults

// KindSessionExpire forgets the sessions: with a match, when a matching
// request arrives (which is then served); without one, once, on schedule.
const KindSessionExpire Kind = "session_expire"

// SessionExpire are the parameters of session_expire: none.
type SessionExpire struct{}

func init() {
	Register(Spec{Kind: KindSessionExpire, Order: 80, New: func() Params { return &SessionExpire{} }})
}

// Validate implements Params.
func (*SessionExpire) Validate(*Check) error { return nil }

// ScheduleOnly implements Params: without a match the expiry happens once, on schedule.
func (*SessionExpire) ScheduleOnly(f *Fault) bool { return f.Match == (Match{}) }

// HTTP implements Params: the request is served after the expiry.
func (*SessionExpire) HTTP(x *Exchange) bool {
	if x.ExpireSessions != nil {
		x.ExpireSessions()
	}
	return true
}

// Stdio implements Params.
func (*SessionExpire) Stdio(x *StdioExchange) { x.Forward() }

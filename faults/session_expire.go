package faults

// KindSessionExpire forgets the sessions: with a match, when a matching
// request arrives (which is then served); without one, once, on schedule.
const KindSessionExpire Kind = "session_expire"

func init() {
	Register(Spec{
		Kind:         KindSessionExpire,
		Order:        80,
		Validate:     func(*Fault, *Check) error { return nil },
		ScheduleOnly: func(f *Fault) bool { return f.Match == (Match{}) },
		HTTP: func(x *Exchange, f *Fault) bool {
			if x.ExpireSessions != nil {
				x.ExpireSessions()
			}
			return true
		},
		Stdio: func(x *StdioExchange, f *Fault) { x.Forward() },
	})
}

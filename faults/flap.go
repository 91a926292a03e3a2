package faults

import "time"

// KindFlap switches its nested fault on for `on`, off for `off`, repeating.
const KindFlap Kind = "flap"

// flapOnlyFields are the schedule fields a flap's nested fault leaves to the flap.
var flapOnlyFields = []string{"after", "count", "probability", "seed", "at", "for"}

func init() {
	Register(Spec{
		Kind:   KindFlap,
		Order:  90,
		Params: []string{"on", "off", "fault"},
		Validate: func(f *Fault, c *Check) error {
			if f.On <= 0 {
				return c.Errf("on", "required: a positive duration")
			}
			if f.Off <= 0 {
				return c.Errf("off", "required: a positive duration")
			}
			if f.Fault == nil {
				return c.Errf("fault", "required: the fault to switch on and off")
			}
			if f.Fault.Kind == KindFlap {
				return c.Errf("fault.kind", "a flap cannot contain another flap")
			}
			if p := setField(f.Fault, flapOnlyFields); p != "" {
				return c.Errf("fault."+p, "%s belongs on the flap, not on its nested fault (the flap's schedule applies)", p)
			}
			if ScheduleOnly(f.Fault) && f.Fault.Kind == KindCrash {
				if p := setField(f, matchFields); p != "" {
					return c.Errf(p, "a flap of mode down takes no %s (down is schedule-only)", p)
				}
			}
			return c.Nested(f.Fault, "fault")
		},
		Describe: func(f *Fault) string {
			if f.Fault == nil {
				return string(KindFlap)
			}
			return string(KindFlap) + " " + string(f.Fault.Kind)
		},
		Phase: func(f *Fault, elapsed time.Duration) bool {
			period := f.On.D() + f.Off.D()
			return period > 0 && elapsed%period < f.On.D()
		},
		Stdio: func(x *StdioExchange, f *Fault) { x.Forward() }, // the nested fault acts
	})
}

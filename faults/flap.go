package faults

import "time"

// KindFlap switches its nested fault on for `on`, off for `off`, repeating.
const KindFlap Kind = "flap"

// flapOnlyFields are the schedule fields a flap's nested fault leaves to the flap.
var flapOnlyFields = []string{"after", "count", "probability", "seed", "at", "for"}

// Flap are the parameters of flap.
type Flap struct {
	On    Duration `yaml:"on,omitempty" json:"on,omitempty"`
	Off   Duration `yaml:"off,omitempty" json:"off,omitempty"`
	Fault *Fault   `yaml:"fault,omitempty" json:"fault,omitempty"` // the fault switched on and off
}

func init() {
	Register(Spec{Kind: KindFlap, Order: 90, New: func() Params { return &Flap{} }})
}

// Validate implements Params.
func (p *Flap) Validate(c *Check) error {
	if p.On <= 0 {
		return c.Errf("on", "required: a positive duration")
	}
	if p.Off <= 0 {
		return c.Errf("off", "required: a positive duration")
	}
	if p.Fault == nil {
		return c.Errf("fault", "required: the fault to switch on and off")
	}
	if p.Fault.Kind == KindFlap {
		return c.Errf("fault.kind", "a flap cannot contain another flap")
	}
	if f := setField(p.Fault, flapOnlyFields); f != "" {
		return c.Errf("fault."+f, "%s belongs on the flap, not on its nested fault (the flap's schedule applies)", f)
	}
	if ScheduleOnly(p.Fault) && p.Fault.Kind == KindCrash {
		if f := setField(c.Fault, matchFields); f != "" {
			return c.Errf(f, "a flap of mode down takes no %s (down is schedule-only)", f)
		}
	}
	return c.Nested(p.Fault, "fault")
}

// Describe implements Params.
func (p *Flap) Describe() string {
	if p.Fault == nil {
		return string(KindFlap)
	}
	return string(KindFlap) + " " + string(p.Fault.Kind)
}

// Phase implements Params: on for On, off for Off, repeating.
func (p *Flap) Phase(elapsed time.Duration) bool {
	period := p.On.D() + p.Off.D()
	return period > 0 && elapsed%period < p.On.D()
}

// Nested implements Params: the nested fault acts while the flap is on.
func (p *Flap) Nested() *Fault { return p.Fault }

// Stdio implements Params (the nested fault acts).
func (p *Flap) Stdio(x *StdioExchange) { x.Forward() }

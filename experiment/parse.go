package experiment

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// Load reads and parses an experiment file (see Parse).
func Load(path string, params map[string]string) (*Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path, params)
}

// Parse decodes an experiment strictly (unknown keys, duplicate keys,
// wrong types and bad durations are errors), substitutes its parameters
// (params override the file's; a name the file does not declare is an
// error), applies defaults and validates it. Every error is an *Error
// "file:line: field: message".
func Parse(data []byte, file string, params map[string]string) (*Experiment, error) {
	var e Experiment
	d, err := decodeStrict(data, file, &e)
	if err != nil {
		return nil, err
	}
	v := &validator{file: file, lineOf: d.lineOf}
	if err := v.substitute(&e, params); err != nil {
		return nil, err
	}
	e.applyDefaults()
	if err := v.experiment(&e); err != nil {
		return nil, err
	}
	return &e, nil
}

var paramRE = regexp.MustCompile(`\$\{([^}]*)\}`)
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// substitute replaces ${name} in every string of e (parameters, then
// overrides).
func (v *validator) substitute(e *Experiment, overrides map[string]string) error {
	params := map[string]string{}
	for k, val := range e.Parameters {
		if !nameRE.MatchString(k) {
			return v.errf("parameters."+k, "parameter name %q: use letters, digits, _ . -", k)
		}
		if paramRE.MatchString(val) {
			return v.errf("parameters."+k, "a parameter's value may not refer to parameters (%q)", val)
		}
		params[k] = val
	}
	names := make([]string, 0, len(overrides))
	for k := range overrides {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := params[k]; !ok {
			return &Error{File: v.file, Field: "--param " + k, Msg: fmt.Sprintf("the experiment has no parameter %q (it has %s)", k, listOr(keys(params), "none"))}
		}
		params[k] = overrides[k]
	}
	e.Parameters = params
	var walkErr error
	var walk func(rv reflect.Value, field string)
	walk = func(rv reflect.Value, field string) {
		if walkErr != nil {
			return
		}
		switch rv.Kind() {
		case reflect.String:
			s, err := expand(rv.String(), params)
			if err != nil {
				walkErr = v.errf(field, "%v", err)
				return
			}
			rv.SetString(s)
		case reflect.Pointer:
			if !rv.IsNil() {
				walk(rv.Elem(), field)
			}
		case reflect.Interface:
			if rv.IsNil() {
				return
			}
			c := reflect.New(rv.Elem().Type()).Elem()
			c.Set(rv.Elem())
			walk(c, field)
			rv.Set(c)
		case reflect.Slice:
			for i := 0; i < rv.Len(); i++ {
				walk(rv.Index(i), fmt.Sprintf("%s[%d]", field, i))
			}
		case reflect.Map:
			for _, k := range rv.MapKeys() {
				c := reflect.New(rv.Type().Elem()).Elem()
				c.Set(rv.MapIndex(k))
				walk(c, join(field, fmt.Sprint(k.Interface())))
				rv.SetMapIndex(k, c)
			}
		case reflect.Struct:
			for i := 0; i < rv.NumField(); i++ {
				tag := strings.Split(rv.Type().Field(i).Tag.Get("yaml"), ",")[0]
				if tag == "-" || tag == "parameters" {
					continue
				}
				walk(rv.Field(i), join(field, tag))
			}
		}
	}
	walk(reflect.ValueOf(e).Elem(), "")
	return walkErr
}

func expand(s string, params map[string]string) (string, error) {
	var err error
	out := paramRE.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		val, ok := params[name]
		if !ok && err == nil {
			err = fmt.Errorf("unknown parameter ${%s} (declared: %s)", name, listOr(keys(params), "none"))
		}
		return val
	})
	return out, err
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

// applyDefaults fills in what the file left out.
func (e *Experiment) applyDefaults() {
	if e.Deployment.Protocol == "" {
		e.Deployment.Protocol = "legacy"
	}
	if h := e.Deployment.Health; h != nil && len(h.Healthy) == 0 {
		h.Healthy = []string{"healthy", "degraded"}
	}
	s := &e.Safeguards
	if s.MaxDuration == 0 {
		s.MaxDuration = DefaultMaxDuration
	}
	if s.LeaseTTL == 0 {
		s.LeaseTTL = DefaultLeaseTTL
	}
	if s.CallTimeout == 0 {
		s.CallTimeout = DefaultCallTimeout
	}
	fix := func(p *Probe) {
		if p.Timeout == 0 {
			p.Timeout = s.CallTimeout
		}
		if p.Tolerance.Samples == 0 {
			p.Tolerance.Samples = 1
		}
		if p.Tolerance.RetryEvery == 0 {
			p.Tolerance.RetryEvery = DefaultRetryEvery
		}
		if p.Type == ProbeCallTool {
			if p.Expect == nil {
				p.Expect = &Expect{}
			}
			if p.Expect.Outcome == "" {
				p.Expect.Outcome = OutcomeOK
				if p.Expect.Names != "" {
					p.Expect.Outcome = OutcomeError
				}
			}
		}
	}
	for i := range e.SteadyState.Probes {
		fix(&e.SteadyState.Probes[i])
	}
	for i := range e.Method {
		if e.Method[i].Probe != nil {
			fix(e.Method[i].Probe)
		}
	}
}

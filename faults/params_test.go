package faults_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// sampleValues is one well-typed YAML value per kind parameter. A
// parameter added to a kind without a sample fails TestEveryParamHasOwners.
var sampleValues = map[string]string{
	"mode": "eof", "exit": "true", "exitCode": "3", "stage": "before_headers", "status": "503",
	"body": "{text: x}", "headers": "{X-A: b}", "progress": "2", "delay": "10ms", "jitter": "5ms",
	"code": "-32000", "message": "m", "text": "t", "variant": "wrong_id", "size": "10",
	"on": "1s", "off": "1s", "fault": "{kind: latency, delay: 1ms}",
}

// parse decodes and validates a fault list as scripts and the control API do.
func parse(src, file string) error {
	var doc struct {
		Faults []faults.Fault `yaml:"faults"`
	}
	d, err := strictyaml.Decode([]byte(src), file, "faults", &doc)
	if err != nil {
		return err
	}
	v := faults.Validator{File: file, LineOf: d.LineOf}
	for i := range doc.Faults {
		doc.Faults[i].ApplyDefaults()
		if err := v.Validate(&doc.Faults[i], fmt.Sprintf("faults[%d]", i), ""); err != nil {
			return err
		}
	}
	return nil
}

// TestEveryParamHasOwners: each parameter is accepted on exactly the kinds
// whose parameters struct declares it: on any other kind it is refused as
// file:line: field, naming what the kind takes.
func TestEveryParamHasOwners(t *testing.T) {
	for _, p := range faults.ParamNames() {
		if _, ok := sampleValues[p]; !ok {
			t.Errorf("parameter %q has no sample value in this test", p)
		}
	}
	for p := range sampleValues {
		if !slices.Contains(faults.ParamNames(), p) {
			t.Errorf("sample parameter %q belongs to no kind", p)
		}
	}
	for _, k := range faults.Kinds() {
		spec, _ := faults.Lookup(k)
		for _, p := range faults.ParamNames() {
			src := fmt.Sprintf("faults:\n  - kind: %s\n    %s: %s\n", k, p, sampleValues[p])
			err := parse(src, "p.yaml")
			owned := slices.Contains(faults.ParamsOf(spec), p)
			var se *strictyaml.Error
			refused := err != nil && strings.Contains(err.Error(), "does not apply to kind")
			switch {
			case owned && refused:
				t.Errorf("kind %s refuses its own parameter %s: %v", k, p, err)
			case !owned && !refused:
				t.Errorf("kind %s accepts parameter %s it does not use (err %v)", k, p, err)
			case !owned && (!errors.As(err, &se) || se.File != "p.yaml" || se.Line != 3 || se.Field != "faults[0]."+p):
				t.Errorf("kind %s, param %s: error %q is not located at p.yaml:3: faults[0].%s", k, p, err, p)
			}
		}
	}
}

func TestUnknownKindListsRegisteredKinds(t *testing.T) {
	err := parse("faults:\n  - kind: sideways\n", "k.yaml")
	if err == nil || !strings.HasPrefix(err.Error(), `k.yaml:2: faults[0].kind: unknown fault kind "sideways" (want crash, http_status, stall`) ||
		!strings.Contains(err.Error(), "truncate") {
		t.Fatalf("err = %v", err)
	}
}

func TestTruncateBounds(t *testing.T) {
	for src, want := range map[string]string{
		"faults:\n  - kind: truncate\n":                          "t.yaml:2: faults[0].size: required",
		"faults:\n  - kind: truncate\n    size: 2GiB\n":          "t.yaml:3: faults[0].size: required: the bytes of the answer to send, in 1B..1GiB",
		"faults:\n  - kind: truncate\n    size: 8589934592GiB\n": "t.yaml:3: faults[0].size: size \"8589934592GiB\" out of range (want 0..1TiB)",
		"faults:\n  - kind: truncate\n    size: 9000000000GB\n":  "t.yaml:3: faults[0].size: size \"9000000000GB\" out of range (want 0..1TiB)",
		"faults:\n  - kind: truncate\n    size: -1\n":            "t.yaml:3: faults[0].size: negative size -1",
	} {
		if err := parse(src, "t.yaml"); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: err = %v, want prefix %q", src, err, want)
		}
	}
	if err := parse("faults:\n  - kind: truncate\n    size: 4KiB\n", "t.yaml"); err != nil {
		t.Errorf("valid truncate refused: %v", err)
	}
	var f faults.Fault = faults.Fault{Kind: faults.KindTruncate, Params: &faults.Truncate{Size: 10}}
	if err := (faults.Validator{}).Validate(&f, "", faults.TransportStdio); err == nil || !strings.Contains(err.Error(), "does not apply to stdio") {
		t.Errorf("truncate on stdio: %v", err)
	}
	if err := (faults.Validator{}).Validate(&f, "", faults.TransportSSE); err == nil || !strings.Contains(err.Error(), "truncated_sse") {
		t.Errorf("truncate on sse: %v", err)
	}
}

// TestParamsOfAnotherKindRefused: a Go fault whose Params are another
// kind's struct is refused naming the kind, and a kind's Params left nil
// validate as its defaults.
func TestParamsOfAnotherKindRefused(t *testing.T) {
	f := faults.Fault{Kind: faults.KindLatency, Params: &faults.HTTPStatus{Status: 500}}
	err := (faults.Validator{File: "go"}).Validate(&f, "faults[0]", "")
	if err == nil || !strings.Contains(err.Error(), "faults[0].kind: parameters *faults.HTTPStatus do not belong to kind latency") {
		t.Errorf("err = %v", err)
	}
	stall := faults.Fault{Kind: faults.KindStall}
	if err := (faults.Validator{}).Validate(&stall, "", faults.TransportStdio); err != nil {
		t.Errorf("stall with nil Params: %v", err)
	}
	stall.ApplyDefaults()
	if p, ok := stall.Params.(*faults.Stall); !ok || p.Stage != faults.StageBeforeHeaders {
		t.Errorf("defaults: %+v", stall.Params)
	}
}

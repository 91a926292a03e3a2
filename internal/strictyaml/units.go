package strictyaml

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as a Go duration string ("250ms";
// the integer 0 is accepted). Decoding refuses negative values, overflow
// and values above MaxDuration. Fields of type time.Duration decode the
// same way.
type Duration time.Duration

// MaxDuration is the longest Duration accepted (30 days).
const MaxDuration = 30 * 24 * time.Hour

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Size is a byte count written as an integer or with a unit: B, KB, MB, GB
// (powers of 1000) or KiB, MiB, GiB (powers of 1024), e.g. "2MiB" or
// "1 GiB". Decoding refuses negative values, overflow and values above
// MaxSize.
type Size int64

// MaxSize is the largest Size accepted (1 TiB).
const MaxSize Size = 1 << 40

// String returns the Go duration string ("250ms").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes the duration as a Go duration string ("250ms").
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads a duration (see Duration).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	return NewDecoder("").Value(n, reflectOf(d), "")
}

// MarshalJSON writes the duration as a JSON string ("250ms").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string or the number 0.
func (d *Duration) UnmarshalJSON(b []byte) error { return UnmarshalBytes(b, d) }

// MarshalYAML writes the size as an integer byte count.
func (s Size) MarshalYAML() (any, error) { return int64(s), nil }

// UnmarshalYAML reads a size (see Size).
func (s *Size) UnmarshalYAML(n *yaml.Node) error { return NewDecoder("").Value(n, reflectOf(s), "") }

// MarshalJSON writes the size as a JSON integer byte count.
func (s Size) MarshalJSON() ([]byte, error) { return []byte(strconv.FormatInt(int64(s), 10)), nil }

// UnmarshalJSON reads a byte count or a string with a unit (see Size).
func (s *Size) UnmarshalJSON(b []byte) error { return UnmarshalBytes(b, s) }

// UnmarshalBytes decodes one YAML or JSON value strictly into out (a
// pointer); it serves the UnmarshalJSON methods of decodable types.
func UnmarshalBytes(b []byte, out any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return yamlError("", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return &Error{Msg: "empty value"}
	}
	return NewDecoder("").Value(doc.Content[0], reflectOf(out), "")
}

// duration decodes a Duration into v, an integer.
func (d *Decoder) duration(n *yaml.Node, v reflect.Value, field string) error {
	const want = `want a duration such as "250ms", "1.5s" or "2m"`
	if n.Kind != yaml.ScalarNode {
		return d.Errf(n, field, "%s, got %s", want, Describe(n))
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if n.Decode(&i) == nil && i == 0 {
			v.SetInt(0)
			return nil
		}
		return d.Errf(n, field, "%s: a number needs a unit, got %s", want, n.Value)
	case "!!str":
		x, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil && durationRE.MatchString(strings.TrimSpace(n.Value)) { // well formed: too large
			return d.Errf(n, field, "duration %q out of range (want 0s..%s)", n.Value, MaxDuration)
		}
		if err != nil {
			return d.Errf(n, field, "bad duration %q (%s)", n.Value, want)
		}
		if x < 0 {
			return d.Errf(n, field, "negative duration %q (want 0s..%s)", n.Value, MaxDuration)
		}
		if x > MaxDuration {
			return d.Errf(n, field, "duration %q out of range (want 0s..%s)", n.Value, MaxDuration)
		}
		v.SetInt(int64(x))
		return nil
	}
	return d.Errf(n, field, "%s, got %s", want, Describe(n))
}

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1000, "mb": 1000 * 1000, "gb": 1000 * 1000 * 1000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

var durationRE = regexp.MustCompile(`^\+?([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$`)

var sizeRE = regexp.MustCompile(`^([0-9]+)\s*([A-Za-z]*)$`)

// size decodes a Size into v, an integer.
func (d *Decoder) size(n *yaml.Node, v reflect.Value, field string) error {
	const want = `want a byte count such as 4096, "512B", "10KB" or "2MiB"`
	if n.Kind != yaml.ScalarNode {
		return d.Errf(n, field, "%s, got %s", want, Describe(n))
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if n.Decode(&i) != nil || i > int64(MaxSize) {
			return d.Errf(n, field, "size %s out of range (want 0..1TiB)", n.Value)
		}
		if i < 0 {
			return d.Errf(n, field, "negative size %s (want 0..1TiB)", n.Value)
		}
		v.SetInt(i)
		return nil
	case "!!str":
		m := sizeRE.FindStringSubmatch(strings.TrimSpace(n.Value))
		if m == nil {
			return d.Errf(n, field, "bad size %q (%s)", n.Value, want)
		}
		mult, ok := sizeUnits[strings.ToLower(m[2])]
		if !ok {
			return d.Errf(n, field, "bad size unit %q in %q (want B, KB, MB, GB, KiB, MiB or GiB)", m[2], n.Value)
		}
		num, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || num > int64(MaxSize)/mult {
			return d.Errf(n, field, "size %q out of range (want 0..1TiB)", n.Value)
		}
		v.SetInt(num * mult)
		return nil
	}
	return d.Errf(n, field, "%s, got %s", want, Describe(n))
}

func reflectOf(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

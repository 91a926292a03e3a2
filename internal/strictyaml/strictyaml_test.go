package strictyaml_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

type doc struct {
	Name    string              `yaml:"name"`
	Size    strictyaml.Size     `yaml:"size"`
	Limit   int64               `yaml:"limit,size,positive"`
	Wait    strictyaml.Duration `yaml:"wait"`
	Timeout time.Duration       `yaml:"timeout"`
	Tags    map[string]string   `yaml:"tags"`
	Free    any                 `yaml:"free"`
	Items   []struct {
		N int `yaml:"n"`
	} `yaml:"items"`
}

// bomb expands to over 10^7 values (f alone to 1111111); it is refused where it would explode.
const bomb = `free:
  a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
`

func decode(src string) (*doc, error) {
	var d doc
	_, err := strictyaml.Decode([]byte(src), "d.yaml", "a doc", &d)
	return &d, err
}

func TestDecodeValues(t *testing.T) {
	d, err := decode("name: a\nsize: 2 MiB\nlimit: 4KiB\nwait: 1.5s\ntimeout: 0\ntags: {x: y}\nitems:\n  - &i {n: 1}\n  - *i\n")
	if err != nil {
		t.Fatal(err)
	}
	if d.Size != 2<<20 || d.Limit != 4096 || d.Wait.D() != 1500*time.Millisecond || d.Timeout != 0 || d.Tags["x"] != "y" || len(d.Items) != 2 || d.Items[1].N != 1 {
		t.Errorf("decoded %+v", d)
	}
}

// TestDecodeErrors: every error is located as file:line: field: message,
// with the allowed values or range.
func TestDecodeErrors(t *testing.T) {
	for src, want := range map[string]string{
		"size: 9000000000GB\n":       `d.yaml:1: size: size "9000000000GB" out of range (want 0..1TiB)`,
		"size: 8589934592GiB\n":      `d.yaml:1: size: size "8589934592GiB" out of range (want 0..1TiB)`,
		"limit: 99999999999999999\n": `d.yaml:1: limit: size 99999999999999999 out of range (want 0..1TiB)`,
		"size: 3 parsecs\n":          `d.yaml:1: size: bad size unit "parsecs"`,
		"wait: 9000000000h\n":        `d.yaml:1: wait: duration "9000000000h" out of range (want 0s..720h0m0s)`,
		"timeout: 800h\n":            `d.yaml:1: timeout: duration "800h" out of range (want 0s..720h0m0s)`,
		"limit: 0\n":                 `d.yaml:1: limit: must be at least 1, got 0`,
		"wait: -1s\n":                `d.yaml:1: wait: negative duration "-1s"`,
		"wait: 5\n":                  `d.yaml:1: wait: want a duration such as "250ms", "1.5s" or "2m": a number needs a unit, got 5`,
		"name: a\nname: b\n":         `d.yaml:2: name: duplicate key (first at line 1)`,
		"nmae: a\n":                  `d.yaml:1: nmae: unknown field "nmae" (want one of name, size, limit, wait, timeout, tags, free, items)`,
		"items:\n  - {n: x}\n":       `d.yaml:2: items[0].n: want an integer, got the string "x"`,
		"items:\n  - <<: {n: 1}\n":   `d.yaml:2: items[0]: merge keys (<<) are not supported`,
		"tags: &t {a: *t}\n":         `d.yaml:1: tags.a: alias *t refers to a value that contains it`,
		"name: a\n---\nname: b\n":    `d.yaml:3: multiple YAML documents`,
		"name: a\n---":               `d.yaml:2: multiple YAML documents`,
		"0\r---":                     `d.yaml:2: multiple YAML documents`,
		"\xfe\xff (00":               `d.yaml:1: the file is UTF-16`,
		"\xff\xfe( 00":               `d.yaml:1: the file is UTF-16`,
		"a: 1\u2028b: [":             `d.yaml:2: `,
		"":                           `d.yaml: empty document: want a doc`,
		bomb:                         `d.yaml:7: free.f: document too large (more than 1048576 values after expanding aliases)`,
	} {
		_, err := decode(src)
		var se *strictyaml.Error
		if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: err = %v, want prefix %q", src, err, want)
		}
	}
}

// TestLines: Lines breaks lines where yaml.v3's scanner does (is_break:
// CR, LF, CRLF, NEL, LS, PS), so error lines can be checked against it.
func TestLines(t *testing.T) {
	for src, want := range map[string]int{
		"": 1, "a": 1, "a\n": 2, "a\r\nb": 2, "a\rb": 2, "a\n\rb": 3,
		"a\u0085b": 2, "a\u2028b\u2029c": 3,
	} {
		if got := strictyaml.Lines([]byte(src)); got != want {
			t.Errorf("Lines(%q) = %d, want %d", src, got, want)
		}
	}
}

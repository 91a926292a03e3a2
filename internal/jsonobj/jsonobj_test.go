package jsonobj

import (
	"strings"
	"testing"
)

// TestMembers: the members of an object, values trimmed and whole
// (strings holding the delimiters, nesting), in order; not an object or
// an escaped key stops the walk.
func TestMembers(t *testing.T) {
	walk := func(s string) (string, bool) {
		var got []string
		ok := Members([]byte(s), func(k, v []byte) bool {
			got = append(got, string(k)+"="+string(v))
			return true
		})
		return strings.Join(got, " "), ok
	}
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`{}`, ``, true},
		{` { "a" : 1 , "b":"x,}\"]" ,"c":[1,{"d":"}"}],"e":null,"f":-1.5e3,"g":true} `, `a=1 b="x,}\"]" c=[1,{"d":"}"}] e=null f=-1.5e3 g=true`, true},
		{`{"a":{"b":{"c":[[]]}}}`, `a={"b":{"c":[[]]}}`, true},
		{`[1]`, ``, false},
		{`"x"`, ``, false},
		{`{"a\"b":1}`, ``, false},
		{`{"a":1,"b\u0041":2}`, `a=1`, false},
	}
	for _, c := range cases {
		got, ok := walk(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	stopped := Members([]byte(`{"a":1,"b":2}`), func(k, _ []byte) bool { return string(k) != "a" })
	if stopped {
		t.Error("Members went on after fn returned false")
	}
}

func TestString(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: "abc", `""`: ""} {
		if s, ok := String([]byte(in)); !ok || string(s) != want {
			t.Errorf("%s: got %q, %v", in, s, ok)
		}
	}
	for _, in := range []string{`"a\"b"`, `1`, `"`, `null`, `"a\u0041"`} {
		if s, ok := String([]byte(in)); ok {
			t.Errorf("%s: took %q", in, s)
		}
	}
}

package faults

import (
	"reflect"
	"strings"
)

func join(xs []string) string { return strings.Join(xs, ", ") }

// setField returns the first of the named Fault fields that is set, or "".
func setField(f *Fault, names []string) string {
	rv := reflect.ValueOf(f).Elem()
	for _, n := range names {
		if i := fieldIndex(n); i >= 0 && !rv.Field(i).IsZero() {
			return n
		}
	}
	return ""
}

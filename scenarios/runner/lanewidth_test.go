package runner

import "testing"

// TestContainerLaneWidth: the container lane runs up to the host's
// container slots, or parallel if more; a bad slots variable falls back
// to parallel (entering a slot reports it).
func TestContainerLaneWidth(t *testing.T) {
	for _, tc := range []struct {
		env            string
		parallel, want int
	}{
		{"", 2, DefaultContainerSlots},
		{"", 1, DefaultContainerSlots},
		{"", 6, 6},
		{"1", 2, 2},
		{"5", 2, 5},
		{"nope", 2, 2},
		{"nope", 0, 1},
	} {
		t.Setenv(ContainerSlotsEnv, tc.env)
		if got := ContainerLaneWidth(tc.parallel); got != tc.want {
			t.Errorf("$%s=%q, parallel %d: width %d, want %d", ContainerSlotsEnv, tc.env, tc.parallel, got, tc.want)
		}
	}
}

package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// TestCallOutcome: who ended the call decides the outcome; a dropped
// connection is not an answered error.
func TestCallOutcome(t *testing.T) {
	t.Parallel()
	eof := fmt.Errorf("transport error: %w", fmt.Errorf("Post \"http://gw/mcp\": %w", io.EOF))
	cases := []struct {
		call history.Call
		want string
	}{
		{history.Call{}, OutcomeOK},
		{history.Call{CallRecord: history.CallRecord{IsError: true}}, OutcomeError},
		{history.Call{Err: errors.New("request failed with status 503: down")}, OutcomeError},
		{history.Call{Err: errors.New(`tool call failed on backend beta: 503`)}, OutcomeError},
		{history.Call{Err: eof}, OutcomeDropped},
		{history.Call{Err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED)}, OutcomeDropped},
		{history.Call{CallRecord: history.CallRecord{Outcome: history.OutcomeTimeout}, Err: context.DeadlineExceeded}, OutcomeTimeout},
	}
	for _, c := range cases {
		if got := callOutcome(&c.call); got != c.want {
			t.Errorf("callOutcome(%+v, %v) = %s, want %s", c.call.CallRecord, c.call.Err, got, c.want)
		}
	}
}

func TestOutcomeMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{OutcomeError, OutcomeError, true}, {OutcomeError, OutcomeDropped, false}, {OutcomeError, OutcomeTimeout, false},
		{OutcomeAny, OutcomeOK, true}, {OutcomeAny, OutcomeError, true}, {OutcomeAny, OutcomeDropped, false}, {OutcomeAny, OutcomeTimeout, false},
		{OutcomeDropped, OutcomeDropped, true}, {OutcomeOK, OutcomeError, false},
	} {
		if outcomeMatches(c.want, c.got) != c.ok {
			t.Errorf("outcomeMatches(%s, %s) = %v", c.want, c.got, !c.ok)
		}
	}
}

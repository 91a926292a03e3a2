package scenarios

import (
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// Scenario is one acceptance scenario: the catalogue builds them, the
// runner (runner.Scenario) runs them.
type Scenario = runner.Scenario

// ConditionalCheck is a check of a scenario that needs capabilities
// (kit.ConditionalCheck).
type ConditionalCheck = kit.ConditionalCheck

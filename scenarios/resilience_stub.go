package scenarios

func breakerScenarios() []Scenario   { return nil }
func keepaliveScenarios() []Scenario { return nil }
func optimizerScenarios() []Scenario { return nil }

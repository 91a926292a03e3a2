package scenarios

func keepaliveScenarios() []Scenario { return nil }
func optimizerScenarios() []Scenario { return nil }

package scenarios

func optimizerScenarios() []Scenario { return nil }

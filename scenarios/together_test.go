package scenarios_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// The container scenarios of one group (the same faults on both client
// revisions, each with its own network and containers) run at once
// (scenarios.RunTogether) when the specs of both will run: they spend most
// of their time waiting on the engine and on call timeouts, so together
// they take little more than one. The first of the group's specs to run
// runs them all; the others report their stored record.
var together struct {
	sync.Mutex
	// groups maps a container scenario to its group's scenarios that will
	// run (previewed before the suite runs).
	groups map[string][]scenarios.Scenario
	// done holds the records of scenarios run ahead of their spec.
	done map[string]*history.Recorder
}

// previewTogether finds, from the suite's preview (the specs the filters
// select), the container groups whose specs will all run.
func previewTogether(report types.Report) {
	willRun := map[string]bool{}
	for _, s := range report.SpecReports {
		if s.LeafNodeType == types.NodeTypeIt && s.State == types.SpecStatePassed && len(s.ContainerHierarchyTexts) == 2 {
			willRun[s.ContainerHierarchyTexts[1]+"/"+s.LeafNodeText] = true
		}
	}
	byGroup := map[string][]scenarios.Scenario{}
	for _, sc := range scenarios.Catalogue() {
		if sc.HasLabel(scenarios.LabelContainer) && willRun[sc.Name] {
			byGroup[sc.Group] = append(byGroup[sc.Group], sc)
		}
	}
	together.Lock()
	defer together.Unlock()
	together.groups, together.done = map[string][]scenarios.Scenario{}, map[string]*history.Recorder{}
	for _, scs := range byGroup {
		if len(scs) < 2 {
			continue
		}
		for _, sc := range scs {
			together.groups[sc.Name] = scs
		}
	}
}

// runSpec runs sc for its spec: with its group when they run together
// (the first spec of the group runs it), else alone.
func runSpec(ctx context.Context, sc scenarios.Scenario, cfg scenarios.RunConfig) *history.Recorder {
	together.Lock()
	group := together.groups[sc.Name]
	rec, ok := together.done[sc.Name]
	delete(together.done, sc.Name)
	together.Unlock()
	if ok {
		return rec
	}
	if len(group) == 0 {
		return scenarios.Run(ctx, sc, cfg)
	}
	GinkgoWriter.Printf("running %d scenarios of %s together\n", len(group), sc.Group)
	recs := scenarios.RunTogether(ctx, group, cfg)
	together.Lock()
	defer together.Unlock()
	for i, other := range group {
		delete(together.groups, other.Name)
		if other.Name == sc.Name {
			rec = recs[i]
		} else {
			together.done[other.Name] = recs[i]
		}
	}
	return rec
}

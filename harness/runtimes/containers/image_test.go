package containers

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// TestFailedBuildLeavesNothing: a build that fails after its COPY step
// leaves that step's image dangling (the legacy builder keeps it); it
// carries the run's labels, so Leftovers lists it and the run's removal
// takes it (no dangling image left behind).
func TestFailedBuildLeavesNothing(t *testing.T) {
	t.Parallel()
	e := engineT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A second run in this process, so removing it spares this run's image.
	run := &Engine{cli: e.cli, runID: randomHex(6), token: randomHex(16)}
	path, err := e.staticChaos(ctx)
	if err != nil {
		t.Fatalf("a static chaos for the image: %v", err)
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	df := dockerfile(run.labels()) + "RUN [\"/chaos\", \"no-such-command\"]\n"
	err = run.buildImage(ctx, ImageRepo+":failing-"+run.runID, df, bin)
	if err == nil || !strings.Contains(err.Error(), "no-such-command") {
		t.Fatalf("the failing build: %v", err)
	}
	left, err := run.Leftovers(ctx, run.runID)
	if err != nil {
		t.Fatal(err)
	}
	dangling, err := e.DanglingImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, l := range left {
		if id, ok := strings.CutPrefix(l, "untagged image "); ok && slices.Contains(dangling, id) {
			ours = append(ours, id)
		}
	}
	if len(ours) == 0 {
		t.Fatalf("the failed build left no dangling image labelled with its run (the test proves nothing): %v", left)
	}
	t.Logf("the failed build left %v (dangling: %v)", left, ours)
	if err := run.RemoveRun(ctx, run.runID); err != nil {
		t.Fatal(err)
	}
	if left, err := run.Leftovers(ctx, run.runID); err != nil || len(left) > 0 {
		t.Fatalf("after RemoveRun: %v %v", left, err)
	}
	dangling, _ = e.DanglingImages(ctx)
	for _, id := range ours {
		if slices.Contains(dangling, id) {
			t.Errorf("dangling image %s is still there", id)
		}
	}
}

// DanglingImages lists the ids of the engine's dangling images (untagged
// and no image's parent), whoever made them.
func (e *Engine) DanglingImages(ctx context.Context) ([]string, error) {
	is, err := e.cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: client.Filters{}.Add("dangling", "true")})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(is.Items))
	for i, im := range is.Items {
		ids[i] = im.ID
	}
	return ids, nil
}

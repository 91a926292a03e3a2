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

// TestImageIsTheRuns: the imported image runs /chaos, carries the run's
// labels (Leftovers lists it, RemoveRun takes it), and an import the
// engine refuses fails naming the image and leaves nothing behind,
// dangling or tagged.
func TestImageIsTheRuns(t *testing.T) {
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
	danglingBefore, err := e.DanglingImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bad := ImageRepo + ":failing-" + run.runID
	err = run.importImage(ctx, bad, append(imageChanges(run.labels()), "RUN /chaos"), bin)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("an import with a change the engine refuses (RUN): %v, want an error naming %s", err, bad)
	}
	if left, err := run.Leftovers(ctx, run.runID); err != nil || len(left) > 0 {
		t.Fatalf("the refused import left %v (%v)", left, err)
	}
	if dangling, _ := e.DanglingImages(ctx); len(dangling) > len(danglingBefore) {
		t.Errorf("dangling images %v after the refused import, %v before", dangling, danglingBefore)
	}

	tag := ImageRepo + ":test-" + run.runID
	if err := run.importImage(ctx, tag, imageChanges(run.labels()), bin); err != nil {
		t.Fatal(err)
	}
	img, err := e.cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Config.Entrypoint; !slices.Equal(got, []string{"/chaos"}) || img.Config.Labels[LabelRun] != run.runID {
		t.Errorf("image %s: entrypoint %v, labels %v; want [/chaos] and %s=%s", tag, got, img.Config.Labels, LabelRun, run.runID)
	}
	if left, err := run.Leftovers(ctx, run.runID); err != nil || len(left) != 1 {
		t.Errorf("Leftovers of the run: %v (%v), want the image", left, err)
	}
	if err := run.RemoveRun(ctx, run.runID); err != nil {
		t.Fatal(err)
	}
	if left, err := run.Leftovers(ctx, run.runID); err != nil || len(left) > 0 {
		t.Fatalf("after RemoveRun: %v %v", left, err)
	}
	if _, err := e.cli.ImageInspect(ctx, tag); err == nil {
		t.Errorf("image %s is still there after RemoveRun", tag)
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

package experiment

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// KubeObjects creates and deletes the objects of chaos_mesh actions in a
// cluster (kube/chaosmesh implements it). Run needs one in Options.Kube
// when the method has a chaos_mesh action.
type KubeObjects interface {
	// Ref names obj as Delete takes it (namespace unless its metadata
	// names one): known before Create, so that an object whose creation
	// timed out is still deleted by the rollback.
	Ref(namespace string, obj map[string]any) string
	// Create creates obj in namespace unless its metadata names one.
	Create(ctx context.Context, namespace string, obj map[string]any) error
	// Delete deletes ref; one already gone is no error.
	Delete(ctx context.Context, ref string) error
}

// createObject carries out a chaos_mesh action: the object is remembered
// for the rollback before it is created.
func (r *runner) createObject(ctx context.Context, i int, a *Action) error {
	if r.opts.Kube == nil {
		return fmt.Errorf("method[%d]: chaos_mesh: no cluster to act on (deployment.kube)", i)
	}
	ref := r.opts.Kube.Ref(r.e.Deployment.Kube.Namespace, a.Object)
	r.mu.Lock()
	r.created = append(r.created, ref)
	r.mu.Unlock()
	start := time.Now()
	err := r.opts.Kube.Create(ctx, r.e.Deployment.Kube.Namespace, a.Object)
	r.recordFault(ref, "create", nil, err, start)
	r.progress("method[%d]: create %s%s", i, ref, errSuffix(err))
	if err != nil {
		return fmt.Errorf("method[%d]: chaos_mesh: create %s: %w", i, ref, err)
	}
	return nil
}

// deleteObjects is the rollback of chaos_mesh actions: every object
// created (or asked for), last first, is deleted; it returns what failed
// with how to delete it by hand.
func (r *runner) deleteObjects() []string {
	r.mu.Lock()
	refs := slices.Clone(r.created)
	r.mu.Unlock()
	var failures []string
	for _, ref := range slices.Backward(refs) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*controlTimeout)
		err := r.opts.Kube.Delete(ctx, ref)
		cancel()
		r.recordFault(ref, "delete", nil, err, start)
		r.check(r.errCheck("rollback: "+ref+" deleted", ref+" deleted (or gone)", "deleted", err, start))
		if err != nil {
			msg := fmt.Sprintf("ROLLBACK FAILED on %s: %v\n  delete it by hand: kubectl delete %s", ref, err, ref)
			failures = append(failures, msg)
			r.progress("%s", msg)
		}
	}
	return failures
}

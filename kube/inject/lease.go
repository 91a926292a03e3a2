package inject

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeepAlive renews the injection's Lease every third of its duration
// until ctx ends (then it returns nil). It returns an error when the
// Lease is gone (healed by someone else, or expired and restored by the
// proxy) or could not be renewed for a whole duration: the injection is
// then, or is about to be, taken out by the proxy.
func KeepAlive(ctx context.Context, cs *Client, ns string, n Names, duration time.Duration) error {
	t := time.NewTicker(duration / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := renew(ctx, cs, ns, n)
		switch {
		case err == nil:
			lastOK = time.Now()
		case apierrors.IsNotFound(err):
			return fmt.Errorf("kube inject: the Lease %s/%s is gone: the injection was healed (or expired and was restored by the proxy)", ns, n.Injection)
		case ctx.Err() != nil:
			return nil
		case time.Since(lastOK) > duration:
			return fmt.Errorf("kube inject: the Lease %s/%s was not renewed for %s (last error: %w): the proxy restores the Service", ns, n.Injection, duration, err)
		}
	}
}

// renew sets the Lease's renew time to now.
func renew(ctx context.Context, cs *Client, ns string, n Names) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := cs.Leases(ns).Get(ctx, n.Injection, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.NowMicro()
	l.Spec.RenewTime = &now
	_, err = cs.Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// WaitExpired returns nil once the injection's Lease has gone unrenewed
// for its duration, or is gone; ctx's error when ctx ends first. The
// proxy measures on its own clock from the moment it saw a renewal
// (as leader election does), so clocks that disagree between the CLI's
// machine and the cluster do not matter. It reads the Lease every poll.
func WaitExpired(ctx context.Context, cs *Client, ns string, n Names, poll time.Duration) error {
	var (
		lastRenew time.Time
		seen      = time.Now()
		duration  time.Duration
	)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := cs.Leases(ns).Get(getCtx, n.Injection, metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err == nil:
			if l.Spec.LeaseDurationSeconds != nil {
				duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			}
			if r := l.Spec.RenewTime; r != nil && !r.Time.Equal(lastRenew) {
				lastRenew, seen = r.Time, time.Now()
			}
		}
		// Until the Lease was read once, duration is 0: an API server
		// that cannot be reached at start does not count as expiry.
		if duration > 0 && time.Since(seen) > duration {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

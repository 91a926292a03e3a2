// Command kube-assets builds kube-apiserver and etcd for the kube tests
// (once per machine, into the user's cache; see kube/README.md) and prints
// the directory that holds them, as envtest's KUBEBUILDER_ASSETS wants it.
// Run it from the source tree: go run ./kube/cmd/kube-assets.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/kube/assets"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := runtimes.ModuleRoot()
	if root == "" {
		fmt.Fprintln(os.Stderr, "kube-assets: run it inside the vmcp-chaos source tree")
		os.Exit(2)
	}
	start := time.Now()
	dir, err := assets.Build(ctx, root, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-assets:", err)
		if ctx.Err() != nil {
			os.Exit(130)
		}
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "kube-assets: ready in %s\n", time.Since(start).Round(time.Second))
	fmt.Println(dir)
}

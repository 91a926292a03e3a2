// Command stdiobackend serves a fake backend script over stdio for the vmcp
// tests: stdiobackend SCRIPT.yaml.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: stdiobackend SCRIPT.yaml")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, err := fakebackends.ParseScript(data, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := fakebackends.ServeStdio(ctx, s, os.Stdin, os.Stdout, fakebackends.WithExit(os.Exit)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/experiment"
	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
)

func newExperimentCmd() *cobra.Command {
	return groupCmd("experiment", "Chaos experiments against a real deployment (steady state, method, rollback)",
		`Chaos experiments against a running deployment: a gateway's MCP URL and,
per backend, the control API of the chaos proxy in front of it. See
experiments/README.md for the file format and the shipped experiments.`,
		newExperimentRunCmd(), newExperimentValidateCmd(), newExperimentInitCmd())
}

// parsePairs reads repeated --flag name=value values; want is the form
// the error asks for, and valueRequired refuses an empty value.
func parsePairs(flag, want string, list []string, valueRequired bool) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range list {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || (valueRequired && v == "") {
			return nil, fmt.Errorf("--%s %q: want %s", flag, p, want)
		}
		out[k] = v
	}
	return out, nil
}

// checkHTTPURL refuses a flag value that is not an http(s) URL with a
// host (a usage error, exit 2, rather than a failed connection, exit 1).
func checkHTTPURL(flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError(fmt.Errorf("--%s %q: want an http or https URL with a host, such as http://127.0.0.1:8080/mcp", flag, raw))
	}
	return nil
}

// loadExperiment loads file with the --param overrides; any error is bad
// input.
func loadExperiment(file string, params []string) (*experiment.Experiment, error) {
	ps, err := parsePairs("param", "name=value", params, false)
	var e *experiment.Experiment
	if err == nil {
		e, err = experiment.Load(file, ps)
	}
	if err != nil {
		return nil, &exitError{code: experiment.ExitBadInput, err: err}
	}
	return e, nil
}

func newExperimentRunCmd() *cobra.Command {
	var (
		dryRun  bool
		journal string
		params  []string
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run an experiment: hypothesis, method, hypothesis, rollback",
		Long: `Run an experiment file against the deployment it describes.

Before anything is applied, every endpoint is checked (the gateway answers
MCP, the health URL answers, every control API answers with no fault set).
Then the steady-state hypothesis is checked, the method runs (fault
actions, pauses, probes during faults), the hypothesis is checked again,
and the rollback always runs: every backend's faults are cleared and
verified clean. Faults are set under leases the run renews, so if this
process dies the proxies drop them within one lease.

A probe that deviates beyond its tolerance ends the method (then rollback).
SIGINT or SIGTERM rolls back before exiting; a second signal kills.

The journal (--journal, default journal.json; a dry run writes none
unless --journal is given) is a results document (history.Results): one
scenario, the experiment, whose checks are every probe, the preflight and
the rollback.

Exit codes: 0 hypothesis held, 1 deviated, 2 bad input, 3 aborted (an
endpoint unreachable before any fault, a fault refused, a lease lost,
safeguards.maxDuration) or rollback failed, 130 interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dryRun && !cmd.Flags().Changed("journal") {
				journal = "" // a dry run writes nothing unless asked to
			}
			if journal != "" {
				if err := checkOutPath("journal", journal, args[0]); err != nil {
					return err
				}
			}
			e, err := loadExperiment(args[0], params)
			if err != nil {
				return err
			}
			if !dryRun {
				sweepBefore(cmd, "chaos experiment run")
			}
			opts := experiment.Options{DryRun: dryRun}
			if opts.Kube, opts.Services, err = experimentKube(e); err != nil {
				return err
			}
			if !quiet {
				opts.Progress = cmd.ErrOrStderr()
			}
			out := experiment.Run(cmd.Context(), e, opts)
			var journalErr error
			if journal != "" {
				if err := out.Results.WriteFile(journal); err != nil {
					journalErr = fmt.Errorf("journal: %w", err)
				} else if !quiet {
					fmt.Fprintf(cmd.ErrOrStderr(), "journal: %s\n", journal)
				}
			}
			for _, m := range out.RollbackErrors {
				fmt.Fprintln(cmd.ErrOrStderr(), m)
			}
			code := out.ExitCode()
			if code == 0 && journalErr == nil {
				return nil
			}
			code = cmp.Or(code, experiment.ExitAborted)
			msg := fmt.Sprintf("experiment %s", out.Status)
			if out.Reason != "" {
				msg += ": " + out.Reason
			}
			if out.RollbackFailed {
				msg += fmt.Sprintf("; ROLLBACK FAILED on %d backend(s), see above", len(out.RollbackErrors))
			}
			return &exitError{code: code, err: errors.Join(errors.New(msg), journalErr)}
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "print the plan and check every endpoint; apply nothing, write nothing (unless --journal is given)")
	f.StringVar(&journal, "journal", "journal.json", "write the journal (results JSON) here; empty: none (a dry run writes one only when this is given)")
	f.StringArrayVar(&params, "param", nil, "override a parameter: name=value (repeatable)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines")
	return cmd
}

func newExperimentValidateCmd() *cobra.Command {
	var params []string
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check an experiment file without contacting anything",
		Long: `Decode and validate an experiment file strictly (unknown keys, wrong
types, bad durations, unknown parameters, hosts outside allowHosts, fault
bodies) and report the first error as file:line: field: message.
Exit codes: 0 valid, 2 invalid.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := loadExperiment(args[0], params); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&params, "param", nil, "override a parameter: name=value (repeatable)")
	return cmd
}

func newExperimentInitCmd() *cobra.Command {
	var (
		o          experiment.InitOptions
		out        string
		controls   []string
		force      bool
		kube       string
		kubeconfig string
	)
	cmd := &cobra.Command{
		Use:   "init (--gateway URL [--control NAME=URL]... | --kube NS/NAME) [--out FILE]",
		Short: "Write a starter experiment from a live gateway's tools/list",
		Long: `Connect to a live gateway, list its tools, group them by backend and write
a starter experiment: a hypothesis (a tool is listed and answers in time)
and, for a backend given a --control URL (the admin URL of the chaos proxy
in front of it), a method that makes it fail and checks that the error
names it. Exit codes: 0 written, 1 the gateway could not be listed, 2 bad
flags or the output exists (use --force).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kube != "" {
				return writeKubeSkeleton(cmd, kube, kubeconfig, out, force)
			}
			if o.Gateway == "" {
				return usageError(errors.New("experiment init: --gateway or --kube is required"))
			}
			if err := checkHTTPURL("gateway", o.Gateway); err != nil {
				return err
			}
			if o.Protocol != "legacy" && o.Protocol != "modern" {
				return usageError(fmt.Errorf("experiment init: --protocol %q: want legacy or modern", o.Protocol))
			}
			if o.AuthEnv != "" {
				if strings.TrimSpace(os.Getenv(o.AuthEnv)) == "" {
					return usageError(fmt.Errorf("experiment init: --auth-env %s: the environment variable is not set or blank", o.AuthEnv))
				}
				redact.Secret(os.Getenv(o.AuthEnv))
			}
			var err error
			if o.Controls, err = parsePairs("control", "NAME=URL", controls, true); err != nil {
				return usageError(err)
			}
			for name, u := range o.Controls {
				if err := checkHTTPURL("control "+name, u); err != nil {
					return err
				}
			}
			if out != "-" {
				if err := checkOutPath("out", out); err != nil {
					return err
				}
			}
			if out != "-" && !force {
				if _, err := os.Stat(out); err == nil {
					return usageError(fmt.Errorf("%s exists (use --force to overwrite)", out))
				}
			}
			text, err := experiment.Starter(cmd.Context(), o)
			if err != nil {
				return err
			}
			text = redact.Text(text) // a --gateway with user:password@ included
			if out == "-" {
				_, err = fmt.Fprint(cmd.OutOrStdout(), text)
				return err
			}
			if err := atomicfile.Write(out, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s; check it with: chaos experiment run --dry-run %s\n", out, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Gateway, "gateway", "", "the gateway's MCP URL")
	f.StringVar(&o.AuthEnv, "auth-env", "", "environment variable holding the gateway's bearer token")
	f.StringVar(&o.Protocol, "protocol", "legacy", "client revision: legacy or modern")
	f.StringArrayVar(&controls, "control", nil, "NAME=URL: control API of the proxy in front of backend NAME (repeatable)")
	f.StringVarP(&out, "out", "o", "experiment.yaml", "where to write it (- for stdout)")
	f.BoolVar(&force, "force", false, "overwrite --out")
	f.StringVar(&kube, "kube", "", "NS/NAME: write a skeleton from the toolhive VirtualMCPServer NAME in namespace NS (its MCPGroup's MCPServers and their Services) instead of a live gateway")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file for --kube (default $KUBECONFIG or ~/.kube/config)")
	return cmd
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// TestRunWrappingEndToEnd runs `chaos run` on two wrapping scenarios (both
// revisions, both transports; --label takes scenario names too) as a
// process (reference gateway, in-process fake backends) and checks the
// verdict table, the exit status and the JSON results.
func TestRunWrappingEndToEnd(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	out := filepath.Join(t.TempDir(), "res", "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	var err error
	// A run that judged nothing failed but left a scenario inconclusive
	// (on a loaded machine: the gateway's own health probes timed out and
	// it answered a call itself) runs once more.
	for attempt := 1; attempt <= 2; attempt++ {
		stdout.Reset()
		stderr.Reset()
		cmd := exec.CommandContext(ctx, chaosBin, "run", "--label", "wrapping/legacy/streamable-http,wrapping/modern/sse", "--out", out)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		t.Logf("attempt %d: stdout:\n%s\nstderr:\n%s", attempt, stdout.String(), stderr.String())
		if err == nil || !strings.Contains(stderr.String(), " 0 scenario(s) failed, ") {
			break
		}
	}
	if err != nil {
		logFailedChecks(t, out)
		t.Fatalf("chaos run: %v", err)
	}
	table := stdout.String()
	for _, want := range []string{"[1/2 ", "[2/2 ", "SCENARIO", "VERDICT", "WHY", "wrapping/legacy/streamable-http", "wrapping/modern/sse",
		// (with checks skipped: the initialize path does not apply to a
		// gateway that keeps its backend sessions open)
		"2 passed (2 with checks skipped), 0 failed, 0 inconclusive, 0 skipped", "report: " + strings.TrimSuffix(out, ".json") + ".html",
		"event log: " + strings.TrimSuffix(out, ".json") + ".events.json"} {
		if !strings.Contains(table, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, line := range strings.Split(table, "\n") {
		if len([]rune(line)) > 120 {
			t.Errorf("line wider than 120 columns: %q", line)
		}
	}
	checkReportFile(t, strings.TrimSuffix(out, ".json")+".html", "wrapping/legacy/streamable-http", "wrapping/modern/sse")
	if strings.Contains(table, "hang/") || strings.Contains(table, "FAILED") {
		t.Errorf("table has other scenarios or failures")
	}

	res := readResults(t, out)
	if res.Target != "reference" || len(res.Scenarios) != 2 || res.Failed() {
		t.Fatalf("results: target %q, %d scenarios, failed %v", res.Target, len(res.Scenarios), res.Failed())
	}
	// The results keep every check's evidence; the event log beside
	// them holds every event.
	for _, s := range res.Scenarios {
		kept := map[int]bool{}
		for _, e := range s.Events {
			kept[e.Seq] = true
		}
		for _, c := range s.Checks {
			for _, seq := range c.Calls {
				if !kept[seq] {
					t.Errorf("%s: check %q: evidence call #%d not in the results", s.Name, c.Name, seq)
				}
			}
		}
	}
	var log history.EventLog
	if b, err := os.ReadFile(history.EventsPath(out)); err != nil || json.Unmarshal(b, &log) != nil || res.EventsFile != "results.events.json" {
		t.Fatalf("no event log %s named by the results (%q): %v", history.EventsPath(out), res.EventsFile, err)
	}
	if err := res.AttachEvents(&log); err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Scenarios {
		if s.Verdict != history.VerdictPassed || !strings.HasPrefix(s.Name, "wrapping/") {
			t.Errorf("%s: %s %s", s.Name, s.Verdict, s.Reason)
		}
		if s.Figures["time_to_error_ms.tools_call.403"] <= 0 {
			t.Errorf("%s: no time to error for 403: %v", s.Name, s.Figures)
		}
		var calls, faults int
		for _, e := range s.Events {
			switch e.Kind {
			case history.EventCall:
				calls++
			case history.EventFault:
				faults++
			}
		}
		if calls < 30 || faults < 10 {
			t.Errorf("%s: timeline has %d calls, %d faults", s.Name, calls, faults)
		}
	}
}

// TestRunFlags: bad flags fail before anything starts; --list lists.
func TestRunFlags(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "nope"}, `unknown --target "nope"`},
		{[]string{"run", "--label", "nolabel"}, "no scenario has label nolabel"},
		{[]string{"run", "--capabilities", "telepathy"}, "telepathy"},
		{[]string{"run", "--gateway-cmd", "x"}, "need --target exec"},
		{[]string{"run", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"run", "--html", "x.html", "--no-html"}, "contradict"},
		{[]string{"run", "-q", "-v"}, "contradict"},
		{[]string{"run", "extra-arg"}, "unknown command"},
		{[]string{"nosuchcommand"}, "unknown command"},
		{[]string{"report"}, "requires at least 1 arg"},
		{[]string{"report", "/nonexistent/results.json"}, "/nonexistent/results.json"},
	} {
		out, err := exec.CommandContext(ctx, chaosBin, tc.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: err %v (want exit status 2), output %s", tc.args, err, out)
		}
	}
	help, err := exec.CommandContext(ctx, chaosBin, "run", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "--gateway-cmd string") || !strings.Contains(string(help), "130 interrupted") {
		t.Errorf("run --help: %v: the --gateway-cmd value name is garbled or the exit statuses are missing:\n%s", err, help)
	}
	out, err := exec.CommandContext(ctx, chaosBin, "run", "--list", "--label", "breaker,session").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "session/legacy/sse") || strings.Contains(string(out), "wrapping/") {
		t.Errorf("--list: %v\n%s", err, out)
	}
	// --list shows the config features each scenario renders: the breaker
	// scenario asks for metrics too, whatever the target declares.
	if !regexp.MustCompile(`(?m)^breaker/legacy/streamable-http .*breaker, metrics`).Match(out) || !strings.Contains(string(out), "CONFIG FEATURES") {
		t.Errorf("--list does not show the breaker scenario's config features:\n%s", out)
	}
	testListNotApplicable(ctx, t)
}

// testListNotApplicable: `chaos run --profile X --list` shows per scenario
// what fixture gateway a's profile cannot be judged on, and why: single
// checks (no session API, no keepalive state in its health API; with the
// health API taken away, the optimizer's health-API checks) where the rest
// runs; nothing for a scenario it can be judged on whole.
func testListNotApplicable(ctx context.Context, t *testing.T) {
	prof := filepath.Join("..", "..", "scenarios", "testdata", "profiles", "fixture-a.yaml")
	list := func(args ...string) map[string]string {
		out, err := exec.CommandContext(ctx, chaosBin, append([]string{"run", "--profile", prof, "--list"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("--profile fixture-a --list %v: %v\n%s", args, err, out)
		}
		rows := map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				rows[f[0]] = line
			}
		}
		return rows
	}
	rows := list("--label", "session,keepalive,wrapping")
	// --capabilities overrides the profile's: no health API.
	for name, row := range list("--label", "optimizer", "--capabilities", "breaker,keepalive,metrics,optimizer,reinit-on-404") {
		rows[name] = row
	}
	for scenario, want := range map[string][]string{
		"session/legacy/sse": {"both backends connected at the start (lacks session-api)",
			"timeout: the session reports beta error with its lastError (lacks session-api)", "beta connected at the end (lacks session-api)"},
		"keepalive/legacy/streamable-http": {"health API: beta's keepalive enabled, one session (its health API reports no keepalive state",
			"health API: keepalive enabled again after the re-probe ("},
		"optimizer/modern/streamable-http": {"health API: beta's circuit open after its failed calls (lacks health-api)",
			"health API: both backends unhealthy when every request fails (lacks health-api)"},
	} {
		for _, w := range want {
			if !strings.Contains(rows[scenario], w) {
				t.Errorf("--list %s: no %q in %q", scenario, w, rows[scenario])
			}
		}
		if strings.Contains(rows[scenario], "the whole scenario") {
			t.Errorf("--list %s: the whole scenario is not applicable, want single checks: %q", scenario, rows[scenario])
		}
	}
	if row := rows["wrapping/legacy/sse"]; !strings.HasSuffix(strings.TrimSpace(row), " -") {
		t.Errorf("--list wrapping/legacy/sse: want nothing not applicable: %q", row)
	}
}

// TestRunFailingAndLackingTarget: `chaos run` against a broken gateway (our
// gateway as a process, from a config template that sets an hour-long
// backend call timeout, so stalls hang) exits 1, prints the failure and
// writes the JSON; a scenario that needs a capability the target does not
// declare is reported skipped with that capability named.
func TestRunFailingAndLackingTarget(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "no-deadline.yaml.tmpl")
	broken := strings.Replace(targets.ChaosVMCPTemplate, "call: {{.CallTimeout}}", "call: 1h", 1)
	if broken == targets.ChaosVMCPTemplate {
		t.Fatal("the shipped template has no `call: {{.CallTimeout}}` to break")
	}
	if err := os.WriteFile(tmpl, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaosBin, "run", "--target", "exec", "--config-template", tmpl, "--capabilities", "session-api",
		"--label", "!process && !container", "--scenario", "hang/legacy/streamable-http,breaker/legacy/streamable-http", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("chaos run against a broken gateway: %v, want exit status 1", err)
	}
	// The findings, above the table: one, the call timeout, counting the
	// four stalls, with the command that reproduces it on this gateway,
	// through the run's own filter.
	findings, _, _ := strings.Cut(stdout.String(), "SCENARIO ")
	reproduce := "chaos run --target exec --config-template " + tmpl + " --capabilities session-api --label '!process && !container' --scenario hang/legacy/streamable-http"
	if n := strings.Count(findings, "✖ "); n != 1 || !strings.Contains(findings, "FINDINGS\n✖ the call is bounded by the call timeout: 4 checks failed in 1 scenario; first evidence: `tools/call beta_") ||
		!strings.Contains(findings, "reproduce: "+reproduce+"\n") {
		t.Errorf("want one finding above the table, the call timeout, and how to reproduce it:\n%s", findings)
	}
	// The command, as a shell splits it, selects that scenario alone.
	words, err := targets.SplitCommand(reproduce)
	if err != nil {
		t.Fatal(err)
	}
	var listErr bytes.Buffer
	listCmd := exec.CommandContext(ctx, chaosBin, append(words[1:], "--list")...) // run ...
	listCmd.Stderr = &listErr
	list, err := listCmd.Output()
	if rows := strings.Split(strings.TrimSpace(string(list)), "\n"); err != nil || len(rows) != 2 || !strings.HasPrefix(rows[1], "hang/legacy/streamable-http ") {
		t.Errorf("reproduce --list: %v:\n%s%s", err, list, listErr.String())
	}
	for _, want := range []string{"FAILED", "SKIPPED", "0 passed, 1 failed, 0 inconclusive, 1 skipped"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	res := readResults(t, out)
	if res.Target != "chaos-vmcp" || len(res.Scenarios) != 2 || !res.Failed() || res.Interrupted {
		t.Fatalf("results: target %q, %d scenarios, failed %v", res.Target, len(res.Scenarios), res.Failed())
	}
	hang, breaker := res.Scenarios[0], res.Scenarios[1]
	if hang.Verdict != history.VerdictFailed || !strings.Contains(hang.Reason, "stall_before_headers") {
		t.Errorf("hang against an hour-long call timeout: %s %s", hang.Verdict, hang.Reason)
	}
	if breaker.Verdict != history.VerdictSkipped || !strings.Contains(breaker.Reason, "breaker") {
		t.Errorf("breaker against a target without it: %s %s", breaker.Verdict, breaker.Reason)
	}
	checkReportFile(t, filepath.Join(dir, "results.html"), "hang/legacy/streamable-http", "breaker/legacy/streamable-http")
	if len(res.Findings) != 1 || res.Findings[0].Property != history.PropBounded || res.Findings[0].Checks != 4 {
		t.Errorf("JSON findings: %+v", res.Findings)
	}

	// The scorecard of the reference (a real run, in reports/testdata)
	// against this broken gateway marks where they differ.
	scorecard := filepath.Join(dir, "scorecard.html")
	ref := filepath.Join("..", "..", "reports", "testdata", "run-reference.json")
	// The broken run failed: the page is written, and the exit status is 1.
	if b, err := exec.CommandContext(ctx, chaosBin, "report", ref, out, "-o", scorecard).CombinedOutput(); exitOf(err) != 1 {
		t.Fatalf("chaos report: %v, want exit status 1 (a failed scenario)\n%s", err, b)
	}
	page, _ := os.ReadFile(scorecard)
	for _, want := range []string{`<span class="differs-mark" title="the runs differ">≠</span> breaker/legacy/streamable-http`,
		`<span class="differs-mark" title="the runs differ">≠</span> hang/legacy/streamable-http`, "chaos-vmcp"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("scorecard lacks %q", want)
		}
	}
}

// TestRunInterrupted: SIGINT during a run still prints the table and
// writes the JSON for the scenarios that finished, lists the others as not
// run, and exits 130.
func TestRunInterrupted(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	out := filepath.Join(t.TempDir(), "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaosBin, "run", "--label", "wrapping", "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	firstDone := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pipe)
		signalled := false
		for sc.Scan() {
			stdout.WriteString(sc.Text() + "\n")
			if !signalled && strings.HasPrefix(sc.Text(), "[1/4 ") {
				signalled = true
				close(firstDone)
			}
		}
	}()
	select {
	case <-firstDone:
	case <-copied:
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(os.Interrupt)
	<-copied
	err = cmd.Wait()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted chaos run: %v, want exit status 130", err)
	}
	res := readResults(t, out)
	counts := map[history.Verdict]int{}
	for _, s := range res.Scenarios {
		counts[s.Verdict]++
		if s.Verdict == history.VerdictInterrupted && !strings.HasPrefix(s.Reason, "interrupted") {
			t.Errorf("%s interrupted, said %q", s.Name, s.Reason)
		}
	}
	// The scenarios in flight at the signal are interrupted; those not
	// started yet (on a loaded machine all four may have started) are
	// listed as not run.
	// One that finished before it is judged: passed, or inconclusive (on a
	// loaded machine the gateway's own health probes time out and it
	// answers a call itself), never failed.
	cut := counts[history.VerdictSkipped] + counts[history.VerdictInterrupted]
	finished := counts[history.VerdictPassed] + counts[history.VerdictInconclusive]
	if !res.Interrupted || len(res.Scenarios) != 4 || finished < 1 || cut < 1 || finished+cut != 4 {
		t.Fatalf("results: interrupted %v, %d scenarios, %v", res.Interrupted, len(res.Scenarios), counts)
	}
	table := stdout.String()
	if !strings.Contains(table, "SCENARIO") ||
		counts[history.VerdictSkipped] > 0 && !strings.Contains(table, "not run: the run was interrupted") ||
		counts[history.VerdictInterrupted] > 0 && !strings.Contains(table, "INTERRUPTED") {
		t.Errorf("no table with the scenarios cut short (%v)", counts)
	}
	// What the signal cut short is not a finding about the gateway.
	if strings.Contains(table, "the scenario runs to the end") || strings.Contains(table, "overran") || strings.Contains(table, "every check judged passed") {
		t.Errorf("the interruption is reported as the gateway's failure")
	}
}

func readResults(t *testing.T, path string) *history.Results {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := history.ReadResults(f)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPrintTablePartial: a pass with skipped checks shows as PASSED* with
// the skipped checks in the why column, never as a plain pass; per-check
// results show as counts (FAILED 1/3) with the failed checks named; no
// line is wider than 120 columns.
func TestPrintTablePartial(t *testing.T) {
	full := history.NewRecorder("breaker/legacy/sse")
	full.Pass()
	partial := history.NewRecorder("keepalive/legacy/sse")
	partial.SkipCheck("keepalive metrics counters: target x lacks capability metrics")
	partial.Pass()
	res := harness.NewResults(nil)
	res.Add(full)
	res.Add(partial)
	failed := history.ScenarioResult{Name: "hang/modern/streamable-http-with-a-very-long-name-that-must-be-cut", Verdict: history.VerdictFailed,
		Reason: strings.Repeat("a long reason ", 30), Checks: []history.Check{
			{Name: "stall bounded by the call timeout", Verdict: history.CheckFailed},
			{Name: "403 names beta", Verdict: history.CheckPassed},
			{Name: "metrics", Verdict: history.CheckNotApplicable, Reason: "no metrics"}}}
	res.Scenarios = append(res.Scenarios, failed)
	var buf bytes.Buffer
	printTable(&buf, res)
	lines := strings.Split(buf.String(), "\n")
	t.Logf("\n%s", buf.String())
	if len(lines) < 5 || !strings.Contains(lines[1], "PASSED ") || strings.Contains(lines[1], "PASSED*") {
		t.Errorf("full pass row: %q", lines[1])
	}
	if !strings.Contains(lines[2], "PASSED*") || !strings.Contains(lines[2], "checks skipped: keepalive metrics counters: target x lacks") {
		t.Errorf("partial pass row: %q", lines[2])
	}
	if !strings.Contains(lines[3], "FAILED 1/3") || !strings.Contains(lines[3], "failed: stall bounded by the call timeout") {
		t.Errorf("failed row with checks: %q", lines[3])
	}
	if !strings.Contains(buf.String(), "PASSED*: passed, but some checks did not apply") {
		t.Error("no legend for PASSED*")
	}
	for _, l := range lines {
		if len([]rune(l)) > 120 {
			t.Errorf("line wider than 120 columns (%d): %q", len([]rune(l)), l)
		}
	}
}

// logFailedChecks logs what each failed check of the results at path
// expected and observed: the evidence of a failed run, which the table
// only excerpts.
func logFailedChecks(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("no results to show: %v", err)
		return
	}
	var res history.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Logf("results %s: %v", path, err)
		return
	}
	for _, sc := range res.Scenarios {
		for _, c := range sc.Checks {
			if c.Verdict == history.CheckFailed {
				t.Logf("%s: %s: expected %s; observed %s", sc.Name, c.Name, c.Expected, c.Observed)
			}
		}
	}
}

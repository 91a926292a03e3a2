package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// findBrowser finds Chromium, or skips (fails with
// VMCP_CHAOS_REQUIRE_BROWSER=1).
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("VMCP_CHAOS_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium on PATH and VMCP_CHAOS_REQUIRE_BROWSER=1 (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium; VMCP_CHAOS_REQUIRE_BROWSER=1 makes this a failure)")
	return ""
}

// TestReportInBrowser renders the report of a real run (chaos run against
// the reference gateway, two scenarios) and opens it in headless
// Chromium: the page loads under its strict Content-Security-Policy with
// no console or log error (a CSP violation included) or exception, its
// styles applied, makes no network request beyond its own file, draws its
// timelines, its screenshot is not blank, and it prints to PDF; its
// findings are at the top. The scorecard of that run beside one with
// failures opens with the property x gateway matrix and the findings. The
// screenshot is kept in $VMCP_CHAOS_SCREENSHOT_DIR when set.
func TestReportInBrowser(t *testing.T) {
	browser := findBrowser(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, chaosBin, "run", "-q", "--label", "breaker/legacy/streamable-http,session/legacy/sse", "--out", out)
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("chaos run: %v\n%s", err, b)
	}
	report := filepath.Join(dir, "results.html")
	url := "file://" + report
	// The scorecard of this run beside a run with failures (reports'
	// testdata): it opens with the property x gateway matrix.
	scorecard := filepath.Join(dir, "scorecard.html")
	score := exec.CommandContext(ctx, chaosBin, "report", out, filepath.Join("..", "..", "reports", "testdata", "outcomes.json"), "-o", scorecard)
	if b, err := score.CombinedOutput(); err != nil && score.ProcessState.ExitCode() != 1 { // 1: the input holds failed scenarios
		t.Fatalf("chaos report: %v\n%s", err, b)
	}
	scoreURL := "file://" + scorecard

	// The browser's profile is its own temp dir, named on its command
	// line: once the browser is closed, any process still naming it is
	// one of ours left behind and is killed, then the dir is removed.
	profile, err := os.MkdirTemp("", "vmcp-chaos-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.UserDataDir(profile), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 1600))...)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer func() {
		_ = chromedp.Cancel(bctx) // closes the browser and waits for it
		cancelBrowser()
		cancelAlloc()
		killLeftovers(t, profile)
	}()

	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning {
				problems = append(problems, fmt.Sprintf("console %s: %v", ev.Type, ev.Args))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Error())
		case *network.EventRequestWillBeSent:
			if ev.Request.URL != url && ev.Request.URL != scoreURL {
				problems = append(problems, "request: "+ev.Request.URL)
			}
		case *network.EventLoadingFailed:
			problems = append(problems, "loading failed: "+ev.ErrorText)
		case *cdplog.EventEntryAdded: // CSP violations are reported here
			if ev.Entry.Level == cdplog.LevelError {
				problems = append(problems, fmt.Sprintf("log %s: %s", ev.Entry.Source, ev.Entry.Text))
			}
		}
	})
	var rects, scenarios int
	var title, csp, badgeBorder string
	var shot []byte
	err = chromedp.Run(bctx,
		network.Enable(),
		runtime.Enable(),
		cdplog.Enable(),
		chromedp.Navigate(url),
		chromedp.WaitVisible("section.scenario svg", chromedp.ByQuery),
		chromedp.Title(&title),
		chromedp.Evaluate(`document.querySelectorAll("section.scenario svg rect").length`, &rects),
		chromedp.Evaluate(`document.querySelectorAll("section.scenario").length`, &scenarios),
		// The page renders under its own strict CSP: the policy is there and
		// the inline stylesheet it allows is applied.
		chromedp.Evaluate(`document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content ?? ""`, &csp),
		chromedp.Evaluate(`getComputedStyle(document.querySelector(".badge")).borderStyle`, &badgeBorder),
		chromedp.CaptureScreenshot(&shot),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	// The findings open the report: visible in the first screen, without
	// scrolling, above the run's summary and scorecard.
	var top struct {
		Top, Height, SummaryTop float64
		Text                    string
	}
	if err := chromedp.Run(bctx, chromedp.Evaluate(`(() => { const f = document.getElementById("r0-findings");
		return {top: f ? f.getBoundingClientRect().top : -1, height: window.innerHeight, text: f ? f.innerText : "",
			summaryTop: document.querySelector("dl.summary").getBoundingClientRect().top}; })()`, &top)); err != nil {
		t.Fatalf("browser: findings: %v", err)
	}
	if top.Top < 0 || top.Top > top.Height || top.Top > top.SummaryTop || !strings.Contains(top.Text, "Findings") || !strings.Contains(top.Text, "None: every check judged passed") {
		t.Errorf("the report's findings are not at the top: at %.0fpx of a %.0fpx screen (summary at %.0fpx): %q", top.Top, top.Height, top.SummaryTop, top.Text)
	}
	// The scorecard opens with the matrix: the property of the run with
	// failures marked ✖ in the first screen; the per-scenario comparison
	// below it, collapsed; that run's findings next.
	var sc struct {
		MatrixTop, Height float64
		Matrix, Findings  string
		DetailsOpen       bool
	}
	if err := chromedp.Run(bctx, chromedp.Navigate(scoreURL), chromedp.WaitVisible("#compare-matrix", chromedp.ByQuery),
		chromedp.Evaluate(`(() => { const m = document.getElementById("compare-matrix");
		return {matrixTop: m.getBoundingClientRect().top, height: window.innerHeight, matrix: m.innerText,
			findings: [...document.querySelectorAll("#compare ol.findings")].map(e => e.innerText).join("\n"),
			detailsOpen: document.querySelector("#compare details.percheck").open}; })()`, &sc)); err != nil {
		t.Fatalf("browser: scorecard: %v", err)
	}
	if sc.MatrixTop < 0 || sc.MatrixTop > sc.Height || !strings.Contains(sc.Matrix, "the error names the failing backend") || !strings.Contains(sc.Matrix, "✖ 1") ||
		!strings.Contains(sc.Findings, "the error names the failing backend") || sc.DetailsOpen {
		t.Errorf("the scorecard does not open with the matrix and findings (matrix at %.0fpx of %.0fpx, details open %v):\n%s\n%s",
			sc.MatrixTop, sc.Height, sc.DetailsOpen, sc.Matrix, sc.Findings)
	}
	if err := chromedp.Run(bctx, chromedp.Navigate(url), chromedp.WaitVisible("section.scenario svg", chromedp.ByQuery)); err != nil {
		t.Fatalf("browser: back to the report: %v", err)
	}
	var pdf, printShot []byte
	if err := chromedp.Run(bctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		pdf, _, err = page.PrintToPDF().WithPrintBackground(true).Do(ctx)
		return err
	}), emulation.SetEmulatedMedia().WithMedia("print"), chromedp.CaptureScreenshot(&printShot)); err != nil {
		t.Errorf("print to PDF: %v", err)
	}
	if keep := os.Getenv("VMCP_CHAOS_SCREENSHOT_DIR"); keep != "" {
		_ = os.WriteFile(filepath.Join(keep, "report.png"), shot, 0o644)
		_ = os.WriteFile(filepath.Join(keep, "report.pdf"), pdf, 0o644)
		_ = os.WriteFile(filepath.Join(keep, "report-print.png"), printShot, 0o644)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page had problems:\n%s", strings.Join(problems, "\n"))
	}
	if csp != "default-src 'none'; style-src 'unsafe-inline'; img-src data:" || badgeBorder == "" || badgeBorder == "none" {
		t.Errorf("CSP %q, badge border style %q: want the strict policy with the inline styles applied", csp, badgeBorder)
	}
	if !strings.Contains(title, "reference") || scenarios != 2 || rects < 20 {
		t.Errorf("page: title %q, %d scenario sections, %d timeline rects", title, scenarios, rects)
	}
	if !bytes.HasPrefix(pdf, []byte("%PDF")) || len(pdf) < 10_000 {
		t.Errorf("PDF: %d bytes", len(pdf))
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if pimg, err := png.Decode(bytes.NewReader(printShot)); err != nil {
		t.Errorf("print media screenshot: %v", err)
	} else if inked, colours := inkedFraction(pimg); inked < 0.02 || colours < 8 {
		t.Errorf("the page in print media looks blank: %.2f%% non-white pixels, %d colours", 100*inked, colours)
	}
	inked, colours := inkedFraction(img)
	t.Logf("screenshot %dx%d: %.1f%% non-white pixels, %d colours; PDF %d bytes", img.Bounds().Dx(), img.Bounds().Dy(), 100*inked, colours, len(pdf))
	if inked < 0.02 || colours < 8 {
		t.Errorf("the screenshot looks blank: %.2f%% non-white pixels, %d colours", 100*inked, colours)
	}
}

// inkedFraction is the fraction of pixels that are not near-white, and
// the number of distinct colours (counted up to 1000).
func inkedFraction(img image.Image) (float64, int) {
	b := img.Bounds()
	inked, total := 0, 0
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			total++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				inked++
			}
			if len(colours) < 1000 {
				colours[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
			}
		}
	}
	return float64(inked) / float64(max(total, 1)), len(colours)
}

// killLeftovers kills any process whose command line names marker (the
// browser's profile dir: only processes this test started do), then
// removes the dir, retrying while a dying process may still write to it.
func killLeftovers(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		left := 0
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(b, []byte(marker)) {
				continue
			}
			var pid int
			if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid); err == nil && pid != os.Getpid() {
				if proc, err := os.FindProcess(pid); err == nil && proc.Kill() == nil {
					left++
				}
			}
		}
		err := os.RemoveAll(marker)
		if (left == 0 && err == nil) || time.Now().After(deadline) {
			if left > 0 || err != nil {
				t.Errorf("browser leftovers: %d processes killed, remove %s: %v", left, marker, err)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

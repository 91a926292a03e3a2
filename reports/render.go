package reports

import (
	"bufio"
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
)

// Input is one results document (a suite run, a `chaos run`, an
// experiment journal) and the name the report shows it under.
type Input struct {
	// Name labels the run, e.g. its file name; empty: the target's name.
	Name string
	// Results is the document.
	Results *history.Results
}

// Options tune a report.
type Options struct {
	// Title heads the page; empty: a title from the targets.
	Title string
	// Generated is printed as the time the report was made; zero leaves
	// it out (reports of the same input are then byte-identical).
	Generated time.Time
	// Full shows every check, evidence call, failed check name and
	// finding place (`chaos report --full`); by default each is bounded
	// (bounds.go), counted where left out, so the page stays small.
	Full bool
}

//go:embed report.html.tmpl
var pageTemplate string

//go:embed style.css
var styleSheet string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"f":     func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"css":   func() template.CSS { return template.CSS(styleSheet) },
	"short": func(s string) string { return clip(s, 48) },
	"add":   func(a, b int) int { return a + b },
}).Parse(pageTemplate))

// pageView is everything the template renders.
type pageView struct {
	Title, Generated string
	Runs             []*runView
	// Compares put runs of the same subject side by side (one per
	// subject run more than once).
	Compares []*compareView
	// Experiments lists the experiment journals, when the inputs are of
	// more than one subject.
	Experiments []experimentView
}

// Render writes one self-contained HTML page (inline CSS and SVG; no
// script, font, image or link fetched from anywhere) for the inputs: for
// one run its summary, scorecard and scenarios; for several of the same
// subject (the same experiment, or the catalogue, against different
// gateways or at different times), first a side-by-side scorecard
// highlighting where they differ, then each run. Inputs of different
// subjects (journals of different experiments) are not compared: they
// are listed, one section each.
// Render is pure: the same inputs and options give the same bytes.
func Render(w io.Writer, in []Input, opt Options) error {
	if len(in) == 0 {
		return errors.New("reports: no results to render")
	}
	pv := pageView{Title: opt.Title}
	var subjects []string
	for i, x := range in {
		if x.Results == nil {
			return fmt.Errorf("reports: input %d (%s) has no results", i+1, x.Name)
		}
		label := cmp.Or(x.Name, x.Results.Target)
		pv.Runs = append(pv.Runs, newRunView(fmt.Sprintf("r%d", i), label, x.Results, opt.Full))
		subjects = append(subjects, subject(x.Results))
	}
	groups := groupRuns(pv.Runs, subjects)
	for _, g := range groups {
		if len(g) > 1 {
			for _, r := range g {
				r.Compact = !r.full
				for j, s := range r.Scenarios {
					s.Brief = s.Verdict == string(history.VerdictPassed) && len(s.Checks) > 0 && s.Failed == 0 && !slices.ContainsFunc(s.Checks, func(c checkView) bool {
						return c.Verdict == string(history.CheckInconclusive)
					})
					if !s.Brief {
						n := len(s.Checks)
						s.Checks = slices.DeleteFunc(s.Checks, func(c checkView) bool { return c.Verdict == string(history.CheckPassed) })
						s.Lines = slices.DeleteFunc(s.Lines, func(c checkLine) bool { return c.Verdict == string(history.CheckPassed) })
						s.PassedHidden = n - len(s.Checks)
						if r.Compact {
							s.Props, s.MoreProps = scorecardProps(&r.results.Scenarios[j])
							s.Reason = clip(firstLine(s.Reason), 300)
						}
					}
				}
			}
			cv := buildCompare(g)
			cv.ID, cv.Subject = "compare", subjects[slices.Index(pv.Runs, g[0])]
			if n := len(pv.Compares); n > 0 {
				cv.ID = fmt.Sprintf("compare-%d", n+1)
			}
			pv.Compares = append(pv.Compares, cv)
		}
	}
	if len(groups) > 1 {
		for i, r := range pv.Runs {
			for _, s := range r.Scenarios {
				if strings.HasPrefix(subjects[i], "experiment: ") {
					pv.Experiments = append(pv.Experiments, experimentView{RunID: r.ID, Title: s.Name, Target: r.Target, Verdict: s.Verdict, Reason: firstLine(s.Reason)})
				}
			}
		}
	}
	if pv.Title == "" {
		pv.Title = "vmcp-chaos resilience report: " + pv.Runs[0].Target
		switch {
		case len(pv.Runs) > 1 && len(groups) == 1:
			pv.Title = fmt.Sprintf("vmcp-chaos scorecard: %d runs side by side", len(pv.Runs))
		case len(groups) > 1 && len(pv.Experiments) > 0:
			pv.Title = fmt.Sprintf("vmcp-chaos report: %d runs of %d experiments and suites", len(pv.Runs), len(groups))
			if len(pv.Experiments) == len(pv.Runs) {
				pv.Title = fmt.Sprintf("vmcp-chaos experiments: %d journals of %d experiments", len(pv.Runs), len(groups))
			}
		case len(groups) > 1:
			pv.Title = fmt.Sprintf("vmcp-chaos report: %d runs", len(pv.Runs))
		}
	}
	if !opt.Generated.IsZero() {
		pv.Generated = opt.Generated.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := page.Execute(bw, pv); err != nil {
		return fmt.Errorf("reports: render: %w", err)
	}
	return bw.Flush()
}

// Load reads results documents (JSON of history.Results) from files, each
// named by its file name (by its path when two share a name, as
// a/results.json and b/results.json do), decoded strictly (Decode). A
// file holding a set of runs (history.ResultsSet, DecodeAll) gives one
// input per run, named "file: target". A bounded results file
// (history.Results.WriteSplit) gets its events back from the event log
// beside it, when that is there. Every input is redacted once read
// (redact.Text, the redaction of everything the CLI writes): a report of
// any file, however old, shows no credential. A file
// that cannot be read or is not a results document of the current schema
// is an error naming the file (and, for its content, the byte offset).
func Load(paths ...string) ([]Input, error) {
	var out []Input
	base := map[string]int{}
	for _, p := range paths {
		base[filepath.Base(p)]++
	}
	for _, p := range paths {
		data, err := boundedread.File(p, boundedread.Results)
		if err != nil {
			return nil, err
		}
		runs, err := DecodeAll(data, p)
		if err != nil {
			return nil, err
		}
		// Redacted once read: a file written before redaction existed (an
		// old journal's target URL with its password) is shown redacted
		// like any other. Decoded again only when redaction changed it, so
		// that the errors above name the file's own byte offsets.
		if red := redact.Text(string(data)); red != string(data) {
			if runs, err = DecodeAll([]byte(red), p); err != nil {
				return nil, err
			}
		}
		name := filepath.Base(p)
		if base[name] > 1 {
			name = filepath.Clean(p)
		}
		if len(runs) == 1 {
			if err := attachEventLog(p, runs[0]); err != nil {
				return nil, err
			}
			out = append(out, Input{Name: name, Results: runs[0]})
			continue
		}
		// A set (chaos bench --profile A --profile B): a column per run,
		// named by its target.
		targets := map[string]int{}
		for _, r := range runs {
			targets[r.Target]++
		}
		for i, r := range runs {
			label := name + ": " + cmp.Or(r.Target, "run")
			if targets[r.Target] > 1 || r.Target == "" {
				label += fmt.Sprintf(" #%d", i+1)
			}
			out = append(out, Input{Name: label, Results: r})
		}
	}
	return out, nil
}

// WriteFile renders the inputs to path (its directory is created),
// replacing it only once the page is complete.
func WriteFile(path string, in []Input, opt Options) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Render(w, in, opt) })
}

// firstLine is the first line of s, clipped.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return clip(s, 200)
}

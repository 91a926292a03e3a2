package reports

import (
	"bufio"
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
)

// Input is one results document (a suite run, a `chaos run`, an
// experiment journal) and the name the report shows it under.
type Input struct {
	// Name labels the run, e.g. its file name; empty: the target's name.
	Name string
	// Results is the document.
	Results *harness.Results
}

// Options tune a report.
type Options struct {
	// Title heads the page; empty: a title from the targets.
	Title string
	// Generated is printed as the time the report was made; zero leaves
	// it out (reports of the same input are then byte-identical).
	Generated time.Time
}

//go:embed report.html.tmpl
var pageTemplate string

//go:embed style.css
var styleSheet string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"f":     func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"css":   func() template.CSS { return template.CSS(styleSheet) },
	"short": func(s string) string { return clip(s, 48) },
}).Parse(pageTemplate))

// pageView is everything the template renders.
type pageView struct {
	Title, Generated string
	Runs             []*runView
	Compare          *compareView
}

// Render writes one self-contained HTML page (inline CSS and SVG; no
// script, font, image or link fetched from anywhere) for the inputs: for
// one run its summary, scorecard and scenarios; for several, first a
// side-by-side scorecard highlighting where they differ, then each run.
// Render is pure: the same inputs and options give the same bytes.
func Render(w io.Writer, in []Input, opt Options) error {
	if len(in) == 0 {
		return errors.New("reports: no results to render")
	}
	pv := pageView{Title: opt.Title}
	for i, x := range in {
		if x.Results == nil {
			return fmt.Errorf("reports: input %d (%s) has no results", i+1, x.Name)
		}
		label := cmp.Or(x.Name, x.Results.Target)
		pv.Runs = append(pv.Runs, newRunView(fmt.Sprintf("r%d", i), label, x.Results))
	}
	if pv.Title == "" {
		pv.Title = "vmcp-chaos resilience report: " + pv.Runs[0].Target
		if len(pv.Runs) > 1 {
			pv.Title = fmt.Sprintf("vmcp-chaos scorecard: %d runs side by side", len(pv.Runs))
		}
	}
	if len(pv.Runs) > 1 {
		pv.Compare = buildCompare(pv.Runs)
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

// Load reads results documents (JSON of harness.Results) from files, each
// named by its file name (by its path when two share a name, as
// a/results.json and b/results.json do). A file that cannot be read or is
// not a results document of the current schema is an error naming the
// file.
func Load(paths ...string) ([]Input, error) {
	var out []Input
	base := map[string]int{}
	for _, p := range paths {
		base[filepath.Base(p)]++
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		r, err := harness.ReadResults(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		name := filepath.Base(p)
		if base[name] > 1 {
			name = filepath.Clean(p)
		}
		out = append(out, Input{Name: name, Results: r})
	}
	return out, nil
}

// WriteFile renders the inputs to path (its directory is created),
// replacing it only once the page is complete.
func WriteFile(path string, in []Input, opt Options) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Render(w, in, opt) })
}

package kit

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Metrics is a scrape of a gateway's Prometheus metrics, by family name.
type Metrics map[string]*dto.MetricFamily

// ScrapeMetrics reads baseURL/metrics (Prometheus text format) within 5 s,
// with headers (a profile's headers.metrics: auth) on the request. A body
// that does not parse is an error naming the line, never a partial
// result.
func ScrapeMetrics(ctx context.Context, baseURL string, headers ...map[string]string) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	for _, h := range headers {
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET /metrics: HTTP %d: %s", resp.StatusCode, body)
	}
	return ParseMetrics(io.LimitReader(resp.Body, 16<<20))
}

// ScrapeTargetMetrics scrapes the gateway of env (ScrapeMetrics) and names
// its families in our terms through the target's metric mapping
// (targets.AdminAPIs.Metrics, a profile's metrics: ours → theirs), so
// scenarios look up the reference's names whatever the gateway calls them.
func ScrapeTargetMetrics(ctx context.Context, env *harness.Env) (Metrics, error) {
	m, err := ScrapeMetrics(ctx, env.Gateway().BaseURL(), targets.HeadersOf(env.Target()).Metrics)
	if err != nil {
		return nil, err
	}
	return m.Renamed(targets.TargetAdminAPIs(env.Target()).Metrics), nil
}

// Renamed returns m with each family named theirs in mapping (ours →
// theirs) also found under ours. A family the gateway does not export
// stays absent; an unmapped family keeps its name.
func (m Metrics) Renamed(mapping map[string]string) Metrics {
	if len(mapping) == 0 {
		return m
	}
	out := maps.Clone(m)
	for ours, theirs := range mapping {
		if f, ok := m[theirs]; ok && theirs != "" {
			out[ours] = f
		}
	}
	return out
}

// ParseMetrics parses the Prometheus text format (expfmt).
func ParseMetrics(r io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return Metrics(fams), nil
}

// Has reports whether the scrape has a family named name (a histogram's
// name_count and name_sum count as its).
func (m Metrics) Has(name string) bool {
	_, _, ok := m.family(name)
	return ok
}

// Sum adds the values of the samples of name whose labels include want.
// Counters, gauges and untyped samples count their value; name_count and
// name_sum of a histogram or summary count its sample count and sum.
func (m Metrics) Sum(name string, want map[string]string) float64 {
	fam, part, ok := m.family(name)
	if !ok {
		return 0
	}
	var total float64
	for _, metric := range fam.GetMetric() {
		if !hasLabels(metric, want) {
			continue
		}
		switch {
		case metric.Counter != nil:
			total += metric.GetCounter().GetValue()
		case metric.Gauge != nil:
			total += metric.GetGauge().GetValue()
		case metric.Untyped != nil:
			total += metric.GetUntyped().GetValue()
		case metric.Histogram != nil && part == "_count":
			total += float64(metric.GetHistogram().GetSampleCount())
		case metric.Histogram != nil && part == "_sum":
			total += metric.GetHistogram().GetSampleSum()
		case metric.Summary != nil && part == "_count":
			total += float64(metric.GetSummary().GetSampleCount())
		case metric.Summary != nil && part == "_sum":
			total += metric.GetSummary().GetSampleSum()
		}
	}
	return total
}

// family finds name's family, or the histogram or summary whose _count or
// _sum it is.
func (m Metrics) family(name string) (*dto.MetricFamily, string, bool) {
	if f, ok := m[name]; ok {
		return f, "", true
	}
	for _, suffix := range []string{"_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := m[base]; ok {
				return f, suffix, true
			}
		}
	}
	return nil, "", false
}

func hasLabels(metric *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		if !slices.ContainsFunc(metric.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
			return false
		}
	}
	return true
}

package scenarios

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// promSample is one Prometheus text-format sample.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// promSamples is a scrape of GET /metrics.
type promSamples []promSample

var promLabelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrapeMetrics reads the gateway's Prometheus metrics (GET /metrics).
func scrapeMetrics(ctx context.Context, baseURL string) (promSamples, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return nil, err
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
	var out promSamples
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := promSample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			s.name = line[:i]
			for _, m := range promLabelRE.FindAllStringSubmatch(line[i+1:j], -1) {
				s.labels[m[1]] = m[2]
			}
			rest = strings.TrimSpace(line[j+1:])
		} else {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			s.name, rest = f[0], strings.Join(f[1:], " ")
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// sum adds the samples of metric name whose labels include want.
func (ps promSamples) sum(name string, want map[string]string) float64 {
	var total float64
	for _, s := range ps {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range want {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// has reports whether any sample of metric name exists.
func (ps promSamples) has(name string) bool {
	for _, s := range ps {
		if s.name == name {
			return true
		}
	}
	return false
}

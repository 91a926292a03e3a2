// Package fuzzseed cuts shipped YAML files (profiles, experiments) down to
// small fuzz seeds. The fuzzer minimizes every new input it derives from a
// seed, one removal per execution: from a 2–3 kB seed, plain `go test
// -fuzz` (minimize time 60 s) spent its whole minute minimizing its first
// new input (issue 42). A cut seed keeps every field of the file outside
// its lists and the first item of each list, so most of the decoder's
// paths are still covered.
package fuzzseed

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Max bounds a seed: the largest shipped profile (toolhive-vmcp.yaml,
// 3.2 kB) cuts to 1.5 kB, the experiments to about 1 kB.
const Max = 1536

// YAML is data without comments and with every sequence cut to its first
// item, re-encoded; ok is false when data is not YAML or the cut is still
// over Max bytes.
func YAML(data []byte) (seed []byte, ok bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, false
	}
	cut(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(1)
	if err := enc.Encode(&doc); err != nil || enc.Close() != nil || buf.Len() > Max {
		return nil, false
	}
	return buf.Bytes(), true
}

func cut(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	if n.Kind == yaml.SequenceNode && len(n.Content) > 1 {
		n.Content = n.Content[:1]
	}
	for _, c := range n.Content {
		cut(c)
	}
}

// Glob is YAML of every file the patterns match, each seed once, in
// file name order; the files that give no seed are skipped.
func Glob(patterns ...string) [][]byte {
	var seeds [][]byte
	for _, p := range patterns {
		files, _ := filepath.Glob(p)
		slices.Sort(files)
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				continue
			}
			if s, ok := YAML(data); ok && !slices.ContainsFunc(seeds, func(o []byte) bool { return bytes.Equal(o, s) }) {
				seeds = append(seeds, s)
			}
		}
	}
	return seeds
}

// Package fuzzseed cuts shipped YAML files (profiles, experiments) into
// small fuzz seeds. The fuzzer minimizes every new input it derives from a
// seed, and go test's minimizer tries removing every range of bytes: a
// cost that grows with the square of the input's size. At about 1 ms a
// parse (a profile, loaded 2-core machine), a 500-byte input takes a
// minute, and plain `go test -fuzz` (minimize time 60 s) spent its whole
// run minimizing its first new input (issue 42). So each seed is one field
// of a file (with the fields every file needs), under Max bytes: together
// they still cover every field the files use.
package fuzzseed

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Max bounds a seed.
const Max = 256

// Split cuts data (a YAML mapping) into seeds: for each top-level field
// but keep, the keep fields plus that one; a field whose seed is over Max
// is split one level down (its mapping's fields one at a time). Comments
// are dropped and every list is cut to its first item. A seed still over
// Max is left out.
func Split(data []byte, keep ...string) [][]byte {
	var out [][]byte
	for _, s := range split(data, keep) {
		out = append(out, s.seed)
	}
	return out
}

// seed is a seed and what it holds besides the fields kept.
type seed struct{ seed, own []byte }

func split(data []byte, keep []string) []seed {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	root := doc.Content[0]
	cut(root)
	var base, rest []*yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if slices.Contains(keep, root.Content[i].Value) {
			base = append(base, root.Content[i], root.Content[i+1])
		} else {
			rest = append(rest, root.Content[i], root.Content[i+1])
		}
	}
	var seeds []seed
	add := func(pairs ...*yaml.Node) bool {
		s, ok := encode(slices.Concat(base, pairs))
		if ok {
			own, _ := encode(pairs)
			seeds = append(seeds, seed{s, own})
		}
		return ok
	}
	if len(rest) == 0 {
		add()
	}
	for i := 0; i < len(rest); i += 2 {
		k, v := rest[i], rest[i+1]
		if add(k, v) || v.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			add(k, &yaml.Node{Kind: yaml.MappingNode, Style: v.Style, Content: v.Content[j : j+2]})
		}
	}
	return seeds
}

func encode(pairs []*yaml.Node) ([]byte, bool) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(1)
	if err := enc.Encode(&yaml.Node{Kind: yaml.MappingNode, Content: pairs}); err != nil || enc.Close() != nil || buf.Len() > Max {
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

// Inline replaces every ${name} of data by the default its top-level
// parameters map gives (an experiment's), and drops the map: the seed
// then needs no parameter to mean what the file means.
func Inline(data []byte) []byte {
	var doc struct {
		Parameters map[string]string `yaml:"parameters"`
	}
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Parameters) == 0 {
		return data
	}
	var pairs []string
	for k, v := range doc.Parameters {
		pairs = append(pairs, "${"+k+"}", v)
	}
	var node yaml.Node
	if yaml.Unmarshal([]byte(strings.NewReplacer(pairs...).Replace(string(data))), &node) != nil || len(node.Content) != 1 {
		return data
	}
	m := node.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "parameters" {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			break
		}
	}
	out, err := yaml.Marshal(&node)
	if err != nil {
		return data
	}
	return out
}

// Glob is Split(prepare(file), keep...) of every file the pattern
// matches, in file name order, leaving out a seed whose field (what it
// holds besides keep) an earlier seed has.
func Glob(pattern string, prepare func([]byte) []byte, keep ...string) [][]byte {
	files, _ := filepath.Glob(pattern)
	slices.Sort(files)
	var seeds [][]byte
	var owns [][]byte
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if prepare != nil {
			data = prepare(data)
		}
		for _, s := range split(data, keep) {
			if !slices.ContainsFunc(owns, func(o []byte) bool { return bytes.Equal(o, s.own) }) {
				seeds, owns = append(seeds, s.seed), append(owns, s.own)
			}
		}
	}
	return seeds
}

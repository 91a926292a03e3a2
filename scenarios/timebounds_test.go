package scenarios_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// durationBound matches the source of a BeNumerically bound that is a
// time: a time unit, or a name that says so.
var durationBound = regexp.MustCompile(`time\.|(?i)timeout|bound|failfast|deadline|interval|jitter|slack|within`)

// bareDurationBound is the source of the bound when n is
// gomega.BeNumerically("<=" or "<", bound) with a bound that is a time
// (durationBound), else "".
func bareDurationBound(fset *token.FileSet, n ast.Node, src []byte) string {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) != 2 {
		return ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "BeNumerically" {
		return ""
	}
	op, ok := call.Args[0].(*ast.BasicLit)
	if !ok || (op.Value != `"<="` && op.Value != `"<"`) {
		return ""
	}
	bound := string(src[fset.Position(call.Args[1].Pos()).Offset:fset.Position(call.Args[1].End()).Offset])
	if !durationBound.MatchString(bound) {
		return ""
	}
	return bound
}

// TestTimeBoundsGoThroughTheKit: no scenario judges a time bound with the
// bare matchers (matchers.FailWithin, matchers.ReturnWithin): a bound
// judged so fails a correct gateway whenever the machine was slower than
// the excess (a loaded -race run relayed a connection reset in 2.7 s
// against 1 s, with pings as slow). The kit's C.FailsWithin,
// C.ReturnsWithin and Kit.CheckCallWithin judge the bound and make the
// check inconclusive when OverBound says the time says nothing of the
// gateway. The one exception judges its bound net of this process's
// stalls (optimizer's expectFound, k.Net). Nor does any judge a time that
// is not one call's with a bare BeNumerically against a time bound: the
// kit's C.TookWithin excuses it as LateThrough says (keepalive judges its
// gaps net of stalls and CPU wait, one by one).
func TestTimeBoundsGoThroughTheKit(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"optimizer.go:expectFound": true}
	// Judged net of this process's stalls and the gateway's CPU wait, each
	// gap on its own (keepalive's cadence and re-probe).
	allowedBare := map[string]bool{"keepalive.go:runKeepalive": true}
	src := map[string][]byte{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		src[name] = b
		f, err := parser.ParseFile(fset, name, b, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if bound := bareDurationBound(fset, n, src[name]); bound != "" && !allowedBare[name+":"+fn.Name.Name] {
					t.Errorf("%s (in %s): BeNumerically against %s judges a time bound the machine may have made: use the kit's C.TookWithin (or C.ReturnsWithin for a call)",
						fset.Position(n.Pos()), fn.Name.Name, bound)
				}
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok || pkg.Name != "matchers" || (sel.Sel.Name != "FailWithin" && sel.Sel.Name != "ReturnWithin") {
					return true
				}
				if !allowed[name+":"+fn.Name.Name] {
					t.Errorf("%s (in %s): matchers.%s judges a time bound the machine may have made: use the kit's C.FailsWithin, C.ReturnsWithin or CheckCallWithin",
						fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
}

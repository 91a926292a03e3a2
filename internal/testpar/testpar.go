// Package testpar sets how many parallel tests a test binary runs at once
// when the command line does not say.
//
// go test's -parallel defaults to GOMAXPROCS, two on the machines these
// tests run on. The packages that use this package have tests that wait
// (call deadlines, stalls, recovery windows) far more than they compute,
// so two at a time leaves the CPU idle and their wall time near the sum of
// their tests.
package testpar

import (
	"flag"
	"strconv"
)

// Default makes n the binary's -test.parallel unless the command line set
// it (go test -parallel N or -test.parallel=N wins). Call it from TestMain
// before m.Run; it parses the command line.
func Default(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if explicit {
		return
	}
	if f := flag.Lookup("test.parallel"); f != nil {
		// Through the flag's Value: the flag does not count as set.
		_ = f.Value.Set(strconv.Itoa(n))
	}
}

package bench

import (
	"fmt"
	"time"
)

// cpuFigures are the CPU figures of one call measurement: direct.cpu[0]
// is the backend's CPU over the direct load, gw.cpu[0] the gateway's and
// gw.cpu[1] the backend's over the load through the gateway (a negative
// duration: not readable). Every ratio divides by the backend's CPU per
// call in the DIRECT run, the cost of a call without a gateway:
//
//	ratio.cpu_per_call           gateway CPU per call ÷ direct backend CPU per call
//	ratio.backend_amplification  backend CPU per call through the gateway ÷ direct backend CPU per call
//	ratio.total_cpu_per_call     (gateway + backend) CPU per call through the gateway ÷ direct backend CPU per call
//
// A gateway that makes the backend work harder per call (more requests,
// sessions or lists per call) shows it in backend_amplification, and no
// longer hides it in a larger denominator. A ratio whose denominator
// measured no CPU (a run shorter than the clock tick) is left out.
func cpuFigures(direct, gw round) map[string]float64 {
	f := map[string]float64{}
	perCall := func(d time.Duration, calls int) float64 { return ms(d) / float64(max(calls, 1)) }
	read := func(r round, i int) bool { return len(r.cpu) > i && r.cpu[i] >= 0 }
	var base float64
	if read(direct, 0) {
		base = perCall(direct.cpu[0], direct.load.Calls)
		f["direct.backend_cpu_ms_per_call"] = base
	}
	if read(gw, 0) {
		f["gateway.cpu_s"] = gw.cpu[0].Seconds()
		f["gateway.cpu_ms_per_call"] = perCall(gw.cpu[0], gw.load.Calls)
		if base > 0 {
			f["ratio.cpu_per_call"] = f["gateway.cpu_ms_per_call"] / base
		}
	}
	if read(gw, 1) {
		f["gateway.backend_cpu_ms_per_call"] = perCall(gw.cpu[1], gw.load.Calls)
		if base > 0 {
			f["ratio.backend_amplification"] = f["gateway.backend_cpu_ms_per_call"] / base
		}
	}
	if read(gw, 0) && read(gw, 1) && base > 0 {
		f["ratio.total_cpu_per_call"] = (f["gateway.cpu_ms_per_call"] + f["gateway.backend_cpu_ms_per_call"]) / base
	}
	return f
}

// times formats figure k of f as "2.18×", or "n/a" when it is missing.
func times(f map[string]float64, k string) string {
	v, ok := f[k]
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", v)
}

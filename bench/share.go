package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The machine's share of a call run. On a machine whose cores the load
// fills, throughput follows the CPU every call costs ALL the processes
// that take part in it, the load generator (this process) included:
// direct, the client and the backend; through the gateway, the client,
// the gateway and the backend. shareFigures puts that beside the
// measured throughput:
//
//	<side>.client_cpu_ms_per_call   this process's CPU over the load ÷ its calls
//	<side>.cores_used               the CPU of the client, backend (and gateway) ÷ the load's wall time
//	<side>.machine_busy_cores       the whole machine's busy CPU (/proc/stat) ÷ the load's wall time
//	ratio.cpu_bound_throughput      (client + backend CPU per call, direct) ÷
//	                                (client + gateway + backend CPU per call, through the gateway):
//	                                the throughput ratio the CPU alone allows when both runs fill the cores
//	machine.cores                   runtime.NumCPU
//
// cores_used near machine.cores in both runs means the runs were bound by
// CPU, and ratio.throughput should be near ratio.cpu_bound_throughput;
// machine_busy_cores above cores_used is other processes' CPU (a shared
// machine), which moves the ratios. A figure whose input could not be
// read is left out.
func shareFigures(direct, gw round) map[string]float64 {
	f := map[string]float64{"machine.cores": float64(runtime.NumCPU())}
	perCall := func(d time.Duration, calls int) float64 { return ms(d) / float64(max(calls, 1)) }
	sum := func(ds ...time.Duration) (time.Duration, bool) {
		var s time.Duration
		for _, d := range ds {
			if d < 0 {
				return 0, false
			}
			s += d
		}
		return s, true
	}
	var perCallDirect, perCallGateway float64
	for _, e := range []struct {
		side string
		r    round
		cost *float64
	}{{"direct", direct, &perCallDirect}, {"gateway", gw, &perCallGateway}} {
		if e.r.load.Elapsed <= 0 || e.r.load.Calls == 0 {
			continue
		}
		if e.r.client >= 0 {
			f[e.side+".client_cpu_ms_per_call"] = perCall(e.r.client, e.r.load.Calls)
		}
		if all, ok := sum(append([]time.Duration{e.r.client}, e.r.cpu...)...); ok && len(e.r.cpu) > 0 {
			f[e.side+".cores_used"] = all.Seconds() / e.r.load.Elapsed.Seconds()
			*e.cost = perCall(all, e.r.load.Calls)
		}
		if e.r.machineBusy >= 0 {
			f[e.side+".machine_busy_cores"] = e.r.machineBusy.Seconds() / e.r.load.Elapsed.Seconds()
		}
	}
	if perCallDirect > 0 && perCallGateway > 0 {
		f["ratio.cpu_bound_throughput"] = perCallDirect / perCallGateway
	}
	return f
}

// machineBusy reads the CPU time the whole machine has spent busy so far
// (every state of the first line of /proc/stat but idle and iowait), -1
// when it cannot.
func machineBusy() time.Duration {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return -1
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return -1
		}
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest time is in user already
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks
}

// loadAverage is the 1-minute load average (/proc/loadavg), -1 when it
// cannot be read.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	first, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(first, 64)
	if err != nil {
		return -1
	}
	return v
}

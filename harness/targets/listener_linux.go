package targets

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listenerHolders reports who holds a TCP socket listening on port (any
// local address, IPv4 or IPv6), read from /proc: ours is true when a
// process of process group pgid holds one (its members are looked at
// first), else others are the holders found. known is false when no such
// listener, or no holder of it, is visible: another network namespace (a
// container's published port), another user's process; none is true when
// no socket listens on port at all in this network namespace.
func listenerHolders(port, pgid int) (ours bool, others []int, known, none bool) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listeningInodes(f, port, inodes)
	}
	if len(inodes) == 0 {
		return false, nil, false, true
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var rest []int
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		if processGroup(pid) != pgid {
			rest = append(rest, pid)
		} else if holds(pid, inodes) {
			return true, nil, true, false
		}
	}
	for _, pid := range rest {
		if holds(pid, inodes) {
			others = append(others, pid)
		}
	}
	return false, others, len(others) > 0, false
}

// holds tells whether pid has a socket of inodes open (false when its fds
// cannot be read: gone, or another user's).
func holds(pid int, inodes map[string]bool) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		link, err := os.Readlink(dir + "/" + fd.Name())
		if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true
		}
	}
	return false
}

// listeningInodes adds to inodes the socket inodes of file's (a
// /proc/net/tcp table) sockets in state LISTEN on port.
func listeningInodes(file string, port int, inodes map[string]bool) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" || !strings.HasSuffix(fields[1], want) || fields[9] == "0" {
			continue
		}
		inodes[fields[9]] = true
	}
}

// processGroup returns pid's process group, or -1 when it cannot be read.
func processGroup(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 3 {
		return -1
	}
	pgrp, err := strconv.Atoi(fields[2])
	if err != nil {
		return -1
	}
	return pgrp
}

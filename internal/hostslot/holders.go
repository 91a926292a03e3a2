//go:build unix

package hostslot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// locksFile is where Linux lists the file locks held on the host, with
// their holders' pids (in the reader's pid namespace).
const locksFile = "/proc/locks"

// Holders is the pids of the processes that hold a slot of kind now,
// from locksFile: empty when none does. It fails where the file cannot
// be read (not Linux) or the slots cannot be listed.
func Holders(kind string) ([]int, error) {
	files, err := filepath.Glob(filepath.Join(Dir(), kind+"-*.lock"))
	if err != nil {
		return nil, err
	}
	inodes := map[uint64]bool{}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			continue // removed meanwhile
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			inodes[st.Ino] = true
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	b, err := os.ReadFile(locksFile)
	if err != nil {
		return nil, err
	}
	return lockHolders(b, inodes)
}

// lockHolders is the pids of the FLOCK locks that locks (locksFile's
// text) lists on the inodes given; waiting requests ("->") hold nothing.
func lockHolders(locks []byte, inodes map[uint64]bool) ([]int, error) {
	var pids []int
	for line := range bytes.Lines(locks) {
		f := bytes.Fields(line)
		switch {
		case len(f) == 0, len(f) >= 2 && string(f[1]) == "->":
			continue
		case len(f) < 6:
			return nil, errors.New(locksFile + ": unreadable line " + strconv.Quote(string(line)))
		}
		if string(f[1]) != "FLOCK" {
			continue
		}
		dev := bytes.Split(f[5], []byte(":")) // major:minor:inode
		if len(dev) != 3 {
			return nil, errors.New(locksFile + ": unreadable line " + strconv.Quote(string(line)))
		}
		ino, err1 := strconv.ParseUint(string(dev[2]), 10, 64)
		pid, err2 := strconv.Atoi(string(f[4]))
		if err1 != nil || err2 != nil {
			return nil, errors.New(locksFile + ": unreadable line " + strconv.Quote(string(line)))
		}
		if inodes[ino] {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

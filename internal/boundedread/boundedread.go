// Package boundedread reads the files the chaos CLI takes as input (backend
// scripts, gateway configs, target profiles and their config templates,
// experiments, results documents, their event logs and journals, token
// files) whole, but
// never more than a limit per kind of file, and only from regular files:
// a device or a FIFO (/dev/zero, /dev/stdin, a named pipe) never ends or
// never stops growing, so it is refused before a byte is read.
//
// Every refusal is an *Error naming the file, the kind and the limit; the
// CLI maps it to exit status 2, as every other bad input.
package boundedread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Kind is a kind of input file and the most bytes one may hold.
type Kind struct {
	Name  string // "backend script", "results document", ...
	Limit int64  // bytes
}

// The kinds of input the CLI reads, with their limits. A limit is many
// times the largest legitimate file of its kind: the shipped scripts,
// configs, profiles and experiments are a few kB, a full run's results
// about 10 MB.
var (
	Script         = Kind{"backend script", 4 << 20}
	Config         = Kind{"gateway config", 4 << 20}
	Profile        = Kind{"target profile", 1 << 20}
	ConfigTemplate = Kind{"config template", 1 << 20}
	Experiment     = Kind{"experiment", 1 << 20}
	Results        = Kind{"results document", 256 << 20}
	EventLog       = Kind{"event log", 256 << 20}
	Token          = Kind{"token file", 64 << 10}
)

// Errors an *Error wraps, for errors.Is.
var (
	ErrTooLarge   = errors.New("too large")
	ErrNotRegular = errors.New("not a regular file")
)

// Error is a refused input: Path is the file as given, Kind its kind.
// Err is ErrTooLarge, ErrNotRegular or the error that opening or reading
// the file returned.
type Error struct {
	Path string
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Path + ": " + e.Msg() }

// Msg is the error without the path, for errors that name the file
// themselves ("file:line: field: message").
func (e *Error) Msg() string {
	switch {
	case errors.Is(e.Err, ErrTooLarge):
		return fmt.Sprintf("%s larger than %s (the limit for a %s)", e.Kind.Name, Size(e.Kind.Limit), e.Kind.Name)
	case errors.Is(e.Err, ErrNotRegular):
		return fmt.Sprintf("%s: %v", e.Kind.Name, e.Err)
	}
	return fmt.Sprintf("cannot read %s: %v", e.Kind.Name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// File reads the regular file at path, at most kind.Limit bytes. A file
// that is not regular (after following symbolic links) or holds more is
// refused with an *Error.
func File(path string, kind Kind) ([]byte, error) {
	// Stat before opening: opening a FIFO blocks until a writer comes.
	if err := check(os.Stat(path)); err != nil {
		return nil, &Error{Path: path, Kind: kind, Err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Kind: kind, Err: unwrapPath(err)}
	}
	defer f.Close()
	// Again on what was opened: the path may have changed in between.
	st, err := f.Stat()
	if err = check(st, err); err != nil {
		return nil, &Error{Path: path, Kind: kind, Err: err}
	}
	if st.Size() > kind.Limit {
		return nil, &Error{Path: path, Kind: kind, Err: ErrTooLarge}
	}
	// The file may grow between Stat and the read: the read is bounded too.
	data, err := io.ReadAll(io.LimitReader(f, kind.Limit+1))
	if err != nil {
		return nil, &Error{Path: path, Kind: kind, Err: err}
	}
	if int64(len(data)) > kind.Limit {
		return nil, &Error{Path: path, Kind: kind, Err: ErrTooLarge}
	}
	return data, nil
}

// check refuses a file that is not regular.
func check(st fs.FileInfo, err error) error {
	if err != nil {
		return unwrapPath(err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w (%s)", ErrNotRegular, FileType(st.Mode()))
	}
	return nil
}

// unwrapPath drops the *fs.PathError around err: Error names the path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// FileType names a file mode that is not a regular file: "a directory",
// "a symbolic link", "a FIFO", "a character device", ...
func FileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// Size formats a byte count the way the limits are documented: 64 KiB,
// 4 MiB, 256 MiB.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

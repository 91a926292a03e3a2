package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteWholeOrNothing: a write that fails leaves the old file and no
// temporary file; one that succeeds replaces it; the temporary file's name
// carries the writer's pid.
func TestWriteWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "report.html")
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "old"); return err }); err != nil {
		t.Fatal(err)
	}
	var seen string
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		f := w.(*os.File)
		seen = filepath.Base(f.Name())
		_, _ = io.WriteString(w, "partial")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "old" {
		t.Fatalf("after a failed write: %q, want the old content", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("files left: %v", entries)
	}
	if pid, ok := Owner(seen); !ok || pid != os.Getpid() {
		t.Fatalf("Owner(%q) = %d %v, want this pid", seen, pid, ok)
	}
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "new" {
		t.Fatalf("after a write: %q", data)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", st.Mode())
	}
	if _, ok := Owner("report.html"); ok {
		t.Fatal("Owner of an ordinary name")
	}
}

package files

import (
	"bytes"
	"os"
	"path/filepath"
	"time"
)

// SetDrainWait lets a test wait for a replaced file's last writer without
// a bound, so that no result depends on the machine's speed.
func SetDrainWait(d time.Duration) (restore func()) {
	old := drainWait
	drainWait = d
	return func() { drainWait = old }
}

// SimulateTornAppend leaves path as a Store killed in the middle of
// appending line would: the intent recorded in the sidecar (with the
// bytes, when line is several lines), and only the first cut bytes of
// line in the file.
func SimulateTornAppend(path string, line []byte, cut int) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	ino, _ := fileInode(st)
	a := appendIntent{ino: ino, at: st.Size(), size: int64(len(line)), lines: bytes.Count(line, []byte{'\n'}) > 1}
	rec := a.encode()
	if a.lines {
		rec = append(rec, line...)
	}
	side := filepath.Join(filepath.Dir(path), intentName(filepath.Base(path)))
	if err := os.WriteFile(side, rec, 0o644); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(line[:cut])
	return err
}

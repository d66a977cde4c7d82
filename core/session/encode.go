package session

import (
	"bufio"
	"io"
	"sort"
)

// Encode writes the file in JSONL form: the header, then every entry's raw
// line. Lines skipped as malformed when reading are written back where they
// were, so a rewrite loses nothing. An unmodified v3 file encodes to its
// original bytes (blank lines aside).
func (f *File) Encode(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	writeLine := func(b []byte) {
		bw.Write(b)
		bw.WriteByte('\n')
	}
	writeLine(f.Header.Raw)
	var skippedLines []int
	for l := range f.Skipped {
		skippedLines = append(skippedLines, l)
	}
	sort.Ints(skippedLines)
	for _, e := range f.Entries {
		for len(skippedLines) > 0 && e.Line != 0 && skippedLines[0] < e.Line {
			writeLine(f.Skipped[skippedLines[0]])
			skippedLines = skippedLines[1:]
		}
		writeLine(e.Raw)
	}
	for _, l := range skippedLines {
		writeLine(f.Skipped[l])
	}
	return bw.Flush()
}

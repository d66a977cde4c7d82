package sessiongen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckedInCorpora guards the golden files made by the conformance
// oracle: the generated sessions they were computed on must be exactly what
// this generator produces today, or the goldens silently describe other data.
// If this fails after a deliberate generator change, run conformance/run.sh.
func TestCheckedInCorpora(t *testing.T) {
	for _, dir := range []string{
		"../../core/compaction/testdata/generated",
		"../../core/branch/testdata/generated",
		"../../core/session/testdata/golden/generated",
		"../../core/tokens/testdata/golden/generated",
	} {
		t.Run(strings.TrimPrefix(dir, "../../core/"), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if os.IsNotExist(err) {
				t.Skipf("no corpus at %s", dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Files []struct {
					File    string  `json:"file"`
					Options Options `json:"options"`
				} `json:"files"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("manifest: %v", err)
			}
			for _, f := range m.Files {
				var buf bytes.Buffer
				if err := Generate(&buf, f.Options); err != nil {
					t.Fatal(err)
				}
				have, err := os.ReadFile(filepath.Join(dir, f.File))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(have, buf.Bytes()) {
					t.Errorf("%s differs from the generator's output; regenerate with conformance/run.sh", f.File)
				}
			}
		})
	}
}

package pi_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkExtensionCompaction: the time the extension adds to a pi
// compaction (session.compact() through pi's SDK, session_compact and its
// notification included) with the five example plugins attached, the
// summarizer's own time (measured at the loopback server) excluded: one-shot
// CLI (a pith process per call) and a warm `pith serve`. pi-alone is pi
// compacting by itself, its model's time likewise excluded, for reference.
//
//	go test -run '^$' -bench ExtensionCompaction -benchtime 10x ./integrations/pi/
func BenchmarkExtensionCompaction(b *testing.B) {
	for _, mode := range []string{"pi-alone", "cli", "daemon"} {
		b.Run(mode, func(b *testing.B) {
			w := benchWorld(b)
			var srv *pithServe
			if mode == "daemon" {
				srv = w.startServe()
				w.env = append(w.env, "PITH_SERVE="+srv.addr, "PITH_SESSIONS_ROOT="+w.sessions)
			}
			before := w.summarizer.busyTime()
			modelBefore := w.model.busyTime()
			n := b.N
			if mode == "daemon" {
				n++ // the first call is reported apart
			}
			args := map[string]any{"file": w.benchFile, "iterations": n, "expect": "PITH-SUMMARY"}
			if mode == "pi-alone" {
				args = map[string]any{"file": w.benchFile, "iterations": b.N, "extension": false, "expect": "PI-OWN-SUMMARY"}
			}
			b.ResetTimer()
			r := w.sdk("bench", args, nil)
			b.StopTimer()
			var ms []float64
			for _, v := range r["ms"].([]any) {
				ms = append(ms, v.(float64))
			}
			b.Logf("%s: each compaction, ms: %.1f", mode, ms)
			excluded := w.summarizer.busyTime() - before
			if mode == "pi-alone" {
				excluded = w.model.busyTime() - modelBefore
			}
			perOp := float64(excluded) / float64(time.Millisecond) / float64(len(ms))
			if mode == "daemon" && len(ms) > 1 {
				// Warm: the first call loads gRPC and connects.
				b.ReportMetric(ms[0]-perOp, "ms-first-call")
				ms = ms[1:]
			}
			slices.Sort(ms)
			b.ReportMetric(ms[len(ms)/2]-perOp, "ms-added(median)")
			b.ReportMetric(perOp, "ms-summarizer/op")
			b.ReportMetric(0, "ns/op")
		})
	}
}

type benchW struct {
	*world
	benchFile string
}

// benchWorld is a world with the five example plugins attached (as
// plugins/examples/README.md attaches them) and a session of a few
// exchanges to compact.
func benchWorld(b *testing.B) *benchW {
	w := newWorld(b, piSettings{})
	if err := os.WriteFile(filepath.Join(w.cwd, "AGENTS.md"), []byte("Always run the tests.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	// Each lists its events, so a one-shot pith starts only those an
	// operation fires (docs/plugins.md).
	plugin := func(name string, prio int, failure string, events []string, args ...string) map[string]any {
		p := w.plugin(name, name, args...)
		p["priority"] = prio
		p["failure"] = failure
		p["events"] = events
		return p
	}
	w.pithConf(nil,
		plugin("guard", 10, "open", []string{"session_before_compact"}),
		plugin("enterprise-summarizer", 20, "open", []string{"session_before_compact"}),
		plugin("instructions-keeper", 50, "closed", []string{"session.compacting"}),
		plugin("branch-notes", 50, "closed", []string{"session_before_tree"}),
		plugin("audit", 100, "open", []string{"session_compact", "session_tree"}, "--file", filepath.Join(w.dir, "audit.jsonl")))
	conf := map[string]any{}
	readJSONFile(w.t, w.pithConfig, &conf)
	conf["sessions"] = map[string]any{"root": w.sessions}
	writeJSON(w.t, w.pithConfig, conf)
	pi := w.startRPC()
	pi.converse(4)
	file := pi.sessionFile()
	pi.stop()
	return &benchW{world: w, benchFile: file}
}

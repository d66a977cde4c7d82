package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestCLIHolderIsUnique: two `pith compact --store` runs with the same
// host name and pid — containers that share the host's name (docker
// --network host) each run pith as pid 1 of their own pid namespace —
// must not share a lease. The CLI named its holder by host name and pid
// alone, so the second run "renewed" the first one's lease and compacted
// the session beside it. Here the other run is stood in for by a lease
// taken under the name this process's CLI had.
func TestCLIHolderIsUnique(t *testing.T) {
	for kind, url := range storesForTest(t) {
		name := "team/holder.jsonl"
		mustCLI(t, "import", "--store", url, "../../examples/demo-session.jsonl", name)
		st, err := openStoreURL(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		twin := fmt.Sprintf("pith-cli@%s/%d", host, os.Getpid())
		lease, err := st.AcquireLease(context.Background(), name, twin, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		held := mustCLI(t, "export", "--store", url, name)
		_, errs, code := runCLI(t, "compact", "--store", url, name, "--keep-recent-tokens", "2000", "--config", emptyConfig(t))
		if code != exitBusy {
			t.Errorf("%s: compact while a run with the same host and pid holds the lease: exit %d (%s), want %d", kind, code, errs, exitBusy)
		}
		if mustCLI(t, "export", "--store", url, name) != held {
			t.Errorf("%s: the session changed under another run's lease", kind)
		}
		st.ReleaseLease(context.Background(), lease)
		st.Close()
	}
}

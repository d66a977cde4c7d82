package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/tidwall/gjson"
)

// TestServePluginCancelIsFailedPrecondition: a guard plugin's veto of a
// manual compaction reaches the client as FailedPrecondition, with the
// plugin's reason, not as Internal.
func TestServePluginCancelIsFailedPrecondition(t *testing.T) {
	guard, _ := buildExamplePlugins(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeServeConfig(t, cfgPath, 300, []map[string]any{{"name": "guard", "path": guard, "failure": "closed"}})
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s, err := c.Create(ctx, "g/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for i := range 6 {
		es, err := s.AppendMessages(ctx, serveMessage("user", fmt.Sprintf("u%d", i), 120), serveMessage("assistant", fmt.Sprintf("a%d", i), 120))
		if err != nil {
			t.Fatal(err)
		}
		last = gjson.GetBytes(es[len(es)-1], "id").Str
	}
	label := fmt.Sprintf(`{"type":"label","targetId":%q,"label":"no-compact"}`, last)
	if _, err := s.AppendEntries(ctx, json.RawMessage(label)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Compact(ctx, "", nil)
	if !errors.Is(err, client.ErrFailedPrecondition) || !strings.Contains(err.Error(), "no-compact") {
		t.Fatalf("compaction vetoed by a plugin: %v, want failed precondition naming the label", err)
	}
}

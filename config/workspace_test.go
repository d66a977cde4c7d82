package config

import "testing"

func TestWorkspaceRootFor(t *testing.T) {
	s := Server{WorkspaceRoot: "/srv/ws", Tokens: []Token{
		{Name: "admin"}, {Name: "a", Prefix: "team-a/"}, {Name: "a-ops", Prefix: "team-a/ops/"}, {Name: "b", Prefix: "team-b/"},
	}}
	for name, want := range map[string]string{
		"team-a/x.jsonl":       "/srv/ws/team-a",
		"team-a/ops/y.jsonl":   "/srv/ws/team-a/ops",
		"team-b/z.jsonl":       "/srv/ws/team-b",
		"team-ab/z.jsonl":      "/srv/ws",
		"loose.jsonl":          "/srv/ws",
		"team-a":               "/srv/ws",
		"other/team-a/x.jsonl": "/srv/ws",
	} {
		if got := s.WorkspaceRootFor(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if got := (Server{Tokens: s.Tokens}).WorkspaceRootFor("team-a/x.jsonl"); got != "" {
		t.Errorf("no workspaceRoot: %q, want none", got)
	}
}

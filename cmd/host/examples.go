package main

import "github.com/spf13/cobra"

// examples are the Example sections of the commands, by command path. They
// live together so the set reads as one tour; TestEveryCommandHasExamples
// fails when a command has none.
var examples = map[string]string{
	"pith": `  pith context session.jsonl
  pith compact --dry-run session.jsonl
  pith --version`,
	"pith context": `  # what the model would see, and its token total
  pith context session.jsonl
  # the context at another entry, as JSON
  pith context --leaf 3f2a9c1b --json session.jsonl`,
	"pith tree": `  pith tree session.jsonl
  # a long session: the first 200 entries, no nested branches
  pith tree --limit 200 --depth 0 session.jsonl
  pith tree --json session.jsonl | jq '.entries[] | select(.labels)'`,
	"pith migrate": `  # upgrade an old pi session file to version 3
  pith migrate --out new.jsonl old.jsonl
  pith migrate --in-place old.jsonl
  # --out replaces an existing file only when told to
  pith migrate --force --out new.jsonl old.jsonl
  # a session stored in PostgreSQL, rewritten there under its lease
  pith migrate --in-place --store postgres://pith@db.internal/pith team-a/task-42.jsonl`,
	"pith compact": `  # see what would be summarized and kept
  pith compact --dry-run session.jsonl
  # compact with the built-in summarizer (no network)
  pith compact session.jsonl
  # with a local OpenAI-compatible server and the plugins of a config file
  pith compact --provider openai --base-url http://127.0.0.1:11434/v1 --model qwen3 --config pith.yaml session.jsonl
  # a session shared by several hosts, under its lease (exit 5 while another host compacts it)
  pith compact --store postgres://pith@db.internal/pith team-a/task-42.jsonl
  # in a running pith serve, whose plugins are already started (NAME below its sessions.root)
  pith compact --serve 127.0.0.1:7420 team-a/task-42.jsonl`,
	"pith propose": `  # what Pith would write for pi's compaction; the file is only read
  echo '{"reason":"manual"}' | pith propose compact --config pith.yaml session.jsonl
  # a branch summary for a tree navigation from pi's leaf
  echo '{"targetId":"3f2a9c1b","oldLeafId":"9d0e1f2a","summarize":true}' | pith propose navigate session.jsonl
  # the plugins learn what pi saved
  echo '{"compactionEntry":{…},"fromExtension":true}' | pith propose notify-compact session.jsonl`,
	"pith prune": `  pith prune --dry-run session.jsonl
  pith prune session.jsonl
  # put every pruned tool output back
  pith prune --restore session.jsonl
  # a stored session: the originals are kept in the store beside it
  pith prune --store postgres://pith@db.internal/pith team-a/task-42.jsonl`,
	"pith navigate": `  # move the leaf, summarizing the branch left behind
  pith navigate --to 3f2a9c1b --summarize session.jsonl
  pith navigate --to 3f2a9c1b --dry-run session.jsonl
  pith navigate --store postgres://pith@db.internal/pith --to 3f2a9c1b team-a/task-42.jsonl
  # in a running pith serve, with its plugins
  pith navigate --serve 127.0.0.1:7420 --to 3f2a9c1b --summarize team-a/task-42.jsonl`,
	"pith label": `  pith label session.jsonl 3f2a9c1b no-compact
  pith label --clear session.jsonl 3f2a9c1b
  pith label --json session.jsonl 3f2a9c1b reviewed | jq -r .entryId
  pith label --store /var/lib/pith/sessions team-a/task-42.jsonl 3f2a9c1b no-compact`,
	"pith config": `  pith config validate pith.yaml
  pith config show --config pith.yaml --format json`,
	"pith config validate": `  pith config validate pith.yaml
  pith config validate --no-env base.yaml team.toml`,
	"pith config show": `  # the effective configuration: defaults, file, then PITH_ variables
  pith config show --config pith.yaml
  pith config show --format toml`,
	"pith plugins": `  pith plugins check --config pith.yaml`,
	"pith plugins check": `  # start every configured plugin, ask it what it handles, stop it
  pith plugins check --config pith.yaml
  pith plugins check --config pith.yaml --json --timeout 30s`,
	"pith serve": `  pith serve --config pith.yaml --listen 127.0.0.1:7777
  pith serve --listen unix:/run/user/1000/pith.sock --metrics 127.0.0.1:9464`,
	"pith serve hash-token": `  # make a new token for team-a/: prints it once, and the config entry with its hash
  pith serve hash-token --generate --name team-a --prefix team-a/
  # hash a token you already have (read from standard input)
  printf '%s' "$TOKEN" | pith serve hash-token --name ci --prefix ci/`,
	"pith export": `  # a session of a PostgreSQL store as JSONL, byte for byte as it was imported
  pith export --store postgres://pith@db.internal/pith team-a/task-42.jsonl --out task-42.jsonl`,
	"pith import": `  # move a session file into a PostgreSQL store under a name
  pith import --store postgres://pith@db.internal/pith task-42.jsonl team-a/task-42.jsonl`,
	"pith version": `  pith version
  pith --version`,
	"pith view": `  # a read-only page of the session on loopback; prints its URL
  pith view session.jsonl
  pith view --listen 127.0.0.1:8080 session.jsonl`,
}

// addExamples sets each command's Example from examples, unless the
// command carries its own.
func addExamples(c *cobra.Command) {
	if ex, ok := examples[c.CommandPath()]; ok && c.Example == "" {
		c.Example = ex
	}
	for _, sub := range c.Commands() {
		addExamples(sub)
	}
}

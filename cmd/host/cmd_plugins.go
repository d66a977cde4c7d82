package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/checksum"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/pith-dev/pith/internal/wiring"
	"github.com/spf13/cobra"
)

// newPluginsCommand is `pith plugins`: inspect the configured plugins.
func newPluginsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Inspect the configured hook plugins",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newPluginsCheckCommand())
	return cmd
}

func newPluginsCheckCommand() *cobra.Command {
	var (
		file     string
		asJSON   bool
		timeout  time.Duration
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Start each configured plugin once, report what it handles, and stop it",
		Long: "Load the configuration (--config, else $PITH_CONFIG, else\n" +
			"~/.config/pith/config.yaml if present), then start every plugin in its list as\n" +
			"the daemon would — checksum, go-plugin handshake with mutual TLS, Describe, one\n" +
			"health check — print its name, version, events, checksum status\n" +
			"and handshake time, and the names (never the values) of the environment\n" +
			"variables it receives, and stop it. Exits non-zero when any plugin fails, with a\n" +
			"one-line reason per failure. No plugin process outlives the command, also on\n" +
			"SIGINT or SIGTERM.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				file = configPath(file)
			}
			level := hclog.LevelFromString(logLevel)
			if level == hclog.NoLevel {
				return fmt.Errorf("--log-level %q: want trace, debug, info, warn, error or off", logLevel)
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %s: must be positive", timeout)
			}
			cfg, err := config.Load(file)
			if errors.Is(err, config.ErrNotFound) {
				return err // one line, naming the file
			}
			if err != nil {
				where := file
				if where == "" {
					where = "environment"
				}
				reportConfigError(cmd, where, err)
				return configRejected(where+": configuration invalid", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logOpts := hclog.LoggerOptions{Name: "pith", Level: level, Output: termsafe.NewWriter(cmd.ErrOrStderr()), DisableTime: true}
			// The same version as every other command sends: a plugin may
			// answer by it, and check must see what a compaction would.
			results := checkPlugins(ctx, wiring.PluginSpecs(cfg), logOpts, pluginhost.Options{StartTimeout: timeout, HealthInterval: -1, HostVersion: version})
			return reportPluginChecks(cmd.OutOrStdout(), cmd.ErrOrStderr(), file, results, asJSON, ctx.Err() != nil)
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "configuration file (default $PITH_CONFIG, else ~/.config/pith/config.yaml if present)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "time each plugin has to start and answer Describe")
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "level of host and plugin log lines shown on stderr")
	return cmd
}

// Checksum statuses.
const (
	checksumNotConfigured = "not configured"
	checksumVerified      = "verified"
	checksumMismatch      = "MISMATCH"
	checksumUnreadable    = "unreadable"
)

// pluginCheck is the result for one plugin.
type pluginCheck struct {
	Name         string          `json:"name"`
	Path         string          `json:"path"`
	ReportedName string          `json:"reportedName,omitempty"`
	Version      string          `json:"version,omitempty"`
	Events       []hooks.EventID `json:"events"`
	Checksum     string          `json:"sha256"`
	// Env names the environment variables the plugin receives; never
	// their values.
	Env []string `json:"env"`
	// HandshakeMs is process start, handshake and Describe, in milliseconds.
	HandshakeMs float64 `json:"handshakeMs,omitempty"`
	OK          bool    `json:"ok"`
	Error       string  `json:"error,omitempty"`
}

// checkPlugins starts, checks and stops each plugin in turn, logging with
// logOpts. It stops at the first plugin after ctx ends; those not checked
// are reported as interrupted. Every plugin it started is stopped before it
// returns.
func checkPlugins(ctx context.Context, specs []pluginhost.Spec, logOpts hclog.LoggerOptions, opts pluginhost.Options) []pluginCheck {
	results := make([]pluginCheck, 0, len(specs))
	for _, spec := range specs {
		r := pluginCheck{Name: spec.Name, Path: spec.Path, Events: []hooks.EventID{}, Checksum: checksumStatus(spec), Env: spec.EnvNames(os.LookupEnv)}
		if ctx.Err() != nil {
			r.Error = "interrupted before it was started"
			results = append(results, r)
			continue
		}
		// The plugin's own last words (a usage error on stderr, say) are
		// the useful reason when it fails to start, whatever the log level.
		log := hclog.NewInterceptLogger(&logOpts)
		said := &lastMessage{}
		log.RegisterSink(said)
		opts.Logger = log
		started := checkPlugin(ctx, spec, opts, &r)
		// go-plugin's errors run over several lines (notes, the plugin's
		// stderr); the report keeps one line and the plugin's last words.
		r.Error, _, _ = strings.Cut(strings.TrimSpace(r.Error), "\n")
		r.Error = strings.TrimSpace(r.Error)
		if !started && r.Error != "" {
			if msg := said.wait(stderrGrace); msg != "" && !strings.Contains(r.Error, msg) {
				r.Error += " (plugin said: " + msg + ")"
			}
		}
		results = append(results, r)
	}
	return results
}

// checkPlugin checks one plugin into r and reports whether a process was
// started and answered Describe.
func checkPlugin(ctx context.Context, spec pluginhost.Spec, opts pluginhost.Options, r *pluginCheck) (started bool) {
	if err := spec.Validate(); err != nil {
		r.Error = err.Error()
		return false
	}
	if r.Checksum == checksumMismatch {
		// The supervisor would refuse it too; say so without starting it.
		r.Error = fmt.Sprintf("%s does not match the configured sha256; not started", spec.Path)
		return false
	}
	sup := pluginhost.NewSupervisor(spec, opts)
	// Stop is safe whatever happened: it ends a running process and makes a
	// start that is still finishing shut its process down.
	defer sup.Stop(context.WithoutCancel(ctx))
	start := time.Now()
	if err := sup.Start(ctx); err != nil {
		if errors.Is(err, pluginhost.ErrChecksumMismatch) {
			r.Checksum = checksumMismatch // swapped after we hashed it
		}
		r.Error = err.Error()
		return false
	}
	r.HandshakeMs = float64(time.Since(start).Microseconds()) / 1000
	d := sup.Description()
	r.ReportedName, r.Version = d.Name, d.Version
	if d.Events != nil {
		r.Events = d.Events
	}
	pctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := sup.Ping(pctx); err != nil {
		r.Error = fmt.Sprintf("health check: %v", err)
		return true
	}
	if len(d.Events) == 0 {
		r.Error = "handles no event; the host would never call it"
		return true
	}
	r.OK = true
	return true
}

// stderrGrace bounds the wait for a failed plugin's last stderr line: the
// process may be gone before go-plugin has copied its output.
const stderrGrace = 250 * time.Millisecond

// lastMessage is a log sink keeping the last line of information or worse.
type lastMessage struct {
	mu  sync.Mutex
	msg string
}

// wait returns the last message, waiting up to grace for one to arrive.
func (l *lastMessage) wait(grace time.Duration) string {
	deadline := time.Now().Add(grace)
	for {
		l.mu.Lock()
		msg := l.msg
		l.mu.Unlock()
		if msg != "" || time.Now().After(deadline) {
			return msg
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *lastMessage) Accept(_ string, level hclog.Level, msg string, _ ...any) {
	if level < hclog.Info || strings.TrimSpace(msg) == "" {
		return
	}
	l.mu.Lock()
	l.msg = strings.TrimSpace(msg)
	l.mu.Unlock()
}

// checksumStatus hashes the binary when the configuration pins it.
func checksumStatus(spec pluginhost.Spec) string {
	if spec.SHA256 == "" {
		return checksumNotConfigured
	}
	err := checksum.VerifyFile(spec.Path, spec.SHA256)
	switch {
	case err == nil:
		return checksumVerified
	case errors.Is(err, checksum.ErrMismatch), errors.Is(err, checksum.ErrMalformed):
		return checksumMismatch
	default:
		return checksumUnreadable
	}
}

// reportPluginChecks prints the results and returns the command's error.
func reportPluginChecks(stdout, stderr io.Writer, file string, results []pluginCheck, asJSON, interrupted bool) error {
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Config      string        `json:"config,omitempty"`
			OK          bool          `json:"ok"`
			Interrupted bool          `json:"interrupted,omitempty"`
			Plugins     []pluginCheck `json:"plugins"`
		}{file, failed == 0 && !interrupted, interrupted, results}); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	} else if len(results) == 0 {
		where := "the configuration"
		if file != "" {
			where = file
		}
		fmt.Fprintf(stdout, "no plugins configured in %s\n", where)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PLUGIN\tVERSION\tEVENTS\tSHA256\tHANDSHAKE\tRESULT")
		for _, r := range results {
			version, events, handshake, result := "-", "-", "-", "ok"
			if r.Version != "" {
				version = r.Version
			}
			if len(r.Events) > 0 {
				names := make([]string, len(r.Events))
				for i, e := range r.Events {
					names[i] = string(e)
				}
				events = strings.Join(names, ",")
			}
			if r.HandshakeMs > 0 {
				handshake = fmt.Sprintf("%.1fms", r.HandshakeMs)
			}
			if !r.OK {
				result = "FAILED"
			}
			// What the plugin reported: escaped (termsafe).
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, cell(version), cell(events), r.Checksum, handshake, result)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		// Names only: the values may be secrets.
		fmt.Fprintln(stdout, "\nENVIRONMENT (names each plugin receives)")
		for _, r := range results {
			fmt.Fprintf(stdout, "%s: %s\n", r.Name, strings.Join(r.Env, " "))
		}
	}
	for _, r := range results {
		if !r.OK {
			fmt.Fprintf(stderr, "%s: %s\n", r.Name, termsafe.Line(r.Error))
		}
	}
	switch {
	case interrupted:
		return &exitError{code: 130, err: errors.New("plugin check interrupted; every started plugin was stopped")}
	case failed > 0:
		return fmt.Errorf("%d of %d plugins failed the check", failed, len(results))
	}
	return nil
}

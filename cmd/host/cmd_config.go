package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/config"
	"github.com/spf13/cobra"
)

// newConfigCommand is `pith config`: check configuration files and show the
// configuration in effect.
func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check configuration files and show the effective configuration",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newConfigValidateCommand(), newConfigShowCommand())
	return cmd
}

func newConfigValidateCommand() *cobra.Command {
	var noEnv, strict bool
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check configuration files, reporting every problem",
		Long: "Load each file as the daemon would (defaults, the file, then PITH_ environment\n" +
			"overrides) and check the whole result. Every problem is printed on its own line\n" +
			"as FILE: key: reason. Exits non-zero when any file is invalid.\n\n" +
			"A key that is accepted but has no effect in this build (see InertKeys in the\n" +
			"config package) is reported as a warning; --strict counts it as a problem.",
		Args: oneOrMore(arg{"FILE", "a configuration file to check"}),
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts []config.Option
			if noEnv {
				opts = append(opts, config.WithoutEnv())
			}
			bad, problems := 0, 0
			for _, path := range args {
				if _, err := config.Load(path, opts...); err != nil {
					bad++
					problems += reportConfigError(cmd, path, err)
					continue
				}
				inert, err := config.InertSet(path, opts...)
				if err != nil {
					return err
				}
				for _, p := range inert {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", path, p)
				}
				if strict && len(inert) > 0 {
					bad++
					problems += len(inert)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", path)
			}
			switch {
			case bad == 0:
				return nil
			case len(args) == 1:
				return invalidConfig("%s: configuration invalid (%s)", args[0], plural(problems, "problem"))
			}
			return invalidConfig("%d of %d configuration files invalid (%s)", bad, len(args), plural(problems, "problem"))
		},
	}
	cmd.Flags().BoolVar(&noEnv, "no-env", false, "ignore PITH_ environment overrides")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail on keys that are accepted but have no effect")
	return cmd
}

// reportConfigError prints one line per problem, each naming the file, and
// returns how many it printed.
func reportConfigError(cmd *cobra.Command, path string, err error) int {
	w := cmd.ErrOrStderr()
	var verr *config.ValidationError
	if errors.As(err, &verr) {
		for _, p := range verr.Problems {
			fmt.Fprintf(w, "%s: %s\n", path, p)
		}
		return len(verr.Problems)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) {
		msg = path + ": " + msg
	}
	fmt.Fprintln(w, msg)
	return 1
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func newConfigShowCommand() *cobra.Command {
	var (
		file   string
		format string
		noEnv  bool
	)
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration, secrets masked",
		Long: "Print the configuration in effect: defaults, then the file (--config, else\n" +
			"$PITH_CONFIG, else ~/.config/pith/config.yaml if present, else none), then\n" +
			"PITH_ environment overrides. Secret-looking values are masked. The output loads\n" +
			"back as a configuration file.",
		Args: positional(nil),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				file = configPath(file)
			}
			f := config.Format(strings.ToLower(format))
			if f == "yml" {
				f = config.FormatYAML
			}
			if f != config.FormatYAML && f != config.FormatTOML && f != config.FormatJSON {
				return usageError{fmt.Errorf("--format %q: want yaml, toml or json", format)}
			}
			var opts []config.Option
			if noEnv {
				opts = append(opts, config.WithoutEnv())
			}
			cfg, err := config.Load(file, opts...)
			if errors.Is(err, config.ErrNotFound) {
				return err // one line, naming the file
			}
			if err != nil {
				if file == "" {
					file = "environment"
				}
				reportConfigError(cmd, file, err)
				return invalidConfig("%s: configuration invalid", file)
			}
			out, err := cfg.Render(f, true)
			if err != nil {
				return err
			}
			if f != config.FormatJSON {
				source := file
				if source == "" {
					source = "(no file)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "# Effective configuration: defaults < %s < %s* environment. Secrets masked.\n", source, config.EnvPrefix)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "configuration file (.yaml, .toml or .json; default $PITH_CONFIG, else ~/.config/pith/config.yaml if present)")
	cmd.Flags().StringVar(&format, "format", "yaml", "output format: yaml, toml or json")
	completeWords(cmd, "format", "yaml", "toml", "json")
	cmd.Flags().BoolVar(&noEnv, "no-env", false, "ignore PITH_ environment overrides")
	return cmd
}

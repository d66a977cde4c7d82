// Command gensessions writes synthetic pi sessions with sessiongen.
//
//	gensessions -dir DIR -n 64 -min 30 -max 400 -seed 1 -profile small \
//	    [-versions 3,2,1] [-malformed-every 4] [-escaped 0.3] [-odd 0.5] [-manifest]
//
// Files are named gen-NNN.jsonl. With -manifest it also writes
// DIR/manifest.json listing each file with the exact Options it was made
// with and the keepRecentTokens values the conformance oracle should prepare
// it with.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pith-dev/pith/internal/sessiongen"
)

type manifestFile struct {
	File             string             `json:"file"`
	Entries          int                `json:"entries"`
	Seed             uint64             `json:"seed"`
	ReserveTokens    int                `json:"reserveTokens"`
	KeepRecentTokens []int              `json:"keepRecentTokens"`
	Options          sessiongen.Options `json:"options"`
}

type manifest struct {
	Generator string         `json:"generator"`
	Profile   string         `json:"profile"`
	Files     []manifestFile `json:"files"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gensessions:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	flag := flag.NewFlagSet("gensessions", flag.ContinueOnError)
	dir := flag.String("dir", "", "output directory (created)")
	n := flag.Int("n", 10, "number of sessions")
	lo := flag.Int("min", 30, "minimum entries per session")
	hi := flag.Int("max", 400, "maximum entries per session")
	seed := flag.Uint64("seed", 1, "base seed")
	profile := flag.String("profile", "small", "options profile: "+strings.Join(sessiongen.Profiles, ", "))
	versions := flag.String("versions", "3", "comma-separated file versions, cycled over the files")
	malformedEvery := flag.Int("malformed-every", 0, "every k-th file gets malformed lines and a torn tail (0: none)")
	escaped := flag.Float64("escaped", -1, "override EscapedStrings (-1: profile value)")
	odd := flag.Float64("odd", -1, "override OddArguments (-1: profile value)")
	compactions := flag.Float64("compaction", -1, "override Compaction (-1: profile value); 0 makes one long path for benchmarks")
	branches := flag.Float64("branch", -1, "override Branch (-1: profile value)")
	writeManifest := flag.Bool("manifest", false, "also write manifest.json")
	if err := flag.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *n < 1 || *lo < 1 || *hi < *lo {
		return errors.New("need -dir, -n >= 1 and 1 <= -min <= -max")
	}
	var vs []int
	for _, f := range strings.Split(*versions, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("bad -versions %q: %w", *versions, err)
		}
		vs = append(vs, v)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", *dir, err)
	}
	r := rand.New(rand.NewPCG(*seed, 7))
	keeps := []int{300, 500, 800, 1200, 2000, 3000, 5000, 8000, 20000}
	m := manifest{Generator: "internal/sessiongen/cmd/gensessions", Profile: *profile}
	for i := 0; i < *n; i++ {
		s := *seed*1000 + uint64(i)
		entries := *lo + r.IntN(*hi-*lo+1)
		opts, err := sessiongen.Profile(*profile, s, entries)
		if err != nil {
			return err
		}
		opts.Version = vs[i%len(vs)]
		if *malformedEvery > 0 && i%*malformedEvery == *malformedEvery-1 {
			opts.Malformed, opts.TornTail = 0.03, true
		}
		if *escaped >= 0 {
			opts.EscapedStrings = *escaped
		}
		if *compactions >= 0 {
			opts.Compaction = *compactions
		}
		if *branches >= 0 {
			opts.Branch = *branches
		}
		if *odd >= 0 {
			opts.OddArguments = *odd
		}
		name := fmt.Sprintf("gen-%03d.jsonl", i)
		if err := sessiongen.GenerateFile(filepath.Join(*dir, name), opts); err != nil {
			return err
		}
		k1 := keeps[r.IntN(len(keeps))]
		k2 := keeps[r.IntN(len(keeps))]
		ks := []int{k1}
		if k2 != k1 {
			ks = append(ks, k2)
		}
		m.Files = append(m.Files, manifestFile{File: name, Entries: entries, Seed: s, ReserveTokens: 16384, KeepRecentTokens: ks, Options: opts})
	}
	if !*writeManifest {
		return nil
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(*dir, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

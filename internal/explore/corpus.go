package explore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// corpusLimit bounds the saved corpus: beyond it the earliest seeds found are kept.
const corpusLimit = 200

// loadCorpus reads the saved seeds of dir (*.yaml, in name order); a missing directory is an empty corpus.
// A seed that no longer loads (the scenario format changed) is skipped, and said so.
func loadCorpus(dir string) (seeds []*simulate.Scenario, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the exploration corpus: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		sc, err := simulate.LoadScenario(filepath.Join(dir, n))
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		seeds = append(seeds, sc)
	}
	return seeds, skipped, nil
}

// saveCorpus replaces the saved corpus of dir with seeds: one YAML file per seed, named by the hash of its
// content (so the same seed is one file however often it is found).
func saveCorpus(dir string, seeds []*simulate.Scenario) error {
	if len(seeds) > corpusLimit {
		seeds = seeds[:corpusLimit]
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save the exploration corpus: %w", err)
	}
	keep := map[string]bool{}
	for _, sc := range seeds {
		body, err := sc.YAML()
		if err != nil {
			return fmt.Errorf("save the exploration corpus: %w", err)
		}
		sum := sha256.Sum256(body)
		name := hex.EncodeToString(sum[:8]) + ".yaml"
		keep[name] = true
		head := "# astrabox exploration corpus: a scenario that reached provider code no earlier one had.\n" +
			"# Replayed first by the next `--explore` run; `--explore-fresh` ignores the corpus.\n"
		if err := os.WriteFile(filepath.Join(dir, name), append([]byte(head), body...), 0o644); err != nil {
			return fmt.Errorf("save the exploration corpus: %w", err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("save the exploration corpus: %w", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") && !keep[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("save the exploration corpus: %w", err)
			}
		}
	}
	return nil
}

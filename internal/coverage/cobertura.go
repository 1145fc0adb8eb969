package coverage

import (
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
)

// CoberturaDoctype is the document type declaration of the Cobertura XML the kit writes (coverage-04.dtd).
const CoberturaDoctype = `<!DOCTYPE coverage SYSTEM "http://cobertura.sourceforge.net/xml/coverage-04.dtd">`

type cbCoverage struct {
	XMLName         xml.Name   `xml:"coverage"`
	LineRate        string     `xml:"line-rate,attr"`
	BranchRate      string     `xml:"branch-rate,attr"`
	LinesCovered    int        `xml:"lines-covered,attr"`
	LinesValid      int        `xml:"lines-valid,attr"`
	BranchesCovered int        `xml:"branches-covered,attr"`
	BranchesValid   int        `xml:"branches-valid,attr"`
	Complexity      string     `xml:"complexity,attr"`
	Version         string     `xml:"version,attr"`
	Timestamp       int64      `xml:"timestamp,attr"`
	Sources         []string   `xml:"sources>source"`
	Packages        cbPackages `xml:"packages"`
}

// Wrappers, so that an empty list is still written as its (required) element.
type cbPackages struct {
	Package []cbPackage `xml:"package"`
}

type cbLineList struct {
	Line []cbLine `xml:"line"`
}

type cbPackage struct {
	Name       string    `xml:"name,attr"`
	LineRate   string    `xml:"line-rate,attr"`
	BranchRate string    `xml:"branch-rate,attr"`
	Complexity string    `xml:"complexity,attr"`
	Classes    []cbClass `xml:"classes>class"`
}

type cbClass struct {
	Name       string     `xml:"name,attr"`
	Filename   string     `xml:"filename,attr"`
	LineRate   string     `xml:"line-rate,attr"`
	BranchRate string     `xml:"branch-rate,attr"`
	Complexity string     `xml:"complexity,attr"`
	Methods    struct{}   `xml:"methods"`
	Lines      cbLineList `xml:"lines"`
}

type cbLine struct {
	Number            int    `xml:"number,attr"`
	Hits              int    `xml:"hits,attr"`
	Branch            string `xml:"branch,attr,omitempty"`
	ConditionCoverage string `xml:"condition-coverage,attr,omitempty"`
}

// CoberturaOptions are what the Cobertura file says besides the profile.
type CoberturaOptions struct {
	// Root is the source root: file names are relative to it and it is the file's one <source>.
	Root string
	// Version is the kit's version; Timestamp the run's time (seconds since the epoch).
	Version   string
	Timestamp int64
}

func rate(n, of int) string {
	if of == 0 {
		return "1"
	}
	return strconv.FormatFloat(float64(n)/float64(of), 'f', 4, 64)
}

// WriteCobertura writes p as Cobertura XML (coverage-04.dtd), the format GitLab's coverage visualisation,
// Codecov and Jenkins read: one package per directory, one class per file, line hits of 1 or 0, and the
// condition coverage of each line with branch points.
func WriteCobertura(w io.Writer, p *Profile, o CoberturaOptions) error {
	t := p.Totals()
	doc := cbCoverage{LineRate: rate(t.Reached, t.Lines), BranchRate: rate(t.BranchesTaken, t.Branches),
		LinesCovered: t.Reached, LinesValid: t.Lines, BranchesCovered: t.BranchesTaken, BranchesValid: t.Branches,
		Complexity: "0", Version: o.Version, Timestamp: o.Timestamp}
	if o.Root != "" {
		doc.Sources = []string{o.Root}
	}
	pkgs := map[string]*cbPackage{}
	pkgTotals := map[string]*Totals{}
	var names []string
	for i := range p.Files {
		f := &p.Files[i]
		rel := RelPath(o.Root, f.Path)
		dir := path.Dir(rel)
		name := strings.ReplaceAll(strings.Trim(dir, "/"), "/", ".")
		if dir == "." {
			name = "."
		}
		pk := pkgs[name]
		if pk == nil {
			pk = &cbPackage{Name: name, Complexity: "0"}
			pkgs[name] = pk
			pkgTotals[name] = &Totals{}
			names = append(names, name)
		}
		ft := f.Totals()
		pt := pkgTotals[name]
		pt.Lines += ft.Lines
		pt.Reached += ft.Reached
		pt.Branches += ft.Branches
		pt.BranchesTaken += ft.BranchesTaken
		pk.Classes = append(pk.Classes, cbClass{Name: strings.TrimSuffix(path.Base(rel), ".py"), Filename: rel,
			LineRate: rate(ft.Reached, ft.Lines), BranchRate: rate(ft.BranchesTaken, ft.Branches), Complexity: "0",
			Lines: cbLineList{Line: cbLines(f)}})
	}
	sort.Strings(names)
	for _, n := range names {
		pk := pkgs[n]
		pt := pkgTotals[n]
		pk.LineRate, pk.BranchRate = rate(pt.Reached, pt.Lines), rate(pt.BranchesTaken, pt.Branches)
		doc.Packages.Package = append(doc.Packages.Package, *pk)
	}
	if _, err := io.WriteString(w, xml.Header+CoberturaDoctype+"\n"); err != nil {
		return fmt.Errorf("write cobertura: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write cobertura: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write cobertura: %w", err)
	}
	return nil
}

func cbLines(f *File) []cbLine {
	reached := setOf(f.Reached)
	taken, total := map[int]int{}, map[int]int{}
	for _, br := range f.Branches {
		total[br.Line] += 2
		for _, t := range br.Taken {
			if t {
				taken[br.Line]++
			}
		}
	}
	out := make([]cbLine, 0, len(f.Lines))
	for _, l := range f.Lines {
		ln := cbLine{Number: l}
		if reached[l] {
			ln.Hits = 1
		}
		if n := total[l]; n > 0 {
			ln.Branch = "true"
			ln.ConditionCoverage = fmt.Sprintf("%d%% (%d/%d)", 100*taken[l]/n, taken[l], n)
		}
		out = append(out, ln)
	}
	return out
}

package coverage

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteLCOV writes p in the LCOV tracefile format (the one geninfo writes and genhtml, Codecov and most CI
// tools read), one record per file with paths relative to root. A line's count is 1 when it ran (the kit
// records whether a line ran, not how often). Branch directions of a line that never ran are "-".
func WriteLCOV(w io.Writer, p *Profile, root string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "TN:astrabox")
	for i := range p.Files {
		writeLCOVFile(bw, &p.Files[i], root)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write lcov: %w", err)
	}
	return nil
}

func writeLCOVFile(w *bufio.Writer, f *File, root string) {
	fmt.Fprintf(w, "SF:%s\n", RelPath(root, f.Path))
	reached := setOf(f.Reached)
	var fns []Function
	seen := map[string]bool{}
	for _, fn := range f.Functions {
		if strings.ContainsAny(fn.Name, "<>") || seen[fn.Name] {
			continue // lambdas, generator expressions: no name a reader would know
		}
		seen[fn.Name] = true
		fns = append(fns, fn)
	}
	hit := 0
	for _, fn := range fns {
		fmt.Fprintf(w, "FN:%d,%s\n", fn.First, fn.Name)
	}
	for _, fn := range fns {
		n := 0
		for _, l := range f.Lines {
			if l > fn.First && l <= fn.Last && reached[l] {
				n = 1
				break
			}
		}
		hit += n
		fmt.Fprintf(w, "FNDA:%d,%s\n", n, fn.Name)
	}
	fmt.Fprintf(w, "FNF:%d\nFNH:%d\n", len(fns), hit)
	taken, block := 0, map[int]int{}
	for _, br := range f.Branches {
		b := block[br.Line]
		block[br.Line]++
		for d, t := range br.Taken {
			switch {
			case !reached[br.Line]:
				fmt.Fprintf(w, "BRDA:%d,%d,%d,-\n", br.Line, b, d)
			case t:
				taken++
				fmt.Fprintf(w, "BRDA:%d,%d,%d,1\n", br.Line, b, d)
			default:
				fmt.Fprintf(w, "BRDA:%d,%d,%d,0\n", br.Line, b, d)
			}
		}
	}
	if len(f.Branches) > 0 {
		fmt.Fprintf(w, "BRF:%d\nBRH:%d\n", 2*len(f.Branches), taken)
	}
	for _, l := range f.Lines {
		n := 0
		if reached[l] {
			n = 1
		}
		fmt.Fprintf(w, "DA:%d,%d\n", l, n)
	}
	fmt.Fprintf(w, "LF:%d\nLH:%d\nend_of_record\n", len(f.Lines), len(f.Reached))
}

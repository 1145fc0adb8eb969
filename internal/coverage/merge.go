package coverage

// AddProfile adds a whole profile (a shard's): its files' reached lines and branch directions, its callbacks,
// its scenarios (a scenario already present keeps its first counts), its checks and notes.
func (b *Builder) AddProfile(p *Profile) {
	if p == nil {
		return
	}
	if p.Mode != "" {
		b.modes[p.Mode] = true
	}
	for _, n := range p.Notes {
		b.Note(n)
	}
	for i := range p.Files {
		f := &p.Files[i]
		lines := make([]int, len(f.Branches))
		for j, br := range f.Branches {
			lines[j] = br.Line
		}
		if f.Error == "" {
			b.setStatic(f.Path, f.Lines, lines, f.Functions, "")
		}
		acc := b.file(f.Path)
		for _, l := range f.Reached {
			acc.reached[l] = true
		}
		if len(acc.branches) == len(f.Branches) {
			for j, br := range f.Branches {
				for d, taken := range br.Taken {
					if taken {
						acc.dirs[2*j+d] = true
					}
				}
			}
		}
	}
	for _, cb := range p.Callbacks {
		if im := cb.Implementation; im != nil {
			if _, ok := b.impl[cb.Name]; !ok {
				b.Implement(cb.Name, im.Path, im.First)
			}
		}
		for _, r := range cb.Files {
			b.addLines(cb.Name, r.Path, r.Lines)
			b.addDirs(cb.Name, r.Path, r.Branches)
		}
	}
	for _, s := range p.Scenarios {
		if _, ok := b.byScen[s.Name]; ok {
			continue
		}
		if _, ok := b.given[s.Name]; ok {
			continue
		}
		b.given[s.Name] = s
		b.scenarios = append(b.scenarios, s.Name)
	}
	for _, c := range p.Checks {
		if _, ok := b.checks[c.Check]; !ok {
			b.checks[c.Check] = append([]string(nil), c.Callbacks...)
		}
	}
}

// Merge merges profiles (shards of one run): reached lines and branch directions are the union; a file's
// executable lines come from the first profile that knows them. Nil profiles are ignored; the result is nil
// when all are.
func Merge(profiles ...*Profile) *Profile {
	b := NewBuilder()
	any := false
	for _, p := range profiles {
		if p != nil {
			any = true
			b.AddProfile(p)
		}
	}
	if !any {
		return nil
	}
	return b.Profile()
}

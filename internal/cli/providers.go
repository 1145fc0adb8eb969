package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
)

func newProvidersCmd(f *Factory) *cobra.Command {
	var project, python, provider, format string
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "List the provider declarations found, load each, and show what it implements",
		Long: `List every provider declaration of the project and of the interpreter's installed
distributions, load each in the harness, and show whether its target is a RuntimePreparationProvider
subclass, its name, which callbacks it overrides (sync or async) and its plan for the default
configuration (secrets masked).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usagef("unknown format %q; use text or json", format)
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			t, decls, err := conformance.ResolveAll(ctx, conformance.Options{Project: project, Python: python, Provider: provider, Getenv: f.Getenv})
			if err != nil {
				return asUndecided(err)
			}
			if f.Verbose {
				fmt.Fprintf(f.IO.Err, "interpreter: %s (Python %s, chosen by %s)\n", t.Python.Path, t.Python.VersionString(), t.Python.Reason)
			}
			if !f.Quiet {
				for _, w := range t.Warnings {
					fmt.Fprintln(f.IO.Err, "warning: "+w)
				}
			}
			var descs []*conformance.Description
			for _, d := range decls {
				descs = append(descs, conformance.Describe(ctx, t, d))
			}
			if format == "json" {
				return writeJSON(f.IO.Out, map[string]any{"project": t.Project.Dir, "python": t.Python.Path, "providers": descs})
			}
			s := f.IO.OutStyles()
			for i, d := range descs {
				if i > 0 {
					fmt.Fprintln(f.IO.Out)
				}
				fmt.Fprintf(f.IO.Out, "%s = %s\n  declared in %s\n", s.ID.Render(d.Name), d.Value, d.Source)
				if !d.Loaded {
					fmt.Fprintf(f.IO.Out, "  %s %s\n", s.Fail.Render("does not load:"), d.LoadError)
					continue
				}
				sub := s.Pass.Render("yes")
				if !d.IsSubclass {
					sub = s.Fail.Render("no")
				}
				fmt.Fprintf(f.IO.Out, "  subclass of RuntimePreparationProvider: %s\n", sub)
				if d.File != "" {
					fmt.Fprintf(f.IO.Out, "  defined at %s:%d\n", d.File, d.Line)
				}
				name := d.Provider
				if d.NameError != "" {
					name = s.Fail.Render(d.NameError)
				}
				fmt.Fprintf(f.IO.Out, "  name: %s\n", name)
				var over []string
				for _, m := range d.Methods {
					if m.Overridden {
						kind := "sync"
						if m.Async {
							kind = "async"
						}
						over = append(over, fmt.Sprintf("%s (%s)", m.Name, kind))
					}
				}
				if len(over) == 0 {
					over = []string{"none (every callback keeps its default)"}
				}
				fmt.Fprintf(f.IO.Out, "  overrides: %s\n", strings.Join(over, ", "))
				switch {
				case d.Plan != nil:
					fmt.Fprintf(f.IO.Out, "  plan (default configuration): session_bound=%v declaration=%s\n", d.Plan.SessionBound, string(d.Plan.Declaration))
				case d.PlanError != "":
					fmt.Fprintf(f.IO.Out, "  plan: %s\n", s.Fail.Render(d.PlanError))
				}
			}
			return nil
		},
	}
	projectFlags(cmd, &project, &python, &provider)
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func completeProviders(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	project, _ := cmd.Flags().GetString("project")
	t, decls, err := conformance.ResolveAll(cmd.Context(), conformance.Options{Project: project})
	if err != nil || t == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, d := range decls {
		if strings.HasPrefix(d.Name, toComplete) {
			out = append(out, d.Name+"\t"+d.Value)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// ProvidersOptions are the options of `astrabox providers`.
type ProvidersOptions struct {
	Project, Python, Provider string
	// Format is text or json, validated and lower-cased before the run.
	Format string
}

func newProvidersCmd(f *Factory) *cobra.Command { return NewCmdProviders(f, nil) }

// NewCmdProviders builds `astrabox providers`; runF, when set, replaces the run (tests read the parsed and
// validated options through it).
func NewCmdProviders(f *Factory, runF func(*ProvidersOptions) error) *cobra.Command {
	o := &ProvidersOptions{}
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "List the provider declarations found, load each, and show what it implements",
		Long: `List every provider declaration of the project and of the interpreter's installed
distributions, load each in the harness, and show whether its target is a RuntimePreparationProvider
subclass, its name, which callbacks it overrides (sync or async) and its plan for the default
configuration (secrets masked).

Exit status: 0 when exactly one provider is declared (or chosen with --provider) and it loads as a
RuntimePreparationProvider subclass with a valid name; 2 otherwise (it does not load, is no subclass,
has an invalid name, or several providers conflict), so the command works as a smoke check.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := parseFormat(&o.Format, report.TextOrJSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return providersRun(cmd, f, o)
		},
	}
	projectFlags(cmd, &o.Project, &o.Python, &o.Provider)
	cmd.Flags().StringVar(&o.Format, "format", "text", "output format: text or json")
	return cmd
}

// providersRun resolves the project, describes every declaration and prints them.
func providersRun(cmd *cobra.Command, f *Factory, o *ProvidersOptions) error {
	ctx, cancel := signalContext(cmd.Context())
	defer cancel()
	t, decls, err := conformance.ResolveAll(ctx, conformance.Options{Project: o.Project, Python: o.Python, Provider: o.Provider, Getenv: f.Getenv})
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
	if o.Format == "json" {
		if err := writeJSON(f.IO.Out, map[string]any{"project": t.Project.Dir, "python": t.Python.Path, "providers": descs}); err != nil {
			return err
		}
		return providersVerdict(descs, o.Provider)
	}
	writeDescriptions(f.IO.Out, f.IO.OutStyles(), descs)
	return providersVerdict(descs, o.Provider)
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

// providersVerdict is the exit of `astrabox providers`: 2 (with the reason) when the platform could not start
// the project's provider: none is declared, several conflict without --provider, or the one there does not
// load, is no RuntimePreparationProvider subclass or has an invalid name.
func providersVerdict(descs []*conformance.Description, chosen string) error {
	if len(descs) == 0 {
		return &exitError{code: ExitUndecided, err: fmt.Errorf("no provider is declared in the entry-point group")}
	}
	if len(descs) > 1 && chosen == "" {
		names := make([]string, len(descs))
		for i, d := range descs {
			names[i] = d.Name
		}
		return &exitError{code: ExitUndecided, err: fmt.Errorf("%d providers are declared (%s): the platform refuses to start with more than one; keep one, or pick one with --provider",
			len(descs), strings.Join(names, ", "))}
	}
	var bad []string
	for _, d := range descs {
		switch {
		case !d.Loaded:
			bad = append(bad, d.Name+" does not load")
		case !d.IsSubclass:
			bad = append(bad, d.Name+" is not a RuntimePreparationProvider subclass")
		case d.NameError != "":
			bad = append(bad, d.Name+" has an invalid name")
		}
	}
	if len(bad) > 0 {
		return &exitError{code: ExitUndecided, err: fmt.Errorf("provider %s (details above)", strings.Join(bad, "; "))}
	}
	return nil
}

// writeDescriptions prints each provider declaration: where it is declared, whether it loads, what it
// overrides and its plan.
func writeDescriptions(w io.Writer, s term.Styles, descs []*conformance.Description) {
	for i, d := range descs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s = %s\n  declared in %s\n", s.ID.Render(d.Name), d.Value, d.Source)
		if !d.Loaded {
			fmt.Fprintf(w, "  %s %s\n", s.Fail.Render("does not load:"), d.LoadError)
			continue
		}
		sub := s.Pass.Render("yes")
		if !d.IsSubclass {
			sub = s.Fail.Render("no")
		}
		fmt.Fprintf(w, "  subclass of RuntimePreparationProvider: %s\n", sub)
		if d.File != "" {
			fmt.Fprintf(w, "  defined at %s:%d\n", d.File, d.Line)
		}
		name := d.Provider
		if d.NameError != "" {
			name = s.Fail.Render(d.NameError)
		}
		fmt.Fprintf(w, "  name: %s\n", name)
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
		fmt.Fprintf(w, "  overrides: %s\n", strings.Join(over, ", "))
		switch {
		case d.Plan != nil:
			fmt.Fprintf(w, "  plan (default configuration): session_bound=%v declaration=%s\n", d.Plan.SessionBound, string(d.Plan.Declaration))
		case d.PlanError != "":
			fmt.Fprintf(w, "  plan: %s\n", s.Fail.Render(d.PlanError))
		}
	}
}

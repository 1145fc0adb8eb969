package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/timeline"
)

// SimOptions are the options shared by the `astrabox simulate` commands.
type SimOptions struct {
	Project, Python, Provider string
	Format                    string
	Replicas                  int
	Seed                      int64
	Engine                    string
	Principal                 string
	Consent                   string
	Agent                     string
	Retries                   int
	Refresh                   bool
	Action                    string
	Boxes                     int
	// Scenario is the scenario the command built (a canned sequence) or loaded (simulate run), set before
	// the run.
	Scenario *simulate.Scenario
}

func newSimulateCmd(f *Factory) *cobra.Command { return NewCmdSimulate(f, nil) }

// NewCmdSimulate builds `astrabox simulate` and its subcommands; runF, when set, replaces the run of every
// canned sequence and of `simulate run` (tests read the parsed options and the scenario built from them
// through it).
func NewCmdSimulate(f *Factory, runF func(*SimOptions) error) *cobra.Command {
	o := &SimOptions{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Play one lifecycle sequence against the provider and show its timeline",
		Long: `Play one lifecycle sequence of the platform against the provider and print a timeline: each
step, each callback with its replica, what was delivered where (material redacted), and the
platform's answers. --format json prints the full history with every secret masked.

The project's declared services ([tool.astrabox.services.NAME]) are started as in conformance run,
behind egress control: the timeline names the service of each request and lists every connection
to an undeclared destination that was refused (docs/services.md).`,
	}
	simulateFlags(cmd, o)
	cmd.AddCommand(cannedSimulations(f, o, runF)...)
	cmd.AddCommand(newSimulateRunCmd(f, o, runF), NewCmdSimulateExplore(f, o, nil))
	return cmd
}

// simulateFlags adds the flags every simulate command shares (persistent on the simulate command) into o.
func simulateFlags(cmd *cobra.Command, o *SimOptions) {
	cmd.PersistentFlags().StringVar(&o.Project, "project", "", "provider project directory (default: the nearest directory upward holding pyproject.toml or setup.cfg)")
	cmd.PersistentFlags().StringVar(&o.Python, "python", "", "Python interpreter to load the provider with")
	cmd.PersistentFlags().StringVar(&o.Provider, "provider", "", "pick one provider by entry-point name when several are declared")
	cmd.PersistentFlags().StringVarP(&o.Format, "format", "f", "text", "output: text (timeline) or json (full history)")
	cmd.PersistentFlags().IntVar(&o.Replicas, "replicas", 2, "platform replicas (separate provider processes)")
	cmd.PersistentFlags().Int64Var(&o.Seed, "seed", 1, "seed of the scenario")
	cmd.PersistentFlags().StringVar(&o.Engine, "engine", simulate.EngineClaudeCode, "engine adapter: "+strings.Join(simulate.AdapterNames(), ", "))
	cmd.PersistentFlags().StringVar(&o.Principal, "principal", "alice", "the Session owner")
	cmd.PersistentFlags().StringVar(&o.Consent, "consent", "granted", "the owner's consent at the identity service: granted or pending")
	_ = cmd.RegisterFlagCompletionFunc("engine", cobra.FixedCompletions(simulate.AdapterNames(), cobra.ShellCompDirectiveNoFileComp))
}

// simulateOrRunF validates the format and runs the scenario, or hands the options to runF.
func simulateOrRunF(c *cobra.Command, f *Factory, o *SimOptions, sc *simulate.Scenario, runF func(*SimOptions) error) error {
	if err := parseFormat(&o.Format, report.TextOrJSON); err != nil {
		return err
	}
	o.Scenario = sc
	if runF != nil {
		return runF(o)
	}
	return runSimulation(c, f, o, sc)
}

// cannedSimulation is one command of a canned sequence: build makes its steps from the options.
func cannedSimulation(f *Factory, o *SimOptions, runF func(*SimOptions) error, use, short string, build func(*SimOptions) []simulate.Step) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			sc := &simulate.Scenario{Name: strings.Fields(use)[0], Seed: o.Seed, Replicas: o.Replicas, Engine: o.Engine,
				Principals: map[string]simulate.Principal{o.Principal: {Consent: o.Consent}},
				Agents:     []simulate.AgentSpec{{ID: "agent-1", Creator: o.Principal}}, Steps: build(o)}
			if err := sc.Validate(); err != nil {
				return usagef("%v", err)
			}
			return simulateOrRunF(c, f, o, sc, runF)
		},
	}
}

// cannedSimulations are the canned sequences of `astrabox simulate`.
func cannedSimulations(f *Factory, o *SimOptions, runF func(*SimOptions) error) []*cobra.Command {
	canned := func(use, short string, build func(*SimOptions) []simulate.Step) *cobra.Command {
		return cannedSimulation(f, o, runF, use, short, build)
	}
	session := func(op string) simulate.Step {
		return simulate.Step{Op: op, Session: "s1", Agent: "agent-1", Principal: o.Principal, Replica: "r1"}
	}
	cold := canned("cold-start", "Cold-start a Session: plan, prepare_session, delivery, engine activation", func(o *SimOptions) []simulate.Step {
		return []simulate.Step{session(simulate.OpColdStart)}
	})
	claim := canned("claim", "Prewarm a box, then claim it for a Session (session-bound or ordinary)", func(o *SimOptions) []simulate.Step {
		c := session(simulate.OpClaim)
		c.Replica = simulate.FoldReplica(2, o.Replicas)
		return []simulate.Step{{Op: simulate.OpPrewarm, Agent: "agent-1", Boxes: 1, Replica: "r1"}, c}
	})
	reattach := canned("reattach", "Cold-start a Session, then reattach it with a new runtime", func(o *SimOptions) []simulate.Step {
		r := simulate.Step{Op: simulate.OpReattach, Session: "s1", Replica: simulate.FoldReplica(2, o.Replicas)}
		return []simulate.Step{session(simulate.OpColdStart), r}
	})
	replace := canned("replace-sandbox", "Cold-start a Session, then replace its sandbox", func(o *SimOptions) []simulate.Step {
		return []simulate.Step{session(simulate.OpColdStart), {Op: simulate.OpReplaceSandbox, Session: "s1", Replica: simulate.FoldReplica(2, o.Replicas)}}
	})
	prewarm := canned("prewarm", "Prewarm boxes: plan, caches, synchronize, publication to waiting inventory", func(o *SimOptions) []simulate.Step {
		return []simulate.Step{{Op: simulate.OpPrewarm, Agent: "agent-1", Boxes: o.Boxes, Replica: "r1"}}
	})
	prewarm.Flags().IntVar(&o.Boxes, "boxes", 2, "boxes to prepare")
	turn := canned("turn", "Cold-start a Session and make one engine write, with retries and refreshes", func(o *SimOptions) []simulate.Step {
		t := simulate.Step{Op: simulate.OpTurn, Session: "s1", Attempt: "a1", Replica: "r1"}
		if o.Refresh {
			t.LiveFor = simulate.LiveFor{Seconds: 900}
		}
		steps := []simulate.Step{session(simulate.OpColdStart), t}
		for i := 0; i < o.Retries; i++ {
			steps = append(steps, simulate.Step{Op: simulate.OpRetry, Session: "s1", Attempt: "a1", Replica: simulate.FoldReplica(i+2, o.Replicas)})
		}
		return steps
	})
	turn.Flags().IntVar(&o.Retries, "retries", 0, "reconnect retries of the same attempt, on the other replicas in turn")
	turn.Flags().BoolVar(&o.Refresh, "refresh", false, "keep the write live for 15 host minutes so that validity refreshes happen")
	ua := canned("user-action", "Cold-start a Session, read its user-action state and perform an offered operation", func(o *SimOptions) []simulate.Step {
		steps := []simulate.Step{session(simulate.OpColdStart), {Op: simulate.OpReadUserActions, Session: "s1", Replica: "r1"}}
		if o.Action != "" {
			steps = append(steps, simulate.Step{Op: simulate.OpPerformUserAction, Session: "s1", Action: o.Action, Replica: simulate.FoldReplica(2, o.Replicas)})
		}
		return append(steps, simulate.Step{Op: simulate.OpTurn, Session: "s1", Attempt: "a1", Replica: "r1"})
	})
	ua.Flags().StringVar(&o.Action, "action", "", "operation id to perform after the read (one the state offers)")
	recover := canned("recover", "Lose the host during synchronize with its write held, recover, then release the write", func(o *SimOptions) []simulate.Step {
		return []simulate.Step{
			{Op: simulate.OpPrewarm, Agent: "agent-1", Boxes: 1, Replica: "r1", Fault: &simulate.Fault{Kind: simulate.FaultHostLoss},
				Double: []simulate.DoubleFault{{Kind: "hold", Method: "PUT", Times: 1}}},
			{Op: simulate.OpRecover, Operation: "op-1", Replica: simulate.FoldReplica(2, o.Replicas)},
			{Op: simulate.OpRelease},
		}
	})
	return []*cobra.Command{cold, claim, reattach, replace, prewarm, turn, ua, recover}
}

// newSimulateRunCmd builds `simulate run FILE.yaml`.
func newSimulateRunCmd(f *Factory, o *SimOptions, runF func(*SimOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "run FILE.yaml",
		Short: "Play a scenario file (see docs/scenarios.md)",
		Args:  exactArgs("scenario FILE.yaml", "see docs/scenarios.md"),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(c *cobra.Command, args []string) error {
			sc, err := simulate.LoadScenario(args[0])
			if err != nil {
				return asUndecided(err)
			}
			if c.Flags().Changed("seed") {
				sc.Seed = o.Seed
			}
			return simulateOrRunF(c, f, o, sc, runF)
		},
	}
}

func runSimulation(c *cobra.Command, f *Factory, o *SimOptions, sc *simulate.Scenario) error {
	ctx, cancel := signalContext(c.Context())
	defer cancel()
	opts := conformance.Options{Project: o.Project, Python: o.Python, Provider: o.Provider, Getenv: f.Getenv, Scenarios: []*simulate.Scenario{sc}, Jobs: 1}
	t, err := conformance.Resolve(ctx, opts)
	if err != nil {
		return asUndecided(err)
	}
	if f.Verbose {
		fmt.Fprintf(f.IO.Err, "interpreter: %s (Python %s, chosen by %s)\n", t.Python.Path, t.Python.VersionString(), t.Python.Reason)
	}
	info, reply, err := conformance.Inspect(ctx, t)
	if err != nil {
		return asUndecided(err)
	}
	if info == nil {
		return asUndecided(conformance.LoadError(t, reply))
	}
	ev, err := conformance.Collect(ctx, t, info, sc.Seed, opts)
	if err != nil {
		return asUndecided(err)
	}
	if len(ev.Histories) == 0 {
		return asUndecided(fmt.Errorf("the scenario did not run: %v", ev.Skipped["*"]))
	}
	h := ev.Histories[0]
	if o.Format == "json" {
		raw, err := json.Marshal(h)
		if err != nil {
			return asUndecided(err)
		}
		if _, err := f.IO.Out.Write(append(ev.Secrets.MaskJSON(raw), '\n')); err != nil {
			return err
		}
		// The exit code says what the text format says: 1 when a check fails on the scenario.
		if ids, _ := conformance.Failing(ev, nil, nil, t.Settings.Skip); len(ids) > 0 {
			fmt.Fprintf(f.IO.Err, "%d check(s) fail on this scenario: %s\n", len(ids), strings.Join(ids, ", "))
			return errFailed
		}
		return nil
	}
	if err := timeline.Write(f.IO.Out, f.IO.OutStyles(), h, ev.Secrets, t.Project.Dir); err != nil {
		return asUndecided(err)
	}
	ids, msgs := conformance.Failing(ev, nil, nil, t.Settings.Skip)
	st := f.IO.OutStyles()
	if len(ids) == 0 {
		fmt.Fprintln(f.IO.Out, st.Pass.Render("no check fails on this scenario"))
		return nil
	}
	fmt.Fprintln(f.IO.Out, st.Fail.Render(fmt.Sprintf("%d check(s) fail on this scenario:", len(ids))))
	for _, id := range ids {
		fmt.Fprintf(f.IO.Out, "  %s  %s\n", st.ID.Render(id), msgs[id])
	}
	return errFailed
}

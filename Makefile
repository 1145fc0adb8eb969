# astrabox developer targets. `make demo` runs the main job on the bundled example provider; `make test` runs
# every test but the long lane, which `make long` runs (CI runs both). Long explorations and benchmarks have
# their own targets.
GO      ?= go
BIN     ?= bin/astrabox
PKGS    := ./...
EXAMPLE := examples/providers/reference

.PHONY: build test long lint demo completions docs bench explore repro clean dist

build:
	$(GO) build -o $(BIN) ./cmd/astrabox

# Linters beyond go vet, pinned (fetched through the module proxy on first use): staticcheck's checks, and
# deadcode's unreachable functions (tests count as callers). A finding the code means on purpose takes a
# `//lint:ignore CHECK reason` comment; deadcode has none: delete what nothing calls.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    ?= golang.org/x/tools/cmd/deadcode@v0.52.0

# scripts/lint.sh runs them beside each other (staticcheck and deadcode in the background, go vet meanwhile)
# and shows each one's output under its name when it fails.
LINT := GO='$(GO)' PKGS='$(PKGS)' STATICCHECK='$(STATICCHECK)' DEADCODE='$(DEADCODE)' scripts/lint.sh

lint:
	@$(LINT)

# The tests start once gofmt and go vet pass, beside staticcheck and deadcode (deadcode has no cache and
# works on about one core for some 20 s of CPU); a finding of either still fails `make test`, shown after the
# tests' output. go test's own vet pass (a subset of vet's analyzers, over the same packages and their tests)
# is turned off: `go vet` has just run every analyzer over them, so it would only repeat work.
#
# go test starts the packages' test binaries in the order it is given them, -p (the cores) at a time, and
# ./... is alphabetical, which started harness (about 150 s on a quiet machine) among the last. SLOW_PKGS, the
# dearest packages longest first, go first (go test lists a package once), so that the cheap ones fill the
# other core at the end instead of one long package running alone.
SLOW_PKGS := ./internal/conformance ./internal/harness ./internal/explore ./internal/cli ./internal/recipes ./internal/simulate
test:
	@$(LINT) -- $(GO) test -count=1 -vet=off -timeout 60m $(if $(filter ./...,$(PKGS)),$(SLOW_PKGS)) $(PKGS)

# The long lane: the tests (or their subtests) that call testutil.LongLane, which skip in `make test` unless
# ASTRABOX_LONG=1: every fixture live (its verdict against expect.json and its recording), every correct
# provider explored, repeated runs. `make test` keeps a live sample of each. LONG_TESTS and LONG_PKGS name
# exactly those tests and their packages (TestLongTargetRunsEveryLongTest fails when they drift).
LONG_TESTS := TestFixtures|TestAdatumConsentHeldByStubScenarios|TestPreCommitHookRunsUnderPreCommit|TestCrossCompile|TestReportsNeverPrintASecret|TestPythonSuites|TestFabrikamConsentHeldByItsOwnService|TestLateWorkIsJudgedAgainstItsCall|TestLeakLogFindsSplitRecasedAndFiledSecrets|TestVaultTwinsBreakThroughTheVault|TestNewBrokenFixturesDoWhatTheyClaim|TestSuiteFaultsReachServiceWrites|TestEgressFindingAtConnectLine|TestLateRawSocketWriteBlamesItsStarter|TestRawSocketWriteInItsTurn|TestKeptAliveRawConnectionPerSend|TestKeptAliveBackgroundWriteBlamesItsWriter|TestSuiteReachesEveryPath|TestLarkspurKeyedRetriesAreOneWrite|TestLarkspurSecretPerVersion|TestRealClientFixtures|TestVerdictsRepeat|TestServiceVerdictsDoNotDependOnTheSlot|TestPooledClientsAttributeEachRequest|TestCorrectProvidersSurviveExploration|TestExploreFindsOrderDependentBugs
LONG_PKGS  := ./internal/conformance ./internal/explore ./internal/harness ./internal/cli ./cmd/astrabox ./internal/recipes
long:
	ASTRABOX_LONG=1 $(GO) test -count=1 -timeout 90m -run '^($(LONG_TESTS))$$' $(LONG_PKGS)

demo: build
	$(BIN) conformance run --project $(EXAMPLE)

completions: docs

docs:
	$(GO) run ./internal/tools/gendocs

bench:
	scripts/bench.sh

# Native Go fuzzing: each target (package:FuzzName) for FUZZTIME. `make test` replays every seed corpus
# (testdata/fuzz/FuzzName in each package) without fuzzing; new crashers land there too, to be kept as tests.
FUZZTIME ?= 10s
FUZZ_TARGETS ?= \
	./internal/simulate:FuzzParseScenario ./internal/simulate:FuzzScenarioDeep ./internal/simulate:FuzzDecodeContext \
	./internal/harness:FuzzReadFrame ./internal/harness:FuzzFrameDeep ./internal/harness:FuzzDecodeTurnValidity \
	./internal/harness:FuzzCallEncoder ./internal/harness:FuzzReplyDecoder \
	./internal/conformance:FuzzParseSettings ./internal/clauses:FuzzParse \
	./internal/report:FuzzMergeRender ./internal/report:FuzzReportDeep \
	./internal/secrets:FuzzHuntAndMask \
	./internal/explore:FuzzLastFailed ./internal/explore:FuzzSavedScenario \
	./internal/suppress:FuzzComment ./internal/double:FuzzHandlers \
	./internal/egress:FuzzProxyRequest ./internal/stubs:FuzzMapping ./internal/stubs:FuzzJSONPath \
	./internal/services:FuzzClassify ./internal/services:FuzzParseConsent \
	./internal/discovery:FuzzPyproject ./internal/discovery:FuzzSetupCfg ./internal/discovery:FuzzObjectRef \
	./internal/discovery:FuzzINI ./internal/discovery:FuzzTOMLDeep \
	./internal/conformance:FuzzDecodeRecording ./internal/release:FuzzParseChecksums ./internal/deepjson:FuzzUnmarshal

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# Long exploration: every correct provider must pass 500 generated scenarios with no failure and no flaky result.
explore:
	ASTRABOX_LONG=1 ASTRABOX_EXPLORE_N=500 $(GO) test -count=1 -timeout 60m -run TestCorrectProvidersSurviveExploration -v ./internal/explore

# Reproducibility: every fixture ten times with the same seed must give the same status and clauses for every
# check (`make long` does this for the fixtures with background work and timing only).
repro:
	ASTRABOX_LONG=1 ASTRABOX_REPRO=all $(GO) test -count=1 -timeout 90m -run TestVerdictsRepeat -v ./internal/conformance

# Release files in dist/: archives for linux and darwin × amd64 and arm64, astrabox-kit wheels for the same
# platforms, and checksums.txt (SHA-256). VERSION is the release version without a leading v (PEP 440 subset).
VERSION ?= 0.0.0.dev0
dist:
	$(GO) run ./internal/tools/dist -version $(VERSION) -out dist

clean:
	rm -rf bin dist

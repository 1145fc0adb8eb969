# astrabox developer targets. `make demo` runs the main job on the bundled example provider; `make test` runs
# every test. Long explorations and benchmarks have their own targets.
GO      ?= go
BIN     ?= bin/astrabox
PKGS    := ./...
EXAMPLE := examples/providers/reference

.PHONY: build test lint demo completions docs bench check-generated clean

build:
	$(GO) build -o $(BIN) ./cmd/astrabox

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test: lint
	$(GO) test -count=1 -timeout 20m $(PKGS)

demo: build
	$(BIN) conformance run --project $(EXAMPLE)

completions: docs

docs:
	$(GO) run ./internal/tools/gendocs

bench:
	scripts/bench.sh

clean:
	rm -rf bin

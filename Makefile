# Every target runs in every module of the repository: the package at the
# root and the nested bench/, chaos/ and otelretry/ modules, which keep their
# heavy dependencies away from users.
MODULES     := $(shell find . -name go.mod -not -path './.git/*' -exec dirname {} \; | sort)
FUZZTIME    ?= 30s
TESTFLAGS   ?= -short
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test race soak bench fuzz lint demo cover examples

## test: go vet and every test with the race detector, in every module;
## short forms of the long tests (TESTFLAGS= runs them in full). Every
## module runs even after one fails, so that each one's results are seen.
test: examples
	@failed=; for m in $(MODULES); do \
		echo "== $$m"; \
		(cd $$m && go vet ./... && go test -race -count=1 $(TESTFLAGS) ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "== failed:$$failed"; exit 1; fi

## race: the same as test
race: test

## soak: the chaos module's tests in full, without -short (the 60 s soak,
## 32 MiB uploads, 20 cancel rounds), with their figures (-v)
soak:
	cd chaos && go test -race -count=1 -timeout 20m -v ./...

## examples: build the runnable programs under examples/
examples:
	go build -o /dev/null ./examples/...

## bench: the package's benchmarks, then the peer comparison in bench/
## (about 5 minutes; the fleet as real processes is apart: cd bench && go run ./cmd/fleetprocs)
bench:
	go test -run '^$$' -bench . -benchmem -count=1 .
	cd bench && go run ./cmd/benchreport
	cd bench && go run ./cmd/hedgereport

## fuzz: every Fuzz target of every module for FUZZTIME (30s) each
fuzz:
	@set -e; for m in $(MODULES); do \
		(cd $$m && for p in $$(go list ./...); do \
			for f in $$(go test -list '^Fuzz' $$p | grep '^Fuzz' || true); do \
				echo "== $$p $$f"; \
				go test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$p; \
			done; \
		done); \
	done

## lint: staticcheck in every module, fetched through the Go module proxy
lint:
	@set -e; for m in $(MODULES); do \
		echo "== $$m"; \
		(cd $$m && go run $(STATICCHECK) ./...); \
	done

## demo: the main job, a flaky server and a client through httpretry
demo:
	go run ./examples/demo

## cover: coverage of the package's tests
cover:
	go test -count=1 -coverprofile=cover.out .
	go tool cover -func=cover.out | tail -n 1

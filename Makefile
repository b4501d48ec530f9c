# Every target runs in every module of the repository: the package at the
# root and the nested bench/, chaos/, otelretry/ and tools/installcheck/
# modules, which keep their heavy dependencies away from users. test, lint
# and fuzz go on past a failing module, so that every module's result is
# seen, then fail naming every module that failed.
MODULES     := $(shell find . -name go.mod -not -path './.git/*' -exec dirname {} \; | sort)
FUZZTIME    ?= 30s
TESTFLAGS   ?= -short
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test race soak sim bench fuzz lint demo cover examples installcheck release-check

## test: the examples' build; go vet and every test with the race detector,
## in every module, short forms of the long tests (TESTFLAGS= runs them in
## full); then installcheck
test:
	@failed=; \
	echo "== examples"; \
	$(MAKE) --no-print-directory examples || failed="$$failed examples"; \
	for m in $(MODULES); do \
		echo "== $$m"; \
		(cd $$m && go vet ./...) || failed="$$failed $$m(vet)"; \
		(cd $$m && go test -race -count=1 $(TESTFLAGS) ./...) || failed="$$failed $$m"; \
	done; \
	echo "== installcheck"; \
	$(MAKE) --no-print-directory installcheck || failed="$$failed installcheck"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed" >&2; exit 1; fi

## race: the same as test
race: test

## soak: the chaos module's tests in full, without -short (the 60 s soak,
## 32 MiB uploads, 20 cancel rounds), with their figures (-v)
soak:
	cd chaos && go test -race -count=1 -timeout 20m -v ./...

## sim: the simulator (issue 20, the package internal/sim) over SEEDS seeds
## (100000), from SIMFIRST (1), without -race; a failing seed prints its
## trace and the command that replays it. make test runs it too, 1500
## seeds, as a package of the root module beside the others. The package
## comes before the -sim flags: go test reads no package after a flag it
## does not know
sim:
	go test -count=1 -timeout 0 -v ./internal/sim -run '^TestSimulate$$' -sim.seeds=$(or $(SEEDS),100000) -sim.first=$(or $(SIMFIRST),1)

## examples: build the runnable programs under examples/
examples:
	go build -o /dev/null ./examples/...

## installcheck: prove offline that a user can install from the repository
## as published, main and no tag: HEAD's committed history served as main
## of a scratch git repository, fetched by the go command through a git URL
## rewrite into a fresh module cache; README.md's go get lines run in a
## scratch module with no replace, otelretry's alone first, and a program
## using both packages built and run (tools/installcheck; a shallow clone
## is skipped, loudly)
installcheck:
	cd tools/installcheck && go run . -repo ../..

## release-check VERSION=vX.Y.Z: what must hold before the release commit
## is tagged (CONTRIBUTING.md): a clean tree, a CHANGELOG section, otelretry
## requiring VERSION, no such tags yet, and installcheck with the release's
## two tags served at HEAD, as pushing them will (never skipped)
release-check:
	@case "$(VERSION)" in v[0-9]*.[0-9]*.[0-9]*) ;; \
		*) echo "release-check: give the version to release, as in make release-check VERSION=v0.2.0" >&2; exit 1;; esac
	@test -z "$$(git status --porcelain)" || { echo "release-check: the working tree has changes; tag a commit, not a tree" >&2; git status --short >&2; exit 1; }
	@grep -Eq '^## \[$(patsubst v%,%,$(VERSION))\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$$' CHANGELOG.md || \
		{ echo "release-check: CHANGELOG.md has no section '## [$(patsubst v%,%,$(VERSION))] - YYYY-MM-DD'" >&2; exit 1; }
	@req=$$(cd otelretry && go list -m -f '{{.Version}}' github.com/httpretry/httpretry) && test "$$req" = "$(VERSION)" || \
		{ echo "release-check: otelretry/go.mod requires github.com/httpretry/httpretry $$req, not $(VERSION)" >&2; exit 1; }
	@for t in $(VERSION) otelretry/$(VERSION); do \
		if git rev-parse -q --verify "refs/tags/$$t" >/dev/null; then echo "release-check: tag $$t exists already" >&2; exit 1; fi; \
	done
	cd tools/installcheck && go run . -repo ../.. -release $(VERSION) -shallow fail
	@echo "release-check: $(VERSION) can be cut from $$(git rev-parse --short HEAD); tag it and push, in this order:"
	@echo "  git tag -a $(VERSION) -m 'httpretry $(VERSION)'"
	@echo "  git tag -a otelretry/$(VERSION) -m 'otelretry $(VERSION)'"
	@echo "  git push --atomic origin HEAD:main $(VERSION) otelretry/$(VERSION)"

## bench: the package's benchmarks, then the peer comparison in bench/
## (about 5 minutes; the fleet as real processes is apart: cd bench && go run ./cmd/fleetprocs)
bench:
	go test -run '^$$' -bench . -benchmem -count=1 .
	cd bench && go run ./cmd/benchreport
	cd bench && go run ./cmd/hedgereport

## fuzz: every Fuzz target of every module for FUZZTIME (30s) each
fuzz:
	@failed=; for m in $(MODULES); do \
		for p in $$(cd $$m && go list ./...); do \
			for f in $$(cd $$m && go test -list '^Fuzz' $$p | grep '^Fuzz'); do \
				echo "== $$p $$f"; \
				(cd $$m && go test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$p) || failed="$$failed $$p.$$f"; \
			done; \
		done; \
	done; \
	if [ -n "$$failed" ]; then echo "make fuzz: failed:$$failed" >&2; exit 1; fi

## lint: staticcheck in every module, fetched through the Go module proxy
lint:
	@failed=; for m in $(MODULES); do \
		echo "== $$m"; \
		(cd $$m && go run $(STATICCHECK) ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "make lint: failed:$$failed" >&2; exit 1; fi

## demo: the main job, a flaky server and a client through httpretry
demo:
	go run ./examples/demo

## cover: coverage of the package and its internal leaves by every test
## of the module, the simulator's (internal/sim) included; the test
## support (internal/fakeorigin, internal/sim) is not counted
cover:
	go test -count=1 -coverpkg=$$(go list . ./internal/... | grep -v -e /internal/fakeorigin -e /internal/sim | paste -sd, -) \
		-coverprofile=cover.out . ./internal/...
	go tool cover -func=cover.out | tail -n 1

# toc — run `make` or `make help` for the targets.

GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

# Integration tests skip when redis-server, mariadbd or ZooKeeper is missing;
# with TOC_REQUIRE_INTEGRATION=1 in the environment (CI sets it) or on the make
# command line they fail instead.
TOC_REQUIRE_INTEGRATION ?=

# staticcheck at a pinned release, run with go run so that neither CI nor a
# developer installs anything and go.mod does not take on its dependencies.
# v0.8.2 is the newest on the module proxy: the 2026.2 series, for Go 1.26
# and 1.27 code.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.DEFAULT_GOAL := help
.PHONY: help run build test lint bench bench-go clean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## Run toc in dev mode (go run ./cmd/toc dev)
	$(GO) run ./cmd/toc dev

build: ## Build bin/toc, version from git describe
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/toc ./cmd/toc

test: ## go vet, then all tests with -race (TOC_REQUIRE_INTEGRATION=1 to fail instead of skip)
	$(GO) vet ./...
	TOC_REQUIRE_INTEGRATION=$(TOC_REQUIRE_INTEGRATION) $(GO) test -race -count=1 ./...

lint: ## gofmt -l must be empty; go vet; staticcheck (version pinned here)
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

bench: ## toc bench --short: every scenario on a throwaway MariaDB + Redis (about a minute)
	$(GO) build -o bin/toc ./cmd/toc
	bin/toc bench --short --json bench-short.json

bench-go: ## The Go benchmarks of the hot paths (scripts, task store, signer, slot hash)
	TOC_REQUIRE_INTEGRATION=$(TOC_REQUIRE_INTEGRATION) $(GO) test -run '^$$' -bench . -benchmem ./...

clean: ## Remove bin/ and test binaries, profiles (keeps toc-dev.db)
	rm -rf bin
	rm -f *.test *.out *.prof

# toc — run `make` or `make help` for the targets.

GO      ?= go
# The last release tag and the commits since (v0.1.0-12-gabcdef0); without
# git or tags, the version the source names (cmd/toc/main.go).
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || sed -n 's/^var version = "\(.*\)"$$/\1/p' cmd/toc/main.go)
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

# oapi-codegen at a pinned release, run with go run as staticcheck is:
# make contract generates the Go client of http/openapi.json with it at its
# default settings and checks that http/contract/goclient/toc.gen.go is that
# output. Only the generated parts a client needs are asked for (types and
# client); its default list adds an Echo server and the embedded document.
# The client lives in its own module (http/contract/goclient/go.mod), so
# that the main go.mod does not take on oapi-codegen's runtime. v2.8.2 is
# the newest on the module proxy.
OAPI_CODEGEN ?= github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2
GOCLIENT     := http/contract/goclient
GOCLIENT_GEN  = $(GO) run $(OAPI_CODEGEN) -generate types,client -package goclient

.DEFAULT_GOAL := help
.PHONY: help run build test lint contract goclient apidocs docs bench bench-go clean npm static image

# The npm projects: the OpenAPI linters and TypeScript check (http/contract)
# and the Node webhook receiver; each pins its packages in package-lock.json.
NPM_DIRS := http/contract http/webhook/examples/nodereceiver http/ui/lib

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## Run toc in dev mode (go run ./cmd/toc dev)
	$(GO) run ./cmd/toc dev

build: ## Build bin/toc, version from git describe
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/toc ./cmd/toc

# -timeout is per test binary: cmd/toc's took 16 min alone and 22.5 in CI
# beside the other packages (2026-12-02), too near the 25 it had.
test: ## npm ci where needed, go vet, then all tests with -race (TOC_REQUIRE_INTEGRATION=1 to fail instead of skip)
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory npm; \
	else echo "npm not found: the tests of the Node receiver and the TypeScript client will skip"; fi
	$(GO) vet ./...
	TOC_REQUIRE_INTEGRATION=$(TOC_REQUIRE_INTEGRATION) $(GO) test -race -count=1 -timeout 35m ./...

lint: ## gofmt -l must be empty; go vet; staticcheck (version pinned here); the OpenAPI linters
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory contract; \
	else echo "npm not found: http/openapi.json is not linted"; fi

contract: npm ## Lint http/openapi.json (Redocly, Spectral); check toc-api.d.ts and the Go client are current; type-check and vet the clients
	cd http/contract && npm run --silent lint && npm run --silent types:check && npm run --silent check
	@gen="$$(mktemp)"; trap 'rm -f "$$gen"' EXIT; \
	$(GOCLIENT_GEN) -o "$$gen" http/openapi.json || exit 1; \
	if ! cmp -s "$$gen" $(GOCLIENT)/toc.gen.go; then \
		echo "$(GOCLIENT)/toc.gen.go is not what oapi-codegen makes of http/openapi.json: run make goclient"; \
		exit 1; \
	fi
	cd $(GOCLIENT) && $(GO) vet ./...

goclient: ## Regenerate http/contract/goclient/toc.gen.go from http/openapi.json with oapi-codegen
	$(GOCLIENT_GEN) -o $(GOCLIENT)/toc.gen.go http/openapi.json

apidocs: npm ## Render http/openapi.json into docs/api.html with Redocly: one static page, no CDN (CI keeps it in artifacts/)
	cd http/contract && npm run --silent apidocs

docs: ## Regenerate docs/configuration.md and docs/cli.md from the flags and commands (TestDocsGenerated checks them)
	TOC_UPDATE_DOCS=1 $(GO) test -count=1 -run '^TestDocsGenerated$$' ./cmd/toc

bench: ## toc bench --short: every scenario on a throwaway MariaDB + Redis (about a minute)
	$(GO) build -o bin/toc ./cmd/toc
	bin/toc bench --short --json bench-short.json

bench-go: ## The Go benchmarks of the hot paths (scripts, task store, signer, slot hash)
	TOC_REQUIRE_INTEGRATION=$(TOC_REQUIRE_INTEGRATION) $(GO) test -run '^$$' -bench . -benchmem ./...

npm: $(NPM_DIRS:%=%/node_modules/.package-lock.json) ## npm ci in each npm project whose lock file changed

# npm ci writes node_modules/.package-lock.json: newer than the lock file
# means installed.
%/node_modules/.package-lock.json: %/package-lock.json
	npm ci --no-audit --no-fund --prefix $*

static: ## Build and check the static binary the Dockerfile builds
	$(GO) test -count=1 -run '^TestStaticBuild$$' ./cmd/toc

image: ## docker build of cmd/toc/deploy/Dockerfile (needs a Docker engine), version from git describe
	docker build -f cmd/toc/deploy/Dockerfile --build-arg VERSION=$(VERSION) -t toc:$(VERSION) .

clean: ## Remove bin/ and test binaries, profiles (keeps toc-dev.db)
	rm -rf bin
	rm -f *.test *.out *.prof

# lbd — build, test, run the demo, benchmark.
GO       ?= go
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/sbin
MANDIR   ?= $(PREFIX)/share/man
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.Version=$(VERSION)
BIN      := bin
# Pound 4's Lua extensions link Lua 5.4 (Debian: liblua5.4-dev) through
# cgo: lbd is built with the "lua" tag when pkg-config finds it, and
# without Lua (every Lua statement a configuration error) otherwise.
LUA_TAG  := $(shell pkg-config --exists lua5.4 2>/dev/null && echo lua)
GOTAGS   ?= $(LUA_TAG)
# Every build of lbd (make, make deb, the tests) also takes SIZE_TAGS
# (bench/RESULTS.md §42):
# - urfave_cli_no_template has urfave/cli write lbd's help without
#   text/template, whose reflective method calls would make the linker keep
#   every exported method of every type put in an interface (37.8 -> 28.6
#   MB; cmd/lbd/deadcode_test.go keeps it so);
# - coraza.disabled_operators.validateSchema leaves out Coraza's JSON
#   Schema operator and the JSON, YAML and i18n libraries only it uses
#   (28.6 -> 26.5 MB; a rule using it is refused: lbd.cfg(5), WAF).
SIZE_TAGS := urfave_cli_no_template coraza.disabled_operators.validateSchema
TAGS     := -tags '$(strip $(GOTAGS) $(SIZE_TAGS))'

.PHONY: all build test lua-required unit functional vet lint wafdiff fuzz bench run install man clean deb units deb-check

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build $(TAGS) -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/lbd ./cmd/lbd
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/lbctl ./cmd/lbctl
	$(GO) build -trimpath -o $(BIN)/demo-backend ./demo/backend

# Unit tests (fuzz seed corpora run as ordinary tests), functional tests
# against the real binary, and vet. The Lua tests are part of it: without
# Lua 5.4 make test fails rather than skip them.
test: lua-required vet unit functional

lua-required:
	@if [ "$(GOTAGS)" != lua ]; then \
		echo "make test: Lua 5.4 is required (Debian: apt-get install liblua5.4-dev; pkg-config lua5.4 found nothing)" >&2; \
		exit 1; fi

# vet checks both builds: with no tags, and with make's (Lua, SIZE_TAGS).
vet:
	@fmt=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet $(TAGS) ./...

# staticcheck (fetched through the Go module proxy on first use).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: vet
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) $(TAGS) ./...

unit:
	$(GO) test $(TAGS) -count=1 $$($(GO) list ./... | grep -v /functional-tests)

# The functional tests drive lbd with curl, openssl and h2load, write
# password files with htpasswd (Debian: curl openssl nghttp2-client
# apache2-utils), load the dashboard in headless Chromium (Debian:
# chromium; its screenshot goes to $(BIN)/artifacts), share a cluster's
# state through redis-server (Debian: redis-server) and run h2spec, the
# HTTP/2 conformance suite, which is built here through the Go module
# proxy on first use, with the dependency versions its tools module
# (tools/h2spec/go.mod, go.sum) pins.
TOOLS  := $(BIN)/tools

$(TOOLS)/h2spec: tools/h2spec/go.mod tools/h2spec/go.sum
	cd tools/h2spec && GOFLAGS= $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$(TOOLS)/h2spec github.com/summerwind/h2spec/cmd/h2spec

# The single sign-on test's oauth2-proxy and OpenID Connect provider
# (the example server of zitadel/oidc), pinned by tools/sso/go.mod.
SSO_TOOLS := $(TOOLS)/oauth2-proxy $(TOOLS)/oidc-example-op

$(TOOLS)/oauth2-proxy: tools/sso/go.mod tools/sso/go.sum
	cd tools/sso && GOFLAGS= $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ github.com/oauth2-proxy/oauth2-proxy/v7

$(TOOLS)/oidc-example-op: tools/sso/go.mod tools/sso/go.sum
	cd tools/sso && GOFLAGS= $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ github.com/zitadel/oidc/v3/example/server


# grpc-go's interop server and client, and grpcpeer (lbd's own gRPC
# test peer), from their tools module (tools/grpc-interop/go.mod pins
# google.golang.org/grpc and every dependency).
GRPC_TOOLS := $(TOOLS)/grpc-interop-server $(TOOLS)/grpc-interop-client $(TOOLS)/grpcpeer

$(TOOLS)/grpc-interop-server: tools/grpc-interop/go.mod tools/grpc-interop/go.sum
	cd tools/grpc-interop && GOFLAGS= $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ google.golang.org/grpc/interop/server

$(TOOLS)/grpc-interop-client: tools/grpc-interop/go.mod tools/grpc-interop/go.sum
	cd tools/grpc-interop && GOFLAGS= $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ google.golang.org/grpc/interop/client

$(TOOLS)/grpcpeer: tools/grpc-interop/go.mod tools/grpc-interop/go.sum tools/grpc-interop/grpcpeer/main.go
	cd tools/grpc-interop && GOFLAGS= $(GO) build -mod=readonly -trimpath -o $(CURDIR)/$@ ./grpcpeer

# The HTTP caching test suite (npm http-cache-tests; Debian: nodejs npm),
# which functional-tests/cachetests_test.go runs through lbd (about 20 s),
# at the version bench/cache-tests was measured with. Defined before
# the functional rule: make expands prerequisites as it reads a rule.
CACHE_TESTS := $(BIN)/cache-tests/node_modules/http-cache-tests
$(CACHE_TESTS):
	npm install --silent --no-audit --no-fund --prefix $(BIN)/cache-tests http-cache-tests@0.4.5

functional: build $(TOOLS)/h2spec $(SSO_TOOLS) $(GRPC_TOOLS) $(CACHE_TESTS)
	PATH=$(CURDIR)/$(TOOLS):$$PATH LBD_BIN=$(CURDIR)/$(BIN)/lbd LBCTL_BIN=$(CURDIR)/$(BIN)/lbctl \
		LBD_ARTIFACTS=$(CURDIR)/$(BIN)/artifacts CACHE_TESTS=$(CURDIR)/$(CACHE_TESTS) \
		$(GO) test $(TAGS) -count=1 -timeout 15m ./functional-tests/...

# The WAF differential test: lbd+Coraza against nginx+libmodsecurity 3 on
# the same CRS files, every request of testdata/waf/corpus.jsonl, at least
# 99 % agreement (Debian: nginx-light libnginx-mod-http-modsecurity
# modsecurity-crs). Part of make test; this target runs it alone, verbose.
wafdiff: build
	LBD_BIN=$(CURDIR)/$(BIN)/lbd $(GO) test $(TAGS) -count=1 -timeout 10m \
		-run TestWAFDifferential -v ./functional-tests/

# Short coverage-guided fuzzing of every parser (FUZZTIME each).
FUZZTIME ?= 20s
fuzz:
	@for t in $$($(GO) test $(TAGS) -list '^Fuzz' ./... | awk '/^Fuzz/{n[c++]=$$1} /^ok/{for(i=0;i<c;i++) print $$2":"n[i]; c=0}'); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$pkg $$fn"; \
		$(GO) test $(TAGS) -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

# Micro-benchmarks, the side-by-side proxy comparisons (HTTP/1.1 and TLS),
# system calls per request beside HAProxy (perf and strace: Debian's
# linux-perf and strace), the idle-connection memory meter and the cost
# of routing at 1 to 10,000 services beside HAProxy and Pound (scale.sh);
# bench/RESULTS.md records them.
bench: build
	$(GO) test $(TAGS) -run '^$$' -bench . -benchmem -count 1 ./...
	bench/peers.sh
	bench/tls.sh
	mkdir -p bench/out && OUT_MD=bench/out/syscalls-$$(date +%Y%m%d-%H%M%S).md bench/syscalls.sh
	$(GO) run ./bench/idleconns -lbd $(BIN)/lbd -n 10000
	for p in haproxy nginx; do if command -v $$p >/dev/null; then $(GO) run ./bench/idleconns -peer $$p -n 10000; else echo "bench: no $$p, idleconns -peer $$p skipped"; fi; done
	for pr in tls h2; do $(GO) run ./bench/idleconns -lbd $(BIN)/lbd -proto $$pr -n 8000; \
		for p in haproxy nginx; do if command -v $$p >/dev/null; then $(GO) run ./bench/idleconns -peer $$p -proto $$pr -n 8000; else echo "bench: no $$p, idleconns -peer $$p skipped"; fi; done; done
	$(GO) run ./bench/certscale -lbd $(BIN)/lbd -n 1,100,1000,10000
	$(GO) run ./bench/certscale -lbd $(BIN)/lbd -paired 10000 -handshakes 200 -reps 10
	bench/scale.sh lbd lbd $(BIN)/lbd
	if command -v haproxy >/dev/null; then bench/scale.sh haproxy; else echo "bench: no haproxy, scale.sh haproxy skipped"; fi
	if [ -n "$(POUND)" ]; then bench/scale.sh pound pound $(POUND); else echo "bench: POUND=path/to/pound not set, scale.sh pound skipped"; fi
	bench/scale.sh size $(BIN)/lbd
	bench/scale.sh reload-load $(BIN)/lbd
	bench/scale.sh size-curve $(BIN)/lbd
	$(GO) run ./bench/sessweep -lbd $(BIN)/lbd -sessions 500000 -ttl 50

run: build
	scripts/run-demo.sh

# Render every man page with groff (warnings are errors) and check that
# they document every directive, flag and command.
man:
	$(GO) test -count=1 ./man/

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(BIN)/lbd $(BIN)/lbctl $(DESTDIR)$(BINDIR)/
	ln -sf lbd $(DESTDIR)$(BINDIR)/pound
	ln -sf lbctl $(DESTDIR)$(BINDIR)/poundctl
	for m in man/*.5; do [ -e "$$m" ] && install -m 0644 $$m $(DESTDIR)$(MANDIR)/man5/ || true; done
	for m in man/*.8; do [ -e "$$m" ] && install -m 0644 $$m $(DESTDIR)$(MANDIR)/man8/ || true; done

# The systemd units under packaging/systemd pass systemd-analyze verify
# (offline: no running systemd needed; the binary paths point at the
# build and man pages are not looked up, as they are not installed yet).
units:
	$(GO) test -count=1 ./packaging/

# The Debian package, built by nfpm (through the Go module proxy) into
# dist/: static binaries, the pound/poundctl links, the man pages, the
# units, /etc/lbd/lbd.cfg as a conffile and maintainer scripts that
# never start a configuration `lbd -c` refuses.
NFPM        ?= github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
DEB_VERSION ?= 0.1.0~git$(shell git rev-parse --short HEAD 2>/dev/null || echo 0)
DEB_ARCH    ?= $(shell $(GO) env GOARCH)
DEB_STAGE   := bin/deb# named in packaging/deb/nfpm.yaml

# Debian's hardening (dpkg-buildflags): the C of cgo (Lua, the runtime's
# glue) fortified and with stack protection, the binaries position
# independent, relocations read-only and bound at start (-bindnow; Go's
# linker passes it on when it links externally).
DEB_CGO_CFLAGS  ?= -g -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fstack-clash-protection -Wformat -Werror=format-security
DEB_CGO_LDFLAGS ?= -Wl,-z,relro,-z,now
DEB_GOBUILD      = CGO_ENABLED=1 CGO_CFLAGS='$(DEB_CGO_CFLAGS)' CGO_LDFLAGS='$(DEB_CGO_LDFLAGS)' \
	$(GO) build -buildmode=pie -trimpath -ldflags '$(LDFLAGS) -bindnow -extldflags "$(DEB_CGO_LDFLAGS)"'

deb:
	rm -rf $(DEB_STAGE) && mkdir -p $(DEB_STAGE) dist
	$(DEB_GOBUILD) $(TAGS) -o $(DEB_STAGE)/lbd ./cmd/lbd
	$(DEB_GOBUILD) -o $(DEB_STAGE)/lbctl ./cmd/lbctl
	objcopy --remove-section=.comment $(DEB_STAGE)/lbd && objcopy --remove-section=.comment $(DEB_STAGE)/lbctl
	for m in lbd.8 lbctl.8 lbd.cfg.5; do gzip -9n < man/$$m > $(DEB_STAGE)/$$m.gz; done
	printf 'lbd (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- lbd developers <lbd@example.org>  %s\n' \
		'$(DEB_VERSION)' "$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		"$$(git log -1 --format=%aD 2>/dev/null || date -R)" | gzip -9n > $(DEB_STAGE)/changelog.gz
	rm -f dist/lbd_$(DEB_VERSION)_$(DEB_ARCH).deb
	DEB_VERSION='$(DEB_VERSION)' DEB_ARCH='$(DEB_ARCH)' GOFLAGS= \
		$(GO) run $(NFPM) pkg --packager deb --config packaging/deb/nfpm.yaml --target dist/lbd_$(DEB_VERSION)_$(DEB_ARCH).deb

# Build the package, run lintian on it (errors and warnings fail), install it with
# dpkg, check the shipped configuration with the installed lbd and the
# installed units, then purge it again: an /etc/lbd/lbd.cfg left behind
# would become lbctl's default for later test runs on the machine (CI).
deb-check: deb
	lintian --fail-on error,warning --tag-display-limit 0 dist/lbd_$(DEB_VERSION)_$(DEB_ARCH).deb
	dpkg -i dist/lbd_$(DEB_VERSION)_$(DEB_ARCH).deb
	/usr/sbin/lbd -c -v -f /etc/lbd/lbd.cfg
	/usr/sbin/pound -V && /usr/sbin/poundctl -V
	systemd-analyze verify /lib/systemd/system/lbd.service /lib/systemd/system/lbd.socket
	dpkg --purge lbd
	test ! -e /etc/lbd/lbd.cfg && test ! -e /usr/sbin/pound

clean:
	rm -rf $(BIN) dist

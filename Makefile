# MemoryPressure — see README.md.
#   make demo   installs what is missing, builds release, runs the built-in scenario
#   make test   installs what is missing and runs the tests
#   make test-stress  runs the whole suite STRESS_RUNS (10) times beside two CPU-bound processes
#   make bench  runs the benchmarks and rewrites Reports/
#   make bench-micro  runs the micro-benchmarks (package-benchmark) and prints their figures
#   make bench-check  fails when a micro-benchmark allocates more than Benchmarks/Thresholds allow
#   make fuzz   builds the libFuzzer targets (Tests/Fuzz) and runs each for FUZZ_SECONDS (60)
#   make docs   builds the libraries' DocC documentation into .build/docs and lists DocC's warnings
#   make man    writes the man page of mempressure to .build/man/mempressure.1
#   make c-client  builds the lifecycle protocol's C client and writes its pkg-config file
#   make install   installs the release binaries, man page, completions, systemd units and the C
#                  client under PREFIX (/usr/local; DESTDIR for staging); make uninstall removes them
#   make deb       builds the Debian package .build/deb/mempressure_VERSION_ARCH.deb
#   make test-deb  builds it, installs it, runs it with the Swift toolchain hidden, and purges it

SWIFT ?= swift
# Debian packages the build and the tests need (jemalloc, libunwind and zlib in the system's own
# directories; pkg-config names jemalloc's for static-libs).
APT_PACKAGES := libjemalloc-dev libunwind-dev zlib1g-dev pkg-config util-linux
# The benchmarks also compare against smem and pmap (procps), and jetsam against earlyoom and
# nohang (which the benchmark starts itself, each inside a PID namespace of its own); redis-bench
# measures redis-server (which it starts itself, as its own child); pg-bench measures PostgreSQL
# (a cluster of its own, initdb'd in a scratch directory, its postmaster the benchmark's child,
# pg_prewarm and pg_buffercache from postgresql-contrib) through libpq (libpq-dev); their plots
# are drawn by gnuplot. export-bench measures the Prometheus exporter against node_exporter and
# process-exporter (Debian's prometheus-node-exporter and prometheus-process-exporter, which it
# starts itself on loopback ports of its own; their services are never started). programs-bench
# supervises redis-server, PostgreSQL and headless chromium (curl reads its DevTools endpoint) as
# apps, each in a scratch directory of its own.
# libCacheSim's Python package, for purgeable-bench's miss-ratio comparison (from PyPI).
LIBCACHESIM_VERSION := 0.3.5
# The exporter's tests start a real Prometheus server, check expositions with promtool and run
# the shipped rules' unit tests (`promtool test rules`, Sources/MemPressureExporter/Operator), all from
# Debian's `prometheus` package (installed without starting its service: see test-deps).
# The clients' tests build the C example with gcc through the C client's pkg-config file, run
# the Python client and its example with python3, and install it with pip into a virtual
# environment (python3-venv brings pip; the client needs nothing else).
TEST_APT_PACKAGES := prometheus gcc python3 python3-venv
# make deb computes the package's dependencies with dpkg-shlibdeps (dpkg-dev); make test-deb
# verifies the units with systemd-analyze (systemd), finds the page with man (man-db), builds a C
# app through pkg-config and scrapes the exporter with python3.
DEB_APT_PACKAGES := dpkg-dev
TEST_DEB_APT_PACKAGES := systemd man-db gcc pkg-config python3
BENCH_APT_PACKAGES := smem time procps earlyoom nohang util-linux gnuplot-nox redis-server postgresql postgresql-contrib libpq-dev chromium curl prometheus-node-exporter prometheus-process-exporter

export PATH := /opt/swift/usr/bin:$(PATH)

# Release builds link the Swift runtime and Foundation statically: the binaries need only libc,
# libstdc++, jemalloc, libunwind and zlib, and run where Swift is not installed (make test-deb
# checks it with the toolchain's directory hidden). The demo and the benchmarks run these too.
# --no-export-dynamic undoes the -export-dynamic that the static runtime's link arguments add:
# exporting all of the program's ~16,500 symbols made every symbol the libraries look up at start
# search them first, and dladdr scan them (0.3 ms and 1.1 MiB of every command's start-up,
# Reports/vmtracker.md). Call stacks still name our functions: libunwind reads .symtab.
RELEASE := -c release --static-swift-stdlib -Xlinker --no-export-dynamic
# jemalloc and libstdc++ linked into the release mempressure-commands (Package.swift's staticLinking says
# why): static-libs puts what that link needs in STATIC_LIBS, and RELEASE_BUILD names the
# directory to the manifest when it is complete. Without jemalloc's PIC archive or the
# toolchain's libstdc++.a, static-libs says so and the build links both as shared objects.
STATIC_LIBS := $(CURDIR)/.build/static-libs
RELEASE_BUILD = MEMPRESSURE_STATIC_LIBS="$$(d='$(STATIC_LIBS)'; test -f "$$d/jemalloc.o" && test -f "$$d/libjemalloc.a" && test -L "$$d/libstdc++.a" && echo "$$d")" $(SWIFT) build $(RELEASE)
VERSION := $(shell sed -n 's/^package let mempressureVersion = "\(.*\)"$$/\1/p' Sources/MemPressureOneShot/Output.swift)

.PHONY: deps test-deps test-packages bench-deps bench-packages build static-libs check-static demo test test-stress fuzz bench bench-quick bench-micro bench-check bench-thresholds reports fixtures docs man c-client install uninstall deb test-deb clean

define install_missing
	@if command -v dpkg >/dev/null 2>&1; then \
	  missing=""; \
	  for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    echo "installing:$$missing"; \
	    if [ "$$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	    else echo "make: please install:$$missing (apt-get install -y$$missing)" >&2; exit 1; fi; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  fi; \
	fi
	@command -v $(SWIFT) >/dev/null 2>&1 || { echo "make: swift not found (Swift 6.2 or later, from swift.org)" >&2; exit 1; }
endef

deps:
	$(call install_missing,$(APT_PACKAGES))

# earlyoom and nohang are daemons that kill processes machine-wide, redis-server's and
# postgresql's packages would start a redis service and the cluster `main` they create, and the
# exporters' packages would start node_exporter and process-exporter on their public ports: their
# packages must not start them. A policy-rc.d that refuses every start is put in place for the
# install when there is none, and removed again however the install ends (postgresql's `main`
# cluster is then created but stays down; pg-bench never uses it: its cluster, socket directory
# and data directory are its own). purgeable-bench compares its miss ratios with libCacheSim's
# through its Python package (Benchmarks/scripts/libcachesim_missratios.py), installed from PyPI
# unless python3 can already import it; without it the benchmark prints ours only.
bench-deps: deps
	@made=; trap '[ -z "$$made" ] || rm -f /usr/sbin/policy-rc.d' EXIT; \
	if [ ! -e /usr/sbin/policy-rc.d ] && [ "$$(id -u)" = 0 ]; then \
	  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made=1; \
	fi; \
	$(MAKE) --no-print-directory bench-packages
	@python3 -c 'import libcachesim' >/dev/null 2>&1 || python3 -m pip install --quiet libcachesim==$(LIBCACHESIM_VERSION)

bench-packages:
	$(call install_missing,$(BENCH_APT_PACKAGES))

# prometheus's package would start a prometheus service on install: as for bench-deps, a
# policy-rc.d refusing every start is in place for the install when there is none, and removed
# however it ends. The tests start their own server, on loopback, with a scratch directory.
test-deps: deps
	@made=; trap '[ -z "$$made" ] || rm -f /usr/sbin/policy-rc.d' EXIT; \
	if [ ! -e /usr/sbin/policy-rc.d ] && [ "$$(id -u)" = 0 ]; then \
	  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made=1; \
	fi; \
	$(MAKE) --no-print-directory test-packages

test-packages:
	$(call install_missing,$(TEST_APT_PACKAGES))

build: static-libs
	$(RELEASE_BUILD)
	@$(MAKE) --no-print-directory check-static

# The toolchain's directory is found here, in the recipe, where the PATH this Makefile exports
# applies. The directory is made anew (and mempressure-commands unlinked, since SwiftPM relinks only when
# its flags change) whenever the archive or libstdc++.a differ from those it was made from: their
# paths and checksums are its stamp.
static-libs: deps
	@set -e; d='$(STATIC_LIBS)'; \
	tb="$$(dirname "$$(readlink -f "$$(command -v $(SWIFT))")")"; \
	je="$$(pkg-config --variable=libdir jemalloc 2>/dev/null || echo "/usr/lib/$$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)")/libjemalloc_pic.a"; \
	cxx="$$("$$tb/clang" -print-file-name=libstdc++.a 2>/dev/null || true)"; \
	if [ ! -f "$$je" ] || [ ! -f "$$cxx" ] || [ ! -x "$$tb/ld.lld" ]; then \
	  if [ -e "$$d" ]; then rm -rf "$$d"; rm -f .build/release/mempressure-commands; fi; \
	  echo "static-libs: no $$je, libstdc++.a or ld.lld in $$tb: mempressure-commands loads jemalloc and libstdc++ as shared objects"; \
	else \
	  stamp="$$(sha256sum "$$je" "$$cxx")"; \
	  if [ "$$(cat "$$d/stamp" 2>/dev/null)" != "$$stamp" ]; then \
	    rm -rf "$$d"; mkdir -p "$$d"; rm -f .build/release/mempressure-commands; \
	    "$$tb/ld.lld" -r --whole-archive "$$je" -o "$$d/jemalloc.o"; \
	    printf '!<arch>\n' > "$$d/libjemalloc.a"; \
	    ln -s "$$cxx" "$$d/libstdc++.a"; \
	    printf '%s\n' "$$stamp" > "$$d/stamp"; \
	  fi; \
	fi

# What static-libs promises, checked on the built binary: no libjemalloc or libstdc++ among the
# objects it loads, and the C library's own malloc and free bound to the jemalloc inside it. And
# what Package.swift promises of mempressure: fully static, no dynamic section at all.
check-static:
	@set -e; b=.build/release/mempressure; test -f "$$b" || { echo "check-static: no $$b" >&2; exit 1; }; \
	readelf -h "$$b" | grep -q 'Type: *EXEC' && readelf -d "$$b" | grep -q 'There is no dynamic section' \
	  || { echo "check-static: $$b is not a fully static executable (readelf -h, -d)" >&2; exit 1; }
	@set -e; b=.build/release/mempressure-commands; \
	if [ -f '$(STATIC_LIBS)/jemalloc.o' ]; then \
	  if readelf -d "$$b" | grep -E 'NEEDED.*(libjemalloc|libstdc\+\+)'; then echo "check-static: $$b still loads the libraries above" >&2; exit 1; fi; \
	  for sym in malloc free; do \
	    LD_DEBUG=bindings "$$b" --version 2>&1 | grep -q "binding file [^ ]*libc\.so\.6 .* to $$b .*symbol \`$$sym'" \
	      || { echo "check-static: the C library's $$sym does not reach the jemalloc in $$b" >&2; exit 1; }; \
	  done; \
	fi

demo: build
	.build/release/mempressure demo

# The freeze-dry suite adds a temporary swap file, which changes reclaim for every process on
# the machine: it runs alone, after the others.
test: test-deps
	$(SWIFT) test --skip FreezeDryTests
	MEMPRESSURE_SWAP_TESTS=1 $(SWIFT) test --skip-build --filter FreezeDryTests

# The suite on a busy machine: STRESS_RUNS runs (default 10) with two CPU-bound processes beside
# it, each checked for what it left behind (processes, cgroups, directories). Tests/stress.sh
# says more.
STRESS_RUNS ?= 10
test-stress: test-deps
	$(SWIFT) build --build-tests
	STRESS_RUNS=$(STRESS_RUNS) SWIFT=$(SWIFT) Tests/stress.sh

# The parsers, decoders and renderers under libFuzzer (Tests/Fuzz, a package of its own): each
# target runs FUZZ_SECONDS on a scratch copy of its corpus; a failure keeps its inputs, prints
# how to reproduce them and fails. Tests/Fuzz/fuzz.sh says more (FUZZ_TARGETS, FUZZ_MERGE).
FUZZ_SECONDS ?= 60
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT=$(SWIFT) Tests/Fuzz/fuzz.sh

bench: bench-deps static-libs
	$(RELEASE_BUILD)
	cd Benchmarks && $(SWIFT) run -c release vmtracker-bench --mempressure-build ../.build/release --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release purgeable-bench --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release mappedfiles-bench --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release jetsam-bench --build ../.build/release --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release redis-bench --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release pg-bench --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release resume-bench --build ../.build/release --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release programs-bench --build ../.build/release --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release switching-bench --build ../.build/release --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release export-bench --build ../.build/release --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release soak-bench --build ../.build/release --output ../Reports

# The same suites in a few minutes (fewer rounds, smaller sizes): a smoke run CI could afford.
# They print their reports; the files go to a temporary directory, removed at the end, so that
# Reports/ keeps the full runs.
bench-quick: bench-deps static-libs
	$(RELEASE_BUILD)
	cd Benchmarks && $(SWIFT) build -c release --product resume-bench && $(SWIFT) build -c release --product redis-bench && $(SWIFT) build -c release --product pg-bench && $(SWIFT) build -c release --product switching-bench && $(SWIFT) build -c release --product export-bench && $(SWIFT) build -c release --product jetsam-bench && $(SWIFT) build -c release --product soak-bench && $(SWIFT) build -c release --product programs-bench
	@out=$$(mktemp -d /tmp/mempressure-bench-quick.XXXXXX); trap 'rm -rf "$$out"' EXIT; \
	cd Benchmarks && .build/release/resume-bench --quick --build ../.build/release --output "$$out" && \
	.build/release/redis-bench --quick --output "$$out" && \
	.build/release/pg-bench --quick --output "$$out" && \
	.build/release/programs-bench --quick --build ../.build/release --output "$$out" && \
	.build/release/switching-bench --quick --build ../.build/release --output "$$out" && \
	.build/release/export-bench --quick --build ../.build/release --output "$$out" && \
	.build/release/jetsam-bench --quick --sections end-to-end --build ../.build/release --output "$$out" && \
	.build/release/soak-bench --quick --build ../.build/release --output "$$out"

# The micro-benchmarks (package-benchmark, in Benchmarks/Benchmarks/): wall clock, throughput and
# mallocs of the hot paths. MICRO_ARGS is the plugin's command and options, a plain run by default:
#   make bench-micro MICRO_ARGS="baseline update main"    records a baseline named main
#   make bench-micro MICRO_ARGS="baseline compare main"   runs again and prints the changes
#   make bench-micro MICRO_ARGS="baseline check main"     the same, exit status 2 on a regression
# The plugin builds with other settings than `swift build -c release`: a build folder of its own
# keeps the two from rebuilding everything whenever they alternate.
MICRO_ARGS ?=
bench-micro: deps
	cd Benchmarks && $(SWIFT) package --scratch-path .build-micro --disable-sandbox --allow-writing-to-package-directory benchmark $(MICRO_ARGS)

# The regression gate: the micro-benchmarks in gate mode (MEMPRESSURE_BENCH_GATE=1: the mallocs
# of a fixed number of iterations on seeded inputs, the same in every run; nothing timed) checked
# against the static thresholds in Benchmarks/Thresholds. Fails when any benchmark allocates more
# than its threshold ("WORSE"), and also when one allocates less ("BETTER"), so that the thresholds
# are lowered with it: `make bench-thresholds` records them afresh (commit the files).
bench-check: deps
	cd Benchmarks && MEMPRESSURE_BENCH_GATE=1 $(SWIFT) package --scratch-path .build-micro --disable-sandbox benchmark thresholds check --path Thresholds --no-progress
bench-thresholds: deps
	cd Benchmarks && MEMPRESSURE_BENCH_GATE=1 $(SWIFT) package --scratch-path .build-micro --disable-sandbox --allow-writing-to-package-directory benchmark thresholds update --path Thresholds --no-progress

# Re-renders the reports (Markdown, and plots through gnuplot) from their JSON without measuring.
reports: bench-deps
	cd Benchmarks && $(SWIFT) run -c release vmtracker-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release purgeable-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release mappedfiles-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release jetsam-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release redis-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release pg-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release resume-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release programs-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release switching-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release export-bench --render-only --output ../Reports
	cd Benchmarks && $(SWIFT) run -c release soak-bench --render-only --output ../Reports

# Recaptures the golden /proc fixtures from real processes (then review and commit them).
fixtures:
	$(SWIFT) build
	Tests/TestSupport/Fixtures/capture.sh .build/debug

# The libraries' DocC catalogs (Sources/<Module>/<Module>.docc), built by swift-docc-plugin into
# one combined archive, .build/docs/MemoryPressure.doccarchive (a static site: serve the folder and
# open /documentation/vmtracker, ...). DocC's own warnings (broken symbol links, undocumented
# parameters) are listed at the end with their count; SwiftPM's warnings about packages are not.
DOC_TARGETS := MemPressureVMTracker MemPressurePurgeable MemPressureCachePolicies MemPressureMappedFiles MemPressureMonitor MemPressureLifecycleProtocol MemPressureLifecycle MemPressureJetsam MemPressureExporter MemPressureExporterServer MemPressureClient
docs: deps
	@mkdir -p .build/docs
	@log=.build/docs/docc.log; \
	$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation \
	  $(addprefix --target ,$(DOC_TARGETS)) --enable-experimental-combined-documentation \
	  --output-path .build/docs/MemoryPressure.doccarchive >$$log 2>&1 || { cat $$log; echo "make docs: failed (log: $$log)" >&2; exit 1; }; \
	awk '/^warning: / && !/^warning: .[^ ]*.: / { print; getline; print }' $$log > .build/docs/warnings.txt; \
	cat .build/docs/warnings.txt; \
	echo "DocC warnings: $$(grep -c '^warning: ' .build/docs/warnings.txt) (listed in .build/docs/warnings.txt; full log $$log)"; \
	echo "documentation: .build/docs/MemoryPressure.doccarchive"

# The man page, from the command's own definition (swift-argument-parser's generate-manual
# plugin), every subcommand in one page: view it with `man -l .build/man/mempressure.1`. The copy
# in Sources/mempressure/Packaging is the one installed, kept in the repository so that installing
# needs no plugin run; a test fails when it misses a subcommand or option of --help. A blank
# line in a command's discussion becomes a paragraph break (.Pp): mdoc warns on empty lines.
man: deps
	$(SWIFT) package plugin generate-manual --configuration debug
	@mkdir -p .build/man
	sed 's/^$$/.Pp/' .build/plugins/GenerateManual/outputs/mempressure-commands/mempressure.1 > .build/man/mempressure.1
	cp .build/man/mempressure.1 $(PACKAGING)/mempressure.1
	@echo "man page: .build/man/mempressure.1, and $(PACKAGING)/mempressure.1 (installed; commit it)"

# The lifecycle protocol's C client: the static library .build/release/libmempressure-client.a,
# its header in Sources/MemPressureClientC/include, and .build/pkgconfig/mempressure-client.pc
# (from mempressure-client.pc.in) pointing at both. Then, for a C app:
#   PKG_CONFIG_PATH=.build/pkgconfig cc app.c $$(pkg-config --cflags --libs --static mempressure-client)
c-client: static-libs
	$(RELEASE_BUILD) --product mempressure-client
	@mkdir -p .build/pkgconfig
	sed -e 's|@includedir@|$(CURDIR)/Sources/MemPressureClientC/include|' -e 's|@libdir@|$(CURDIR)/.build/release|' \
	  Sources/MemPressureClientC/mempressure-client.pc.in > .build/pkgconfig/mempressure-client.pc
	@echo "pkg-config file: .build/pkgconfig/mempressure-client.pc (PKG_CONFIG_PATH=$(CURDIR)/.build/pkgconfig)"

# Where `make install` puts things: the usual places under PREFIX, each overridable, and DESTDIR
# in front of all of them for staging (as `make deb` does). The helpers the supervisor starts
# (mempressure-exec, mempressure-guard), the model app and hog the scenarios and the demo run,
# mempressure-commands (every command: mempressure becomes it for all but the quickest lines)
# and mempressure-server (the commands with the HTTP stack, which `export` and
# `supervise --export` run in) are found next to `mempressure`, so they go to BINDIR with it. The man page installed is the
# one in Sources/mempressure/Packaging (`make man` regenerates it; a test checks it covers every
# subcommand and option of --help). Completions are printed by the binary being installed.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
DOCDIR ?= $(DATADIR)/doc/mempressure
BASH_COMPLETION_DIR ?= $(DATADIR)/bash-completion/completions
ZSH_COMPLETION_DIR ?= $(DATADIR)/zsh/site-functions
FISH_COMPLETION_DIR ?= $(DATADIR)/fish/vendor_completions.d
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
PROGRAMS := mempressure mempressure-commands mempressure-server mempressure-exec mempressure-guard mempressure-workload mempressure-hog
UNITS := mempressure-supervise.service mempressure-export.service
PACKAGING := Sources/mempressure/Packaging
# Every file `make install` writes, relative to DESTDIR (what `make uninstall` removes).
INSTALLED = $(addprefix $(BINDIR)/,$(PROGRAMS)) $(MANDIR)/man1/mempressure.1 \
  $(BASH_COMPLETION_DIR)/mempressure $(ZSH_COMPLETION_DIR)/_mempressure $(FISH_COMPLETION_DIR)/mempressure.fish \
  $(addprefix $(SYSTEMD_UNIT_DIR)/,$(UNITS)) \
  $(LIBDIR)/libmempressure-client.a $(INCLUDEDIR)/mempressure_client.h $(LIBDIR)/pkgconfig/mempressure-client.pc \
  $(DATADIR)/mempressure/operator/mempressure.rules.yml $(DATADIR)/mempressure/operator/mempressure.rules.test.yml \
  $(DATADIR)/mempressure/operator/grafana-dashboard.json $(DOCDIR)/LICENSE

install: build
	$(RELEASE_BUILD) --product mempressure-client
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASH_COMPLETION_DIR) $(DESTDIR)$(ZSH_COMPLETION_DIR) \
	  $(DESTDIR)$(FISH_COMPLETION_DIR) $(DESTDIR)$(SYSTEMD_UNIT_DIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
	  $(DESTDIR)$(DATADIR)/mempressure/operator $(DESTDIR)$(DOCDIR)
	for p in $(PROGRAMS); do install -m 0755 .build/release/$$p $(DESTDIR)$(BINDIR)/$$p || exit 1; done
	install -m 0644 $(PACKAGING)/mempressure.1 $(DESTDIR)$(MANDIR)/man1/mempressure.1
	.build/release/mempressure --generate-completion-script bash > $(DESTDIR)$(BASH_COMPLETION_DIR)/mempressure
	.build/release/mempressure --generate-completion-script zsh > $(DESTDIR)$(ZSH_COMPLETION_DIR)/_mempressure
	.build/release/mempressure --generate-completion-script fish > $(DESTDIR)$(FISH_COMPLETION_DIR)/mempressure.fish
	chmod 0644 $(DESTDIR)$(BASH_COMPLETION_DIR)/mempressure $(DESTDIR)$(ZSH_COMPLETION_DIR)/_mempressure $(DESTDIR)$(FISH_COMPLETION_DIR)/mempressure.fish
	for u in $(UNITS); do sed 's|@BINDIR@|$(BINDIR)|g' $(PACKAGING)/$$u.in > $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u && chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u || exit 1; done
	install -m 0644 .build/release/libmempressure-client.a $(DESTDIR)$(LIBDIR)/libmempressure-client.a
	install -m 0644 Sources/MemPressureClientC/include/mempressure_client.h $(DESTDIR)$(INCLUDEDIR)/mempressure_client.h
	sed -e 's|@includedir@|$(INCLUDEDIR)|' -e 's|@libdir@|$(LIBDIR)|' Sources/MemPressureClientC/mempressure-client.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/mempressure-client.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/mempressure-client.pc
	install -m 0644 Sources/MemPressureExporter/Operator/mempressure.rules.yml Sources/MemPressureExporter/Operator/mempressure.rules.test.yml \
	  Sources/MemPressureExporter/Operator/grafana-dashboard.json $(DESTDIR)$(DATADIR)/mempressure/operator/
	install -m 0644 LICENSE $(DESTDIR)$(DOCDIR)/LICENSE
	@echo "installed under $(DESTDIR)$(PREFIX)"

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(DATADIR)/mempressure/operator $(DESTDIR)$(DATADIR)/mempressure $(DESTDIR)$(DOCDIR) 2>/dev/null

# The Debian package: `make install` staged with PREFIX=/usr under .build/deb/root (units in
# /usr/lib/systemd/system, zsh completions where Debian's zsh looks), the man page compressed,
# the license as /usr/share/doc/mempressure/copyright, the binaries without their debugging
# information (their symbols stay, for backtraces), and Depends computed from the libraries
# the binaries load (each library's Debian package, found with dpkg -S).
DEB_ROOT := .build/deb/root
deb: build
	$(call install_missing,$(DEB_APT_PACKAGES))
	rm -rf $(DEB_ROOT) && mkdir -p $(DEB_ROOT)/DEBIAN
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/$(DEB_ROOT) PREFIX=/usr ZSH_COMPLETION_DIR=/usr/share/zsh/vendor-completions
	gzip -9n $(DEB_ROOT)/usr/share/man/man1/mempressure.1
	strip --strip-debug $(addprefix $(DEB_ROOT)/usr/bin/,$(PROGRAMS))
	mv $(DEB_ROOT)/usr/share/doc/mempressure/LICENSE $(DEB_ROOT)/usr/share/doc/mempressure/copyright
	@arch=$$(dpkg --print-architecture); \
	depends=$$(Sources/mempressure/Packaging/deb-depends.sh $(addprefix $(DEB_ROOT)/usr/bin/,$(PROGRAMS))) || exit 1; \
	size=$$(du -sk --exclude=DEBIAN $(DEB_ROOT) | cut -f1); \
	sed -e "s|@VERSION@|$(VERSION)|" -e "s|@ARCH@|$$arch|" -e "s|@SIZE@|$$size|" -e "s|@DEPENDS@|$$depends|" \
	  $(PACKAGING)/control.in > $(DEB_ROOT)/DEBIAN/control; \
	dpkg-deb --root-owner-group --build $(DEB_ROOT) .build/deb/mempressure_$(VERSION)_$$arch.deb
	@echo "package: $$(ls .build/deb/mempressure_$(VERSION)_*.deb)"

# The package as a user gets it: installed with apt (which brings its dependencies), then run with
# the Swift toolchain's directory hidden (Tests/deb-test.sh says what it checks), then purged.
test-deb: deb
	$(call install_missing,$(TEST_DEB_APT_PACKAGES))
	Tests/deb-test.sh .build/deb/mempressure_$(VERSION)_$$(dpkg --print-architecture).deb

clean:
	rm -rf .build Benchmarks/.build Benchmarks/.build-micro Tests/Fuzz/.build

# taxd build. `make` builds build/taxd only; `make run` and `make test` are the two
# commands a new user needs (both install missing dependencies first).

CC       ?= cc
# libpq's headers live in their own directory on Debian (libpq-dev); only
# src/store/ includes them.
PG_INCLUDE := $(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
CFLAGS_COMMON = -std=c17 -D_GNU_SOURCE -Isrc -I$(PG_INCLUDE) -g \
  -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# Each object records the headers it includes (build/**/*.d, read at the end of this
# file), so a header change rebuilds only what includes it; -MP keeps a removed header
# from breaking the build.
DEPFLAGS = -MMD -MP
CFLAGS   ?= -O2
# cairo (PDF surface), cairo-ft with fontconfig and FreeType: only src/taxdocs/pdf.c
# includes their headers (taxdocs PDFs, issue 19), so only it gets their -I flags.
PDF_PKGS   = cairo fontconfig freetype2
PDF_CFLAGS := $(shell pkg-config --cflags $(PDF_PKGS) 2>/dev/null)
PDF_LIBS   := $(shell pkg-config --libs $(PDF_PKGS) 2>/dev/null)
LIBS     = -lmicrohttpd -ljansson -lsqlite3 -lpq -lcrypto -lcurl -lpthread $(PDF_LIBS)
ASAN     = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# taxd's own sources; src/client/ (libtaxdclient) and src/taxctl/ are built below.
SRC      = $(shell find src -name '*.c' -not -path 'src/client/*' -not -path 'src/taxctl/*' | sort)
LIB_SRC  = $(filter-out src/main.c,$(SRC))
UNIT_SRC = $(filter-out tests/unit/test_client_%,$(wildcard tests/unit/test_*.c))
CLIENT_UNIT_SRC = $(wildcard tests/unit/test_client_*.c)
UNIT_SUPPORT = $(wildcard tests/unit/support/*.c)

OBJ       = $(SRC:%.c=build/obj/%.o)
LIB_OBJ   = $(LIB_SRC:%.c=build/obj/%.o)
ASAN_OBJ  = $(SRC:%.c=build/asan/obj/%.o)
ASAN_LIB  = $(LIB_SRC:%.c=build/asan/obj/%.o)
UNIT_BIN  = $(UNIT_SRC:tests/unit/%.c=build/tests/%) $(CLIENT_UNIT_SRC:tests/unit/%.c=build/client/tests/%)
UNIT_ASAN = $(UNIT_SRC:tests/unit/%.c=build/asan/tests/%) $(CLIENT_UNIT_SRC:tests/unit/%.c=build/asan/client/tests/%)

PYTEST   = /usr/bin/python3 -m pytest
DEPS_STAMP = build/.deps-installed

.PHONY: all client install uninstall bench-client deps pg-tools run run-cluster bench-pg test unit unit-asan api api-pg api-asan hostile asan bench bench-ingest bench-report bench-gains bench-webhooks bench-recalc fuzz fuzz-smoke clean
all: build/taxd client

build/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_COMMON) $(DEPFLAGS) $(CFLAGS) -c $< -o $@

build/asan/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC asan $<"
	@$(CC) $(CFLAGS_COMMON) $(DEPFLAGS) -O1 $(ASAN) -c $< -o $@

build/obj/src/taxdocs/pdf.o build/asan/obj/src/taxdocs/pdf.o: CFLAGS_COMMON += $(PDF_CFLAGS)

build/taxd: $(OBJ)
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS) -o $@ $^ $(LIBS)

build/asan/taxd: $(ASAN_OBJ)
	@echo "  LINK    $@"
	@$(CC) $(ASAN) -o $@ $^ $(LIBS)

# Unit tests link the library objects and the shared test support (tests/unit/support/).
build/tests/%: tests/unit/%.c $(UNIT_SUPPORT) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS_COMMON) $(CFLAGS) -Itests/unit/support -o $@ $^ $(LIBS) -lcmocka

build/asan/tests/%: tests/unit/%.c $(UNIT_SUPPORT) $(ASAN_LIB)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS_COMMON) -O1 $(ASAN) -Itests/unit/support -o $@ $^ $(LIBS) -lcmocka

# ---- libtaxdclient and taxctl (issue 18): a separate product that talks to
# taxd over HTTP only, so it includes include/taxd/client.h and its own files,
# never taxd's src/ (tests/api/test_layout.py). The shared library exports
# taxd_* only (src/client/libtaxdclient.map); taxctl and the example link the
# static one, so they run from the build tree without an installed library.
CLIENT_VERSION = 0.1.0
CLIENT_SOVERSION = 0
CLIENT_LIBS  = -lcurl -ljansson -lcrypto -lpthread
TAXCTL_LIBS  = $(CLIENT_LIBS) -lmicrohttpd -lssl
CLIENT_SRC   = $(sort $(wildcard src/client/*.c))
TAXCTL_SRC   = $(sort $(wildcard src/taxctl/*.c))
CLIENT_OBJ   = $(CLIENT_SRC:%.c=build/client/obj/%.o)
TAXCTL_OBJ   = $(TAXCTL_SRC:%.c=build/client/obj/%.o)
CLIENT_ASAN_OBJ = $(CLIENT_SRC:%.c=build/asan/client/obj/%.o)
TAXCTL_ASAN_OBJ = $(TAXCTL_SRC:%.c=build/asan/client/obj/%.o)
CLIENT_CFLAGS = $(CFLAGS_COMMON) -Iinclude -fPIC
CLIENT_SHARED = build/client/libtaxdclient.so.$(CLIENT_VERSION)
CLIENT_STATIC = build/client/libtaxdclient.a
EXAMPLES     = $(patsubst examples/%.c,build/client/examples/%,$(wildcard examples/*.c))

client: $(CLIENT_STATIC) $(CLIENT_SHARED) build/client/taxctl build/client/taxdclient.pc $(EXAMPLES)

build/client/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CLIENT_CFLAGS) $(DEPFLAGS) $(CFLAGS) -c $< -o $@

build/asan/client/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC asan $<"
	@$(CC) $(CLIENT_CFLAGS) $(DEPFLAGS) -O1 $(ASAN) -c $< -o $@

$(CLIENT_STATIC): $(CLIENT_OBJ)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^

build/asan/client/libtaxdclient.a: $(CLIENT_ASAN_OBJ)
	@echo "  AR asan $@"
	@rm -f $@ && ar rcs $@ $^

$(CLIENT_SHARED): $(CLIENT_OBJ) src/client/libtaxdclient.map
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS) -shared -Wl,-soname,libtaxdclient.so.$(CLIENT_SOVERSION) \
	  -Wl,--version-script=src/client/libtaxdclient.map -Wl,--no-undefined \
	  -o $@ $(CLIENT_OBJ) $(CLIENT_LIBS)
	@ln -sf libtaxdclient.so.$(CLIENT_VERSION) build/client/libtaxdclient.so.$(CLIENT_SOVERSION)
	@ln -sf libtaxdclient.so.$(CLIENT_SOVERSION) build/client/libtaxdclient.so

build/client/taxctl: $(TAXCTL_OBJ) $(CLIENT_STATIC)
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS) -o $@ $^ $(TAXCTL_LIBS)

build/asan/client/taxctl: $(TAXCTL_ASAN_OBJ) build/asan/client/libtaxdclient.a
	@echo "  LINK    $@"
	@$(CC) $(ASAN) -o $@ $^ $(TAXCTL_LIBS)

build/client/examples/%: examples/%.c $(CLIENT_STATIC)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS_COMMON) -Iinclude $(CFLAGS) -o $@ $^ $(CLIENT_LIBS)

# The library's unit tests link the static archive (its internal functions
# included) and include src/client/internal.h.
build/client/tests/%: tests/unit/%.c $(CLIENT_STATIC)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CLIENT_CFLAGS) $(CFLAGS) -o $@ $^ $(CLIENT_LIBS) -lcmocka

build/asan/client/tests/%: tests/unit/%.c build/asan/client/libtaxdclient.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CLIENT_CFLAGS) -O1 $(ASAN) -o $@ $^ $(CLIENT_LIBS) -lcmocka

# taxctl import's own modules (not in the library) are linked into their test.
TAXCTL_IMPORT_MODULES = src/taxctl/csv.c src/taxctl/txconv.c src/taxctl/journal.c
build/client/tests/test_client_import: $(TAXCTL_IMPORT_MODULES:%.c=build/client/obj/%.o)
build/asan/client/tests/test_client_import: $(TAXCTL_IMPORT_MODULES:%.c=build/asan/client/obj/%.o)

# The pkg-config file names its prefix: the build tree's copy says /usr/local,
# and `make install PREFIX=...` writes the installed one with that PREFIX.
PREFIX ?= /usr/local
PC_SED = sed -e 's|@VERSION@|$(CLIENT_VERSION)|g'
build/client/taxdclient.pc: src/client/taxdclient.pc.in
	@mkdir -p $(dir $@)
	@$(PC_SED) -e 's|@PREFIX@|/usr/local|g' $< > $@

MAN_PAGES = $(wildcard man/*.1)
install: build/taxd client
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/include/taxd $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 build/taxd build/client/taxctl $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 include/taxd/client.h $(DESTDIR)$(PREFIX)/include/taxd/
	install -m 0644 $(CLIENT_STATIC) $(DESTDIR)$(PREFIX)/lib/
	install -m 0755 $(CLIENT_SHARED) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libtaxdclient.so.$(CLIENT_VERSION) $(DESTDIR)$(PREFIX)/lib/libtaxdclient.so.$(CLIENT_SOVERSION)
	ln -sf libtaxdclient.so.$(CLIENT_SOVERSION) $(DESTDIR)$(PREFIX)/lib/libtaxdclient.so
	$(PC_SED) -e 's|@PREFIX@|$(PREFIX)|g' src/client/taxdclient.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/taxdclient.pc
	$(if $(MAN_PAGES),install -m 0644 $(MAN_PAGES) $(DESTDIR)$(PREFIX)/share/man/man1/)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig 2>/dev/null || true; fi

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/taxctl $(DESTDIR)$(PREFIX)/bin/taxd \
	  $(DESTDIR)$(PREFIX)/include/taxd/client.h $(DESTDIR)$(PREFIX)/lib/libtaxdclient.* \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/taxdclient.pc \
	  $(patsubst man/%,$(DESTDIR)$(PREFIX)/share/man/man1/%,$(MAN_PAGES))

asan: build/asan/taxd build/asan/client/taxctl

# PostgreSQL helpers of tests/api/test_pg_schema.py: print the schema script,
# run the advisory-locked migration against a URL.
PG_TOOLS = build/pg/print_schema build/pg/migrate_main
build/pg/%: tests/pg/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $^ $(LIBS)

pg-tools: $(PG_TOOLS)


$(DEPS_STAMP): scripts/install-deps tests/openapi/package-lock.json tests/sdk/package-lock.json
	scripts/install-deps
	@mkdir -p build && touch $@

deps: $(DEPS_STAMP)

run: deps build/taxd
	scripts/run-demo

# Two serve nodes and a worker on a private PostgreSQL behind nginx on one port
# (scripts/run-cluster): in the foreground, Ctrl-C removes everything.
run-cluster: deps build/taxd
	scripts/run-cluster

unit: $(UNIT_BIN)
	@set -e; for t in $^; do echo "== $$t"; $$t; done

unit-asan: $(UNIT_ASAN)
	@set -e; for t in $^; do echo "== $$t (asan)"; $$t; done

# The OpenAPI linter tests/api/test_openapi.py runs (npm ci in tests/openapi by
# scripts/install-deps), installed again whenever its lock file changes.
OPENAPI_LINTER = tests/openapi/node_modules/.taxd-installed-lock
$(OPENAPI_LINTER): tests/openapi/package-lock.json
	scripts/install-deps

# Taxbit's real client that tests/api/test_taxbit_sdk.py drives (npm ci in
# tests/sdk by scripts/install-deps, with Debian's chromium-headless-shell),
# installed again whenever its lock file changes.
SDK_HARNESS = tests/sdk/node_modules/.taxd-installed-lock
$(SDK_HARNESS): tests/sdk/package-lock.json
	scripts/install-deps

# API tests run the real binary; the sanitizer build is exercised by the same suite.
# The client's black-box tests (tests/api/test_client_*.py) run taxctl and
# the library's test drivers (tests/client/*.c) of the same build.
CLIENT_TOOLS = $(patsubst tests/client/%.c,build/client/tools/%,$(wildcard tests/client/*.c))
CLIENT_TOOLS_ASAN = $(patsubst tests/client/%.c,build/asan/client/tools/%,$(wildcard tests/client/*.c))
build/client/tools/%: tests/client/%.c $(CLIENT_STATIC)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CLIENT_CFLAGS) $(CFLAGS) -o $@ $^ $(CLIENT_LIBS)
build/asan/client/tools/%: tests/client/%.c build/asan/client/libtaxdclient.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(CLIENT_CFLAGS) -O1 $(ASAN) -o $@ $^ $(CLIENT_LIBS)
CLIENT_ENV = TAXCTL_BIN=$(CURDIR)/build/client/taxctl TAXD_CLIENT_TOOLS=$(CURDIR)/build/client/tools
CLIENT_ENV_ASAN = TAXCTL_BIN=$(CURDIR)/build/asan/client/taxctl TAXD_CLIENT_TOOLS=$(CURDIR)/build/asan/client/tools

api: build/taxd client $(CLIENT_TOOLS) $(OPENAPI_LINTER) $(SDK_HARNESS)
	$(CLIENT_ENV) TAXD_BIN=$(CURDIR)/build/taxd $(PYTEST) -q -m "not hostile" tests/api

api-asan: build/asan/taxd build/asan/client/taxctl $(CLIENT_TOOLS_ASAN) $(OPENAPI_LINTER) $(SDK_HARNESS)
	$(CLIENT_ENV_ASAN) TAXD_BIN=$(CURDIR)/build/asan/taxd $(PYTEST) -q -m "not hostile" \
	  --ignore=tests/api/test_sdk_harness.py tests/api

# The same suite on PostgreSQL (plain build only): a private cluster from
# tests/pg/cluster.sh (installed from Debian if missing, a temporary directory,
# user postgres, a free port), each test server on a database of its own
# (TAXD_TEST_PG, tests/api/conftest.py); tests marked sqlite_only are skipped.
# The trap stops and removes the cluster whether the suite passes, fails or is
# interrupted. TAXD_PG_STATE is per checkout, so two checkouts never share one.
# The unit tests that need a server (the libpq backend, the shared rate buckets) and
# the API suite, on a private PostgreSQL cluster started and removed here. The
# client's tests (test_client_*) are left out of this pass: they test
# libtaxdclient and taxctl, which see only HTTP, and they run against the plain
# and the ASan taxd (the CI budget is 30 minutes). test_sdk_harness.py checks the
# SDK drivers against their mock, not taxd: it runs once, in `make api`.
PG_UNIT = build/tests/test_store_pg build/tests/test_store_ratebuckets build/tests/test_store_taxdocs
api-pg: build/taxd client $(CLIENT_TOOLS) $(PG_UNIT) $(OPENAPI_LINTER) $(SDK_HARNESS)
	@set -e; trap 'tests/pg/cluster.sh stop' EXIT INT TERM; \
	tests/pg/cluster.sh start; \
	for t in $(PG_UNIT); do echo "== $$t (PostgreSQL)"; TAXD_TEST_PG=$$(tests/pg/cluster.sh url) $$t; done; \
	$(CLIENT_ENV) TAXD_TEST_PG=$$(tests/pg/cluster.sh url) TAXD_BIN=$(CURDIR)/build/taxd $(PYTEST) -q -m "not hostile" \
	  --ignore-glob='tests/api/test_client_*' --ignore=tests/api/test_sdk_harness.py tests/api

# Attacks measured for latency (tests/api/test_hostile.py): plain build only, since
# the sanitizer build's own slowness would be what they measure.
hostile: build/taxd
	TAXD_BIN=$(CURDIR)/build/taxd $(PYTEST) -q -m hostile tests/api

# Everything the suites run is compiled first, one job per core; the suites
# themselves run one after another (their timing tests measure an idle machine).
JOBS := $(shell nproc 2>/dev/null || echo 2)

test: deps
	$(MAKE) -j$(JOBS) build/taxd build/asan/taxd client asan $(UNIT_BIN) $(UNIT_ASAN) $(FUZZ_BIN)
	$(MAKE) unit
	$(MAKE) unit-asan
	$(MAKE) api
	$(MAKE) api-pg
	$(MAKE) api-asan
	$(MAKE) hostile
	$(MAKE) fuzz-smoke
	@echo "make test: unit (plain and ASan/UBSan), API (plain, PostgreSQL and ASan/UBSan), hostile-load and fuzz suites passed"

bench: deps build/taxd
	bench/http.sh

# Transactions through the API (single and batched), recalculation, upgrade and a
# 10M load, each beside ../shared/bench/ingest_floor.c run in the same session
# (BENCH_PARTS, BENCH_TX, BENCH_ACCOUNTS, ...: see bench/ingest.sh). Not part of `make test`.
bench-ingest: deps build/taxd
	bench/ingest.sh

# taxctl import of 1,000,000 transactions beside the raw batch endpoint
# (bench/ingest_load.c --batch 1000) in the same run, and a killed and
# resumed import (BENCH_CLIENT_TX, BENCH_ACCOUNTS, ...: see bench/client.sh).
bench-client: deps build/taxd client
	bench/client.sh

# PostgreSQL beside SQLite in one run (bench/pg.sh): the HTTP path with 1, 2 and
# 3 nodes, ingest single and batch against the floor, round trips per request.
bench-pg: deps build/taxd
	bench/pg.sh

# Webhook deliveries/s vs a bare libcurl loop, its durable floor (the loop plus the least SQL
# per delivery) and wrk, and event-to-delivered latency.
bench-webhooks: deps build/taxd
	bench/webhooks.sh

# Inventory-summary reports: trigger-to-completed time and peak memory at 10k,
# 100k and 1M transactions, beside a sqlite3 GROUP BY floor (see bench/report.sh).
bench-report: deps build/taxd
	bench/report.sh

# The gains report (issue 16): 10,000 accounts, 1,000,000 transactions, clean accounts,
# beside sqlite3 selecting the same rows (bench/gains_report.sh).
bench-gains: deps build/taxd
	bench/gains_report.sh

# `taxd admin inventory recalc --all` on a generated import (default 1M transactions over
# 10k accounts; bench/recalc.sh), and the byte-for-byte comparison with the branch point
# (bench/recalc_compare.sh, RECALC_COMPARE=1).
bench-recalc: deps build/taxd
	bench/recalc.sh

clean:
	rm -rf build

# Fuzzers (clang libFuzzer with ASan/UBSan): tests/fuzz/README.md says what each
# asserts. The pure modules they reach (FUZZ_LIB) are compiled once with the
# fuzzer's coverage instrumentation and linked into every target. `make fuzz`
# runs each target for FUZZ_SECONDS from its seed corpus (tests/fuzz/corpus/<t>)
# with its dictionary (tests/fuzz/dict/<t>.dict), growing a corpus of its own in
# build/fuzz/corpus/<t>, and prints one line per target with libFuzzer's final
# figures; `make fuzz-smoke` (part of `make test`) runs each for
# FUZZ_SMOKE_SECONDS from the seeds alone. Neither writes into tests/fuzz/.
# bench/fuzz_long.sh is the recorded 10-minute-per-target run (docs/operations.md).
# FUZZ_TARGETS picks some: make fuzz FUZZ_TARGETS="fuzz_tx fuzz_decimal".
FUZZ_SRC  = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_TARGETS ?= $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZ_BIN  = $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
FUZZ_LIB  = src/core/validate.c src/http/errors.c src/http/url.c src/http/router.c \
            src/http/token.c src/core/scopes.c src/core/crypto.c src/core/ids.c \
            src/core/clock.c src/core/buf.c src/core/utf8.c src/core/dbuf.c \
            src/core/decimal.c src/core/domain.c src/api/tx_document.c \
            src/webhooks/payload.c src/webhooks/signature.c \
            src/reports/format.c src/reports/links.c \
            src/core/countries.c src/core/jsonval.c src/core/tin.c \
            src/taxdocs/model.c src/taxdocs/comprehensive.c
FUZZ_OBJ  = $(FUZZ_LIB:%.c=build/fuzz/obj/%.o)
# The client's targets (tests/fuzz/fuzz_client_*.c) link libtaxdclient's
# sources (which need -Iinclude, and curl, jansson and libcrypto) and taxctl's
# CSV reader and converter instead of taxd's modules.
FUZZ_CLIENT_LIB = $(CLIENT_SRC) src/taxctl/csv.c src/taxctl/txconv.c
FUZZ_CLIENT_OBJ = $(FUZZ_CLIENT_LIB:%.c=build/fuzz/obj/%.o)
.SECONDARY: $(FUZZ_OBJ) $(FUZZ_CLIENT_OBJ)
FUZZ_SECONDS ?= 30
FUZZ_SMOKE_SECONDS ?= 3
FUZZ_FLAGS = -std=c17 -D_GNU_SOURCE -Isrc -g -O1 -fsanitize=address,undefined \
             -fno-sanitize-recover=all -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
             -Wmissing-prototypes -Wno-missing-field-initializers

build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC fuzz $<"
	@clang $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(DEPFLAGS) -c $< -o $@

build/fuzz/obj/src/client/%.o: src/client/%.c
	@mkdir -p $(dir $@)
	@echo "  CC fuzz $<"
	@clang $(FUZZ_FLAGS) -Iinclude -fsanitize=fuzzer-no-link $(DEPFLAGS) -c $< -o $@

build/fuzz/fuzz_client_%: tests/fuzz/fuzz_client_%.c $(FUZZ_CLIENT_OBJ)
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@clang $(FUZZ_FLAGS) -Iinclude -fsanitize=fuzzer $(DEPFLAGS) -MF $@.d -MT $@ -o $@ $< \
	  $(FUZZ_CLIENT_OBJ) $(CLIENT_LIBS)

build/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@clang $(FUZZ_FLAGS) -fsanitize=fuzzer $(DEPFLAGS) -MF $@.d -MT $@ -o $@ $< $(FUZZ_OBJ) \
	  -ljansson -lcrypto

fuzz: $(FUZZ_TARGETS:%=build/fuzz/%)
	@tests/fuzz/run.sh run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: $(FUZZ_TARGETS:%=build/fuzz/%)
	@tests/fuzz/run.sh smoke $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

-include $(OBJ:.o=.d) $(ASAN_OBJ:.o=.d) $(CLIENT_OBJ:.o=.d) $(TAXCTL_OBJ:.o=.d) $(CLIENT_ASAN_OBJ:.o=.d) $(TAXCTL_ASAN_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d) $(FUZZ_CLIENT_OBJ:.o=.d) $(FUZZ_BIN:%=%.d)

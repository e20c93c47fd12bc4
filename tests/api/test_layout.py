"""The layers of src/ and the one direction of their includes
(docs/architecture.md):

    core/ <- store/ <- engines <- api/, admin/ <- app/ <- main.c
    http/ (a transport) includes core/ only; api/ reaches it, never the reverse.

Each rule is checked on the real tree, and each is shown to catch a
violation planted in a small tree of its own, so a rule that can no longer
fail is a failing test too. The build's header tracking (-MMD) is checked
here as well: touching one header recompiles only the sources that include
it. Below them, rules of the code the binary cannot show (issue 2): the
build's warning flags, all SQL and every SQLite type behind src/store/, and
decimals never summed in SQL (SQLite sums through double)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

ENGINES = {"inventory", "reports", "webhooks", "tincheck", "taxdocs", "forms", "gains"}

# What each folder (or src/main.c) may include besides itself.
ALLOWED = {
    "core": set(),
    "store": {"core"},
    "http": {"core"},
    **{engine: {"core", "store"} | ENGINES for engine in ENGINES},
    "api": {"core", "store", "http"} | ENGINES,
    "admin": {"core", "store"} | ENGINES,
    "app": {"core", "store", "http", "api", "admin"} | ENGINES,
    "main.c": {"core", "app"},
    # libtaxdclient and taxctl (issue 18) talk to taxd over HTTP only: they
    # include <taxd/client.h> (include/) and their own folder, never taxd's.
    "client": set(),
    "taxctl": set(),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of(path, src):
    """The folder under src/ a file belongs to, or "main.c"."""
    rel = path.relative_to(src)
    return rel.parts[0] if len(rel.parts) > 1 else rel.name


def included_layer(include, including, src):
    """The layer an #include "..." names: a path with a folder is taken from
    src/ (-Isrc), a bare name is the including file's own folder."""
    if "/" not in include:
        return layer_of(including, src)
    return include.split("/", 1)[0]


def violations(src):
    """Every include that breaks the table: (file, include, its layer)."""
    found = []
    for path in sorted(src.rglob("*.[ch]")):
        layer = layer_of(path, src)
        if layer not in ALLOWED:
            found.append((str(path.relative_to(src)), "", f"unknown layer {layer}"))
            continue
        for include in INCLUDE.findall(path.read_text(errors="replace")):
            target = included_layer(include, path, src)
            if target != layer and target not in ALLOWED[layer]:
                found.append((str(path.relative_to(src)), include, layer))
    return found


def test_every_include_points_down():
    assert violations(SRC) == []


def test_app_is_included_only_by_main():
    includers = set()
    for path in SRC.rglob("*.[ch]"):
        if any(i.startswith("app/") for i in INCLUDE.findall(path.read_text())):
            includers.add(layer_of(path, SRC))
    assert includers <= {"app", "main.c"}


def test_api_handlers_never_see_the_service():
    """Handlers get api_context_t (api/), not the composition root's service."""
    offenders = [
        str(p.relative_to(SRC))
        for p in (SRC / "api").glob("*.[ch]")
        if re.search(r"\bservice_t\b|\bstruct service\b", p.read_text())
    ]
    assert offenders == []


# One planted violation per rule: (the file to plant, what it includes).
PLANTED = {
    "core includes only core": ("core/x.c", "store/store.h"),
    "store includes only core and store": ("store/x.c", "inventory/engine.h"),
    "an engine never includes http": ("reports/x.c", "http/request.h"),
    "an engine never includes api": ("webhooks/x.c", "api/api.h"),
    "an engine never includes app": ("tincheck/x.h", "app/service.h"),
    "http includes only core": ("http/x.c", "store/store.h"),
    "http never includes api": ("http/x.c", "api/api.h"),
    "http never includes app": ("http/x.h", "app/service.h"),
    "api never includes app": ("api/x.c", "app/service.h"),
    "api never includes admin": ("api/x.c", "admin/admin.h"),
    "admin never includes app": ("admin/x.h", "app/service.h"),
    "admin never includes http": ("admin/x.c", "http/request.h"),
    "main.c includes only app and core": ("main.c", "http/server.h"),
}


@pytest.mark.parametrize("rule", sorted(PLANTED))
def test_each_rule_catches_a_planted_violation(tmp_path, rule):
    planted, include = PLANTED[rule]
    for layer in ALLOWED:
        if layer != "main.c":
            (tmp_path / layer).mkdir()
    (tmp_path / "core" / "ok.c").write_text('#include "core/ok.h"\n#include "ok2.h"\n')
    (tmp_path / planted).write_text(f'#include <stdio.h>\n#include "{include}"\n')
    assert violations(tmp_path) == [(planted, include, layer_of(tmp_path / planted, tmp_path))]


def make_dry_run(*args):
    return subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


def compiled_sources(dry_run_output):
    return set(re.findall(r"CC\s+(src/\S+\.c)", dry_run_output))


def test_a_header_change_rebuilds_only_its_includers():
    objects = ROOT / "build" / "obj"
    assert (objects / "src" / "main.d").exists(), "no dependency files: is -MMD gone from the Makefile?"
    assert compiled_sources(make_dry_run("build/taxd")) == set(), "build/taxd is not up to date"
    header = "src/core/decimal.h"
    includers = {
        str(d.relative_to(objects).with_suffix(".c"))
        for d in objects.rglob("*.d")
        if re.search(r"(^|\s)" + re.escape(header) + r"(\s|$)", d.read_text())
    }
    rebuilt = compiled_sources(make_dry_run("-W", header, "build/taxd"))
    assert includers and rebuilt == includers
    assert len(rebuilt) < len(list(SRC.rglob("*.c")))

def sources(under):
    return sorted(p for p in under.rglob("*") if p.suffix in (".c", ".h"))


def test_build_is_c17_with_warnings_as_errors():
    """C17 built with -Wall -Wextra -Werror."""
    flags = re.search(r"^CFLAGS_COMMON\s*=(.*?)(?<!\\)$", (ROOT / "Makefile").read_text(), re.M | re.S)
    assert flags, "CFLAGS_COMMON not found in the Makefile"
    words = flags.group(1).replace("\\\n", " ").split()
    assert {"-std=c17", "-Wall", "-Wextra", "-Werror"} <= set(words), words


def test_no_sqlite_outside_the_store():
    """No SQLite type or call outside src/store/."""
    store = SRC / "store"
    offenders = [str(p.relative_to(ROOT)) for p in sources(SRC)
                 if store not in p.parents and re.search(r"sqlite3|SQLITE_", p.read_text())]
    assert offenders == [], f"SQLite used outside src/store/: {offenders}"


def test_no_sql_aggregates_over_values():
    """Decimals are never summed in SQL: no SUM, TOTAL or AVG in a statement."""
    pattern = re.compile(r"\b(SUM|TOTAL|AVG)\s*\(", re.I)
    offenders = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
                 for p in sources(SRC / "store")
                 for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == [], offenders

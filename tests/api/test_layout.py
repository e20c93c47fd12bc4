"""Rules of the code's layout that the binary cannot show, checked on the
sources (issue 2 § 1 and § 8): the build's warning flags, all SQL and every
SQLite type behind src/store/ (a PostgreSQL store must be able to replace it),
and decimals never summed in SQL (SQLite sums through double)."""
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[2]
SRC = REPO / "src"


def sources(under):
    return sorted(p for p in under.rglob("*") if p.suffix in (".c", ".h"))


def test_build_is_c17_with_warnings_as_errors():
    """C17 built with -Wall -Wextra -Werror."""
    flags = re.search(r"^CFLAGS_COMMON\s*=(.*?)(?<!\\)$", (REPO / "Makefile").read_text(), re.M | re.S)
    assert flags, "CFLAGS_COMMON not found in the Makefile"
    words = flags.group(1).replace("\\\n", " ").split()
    assert {"-std=c17", "-Wall", "-Wextra", "-Werror"} <= set(words), words


def test_no_sqlite_outside_the_store():
    """No SQLite type or call outside src/store/."""
    store = SRC / "store"
    offenders = [str(p.relative_to(REPO)) for p in sources(SRC)
                 if store not in p.parents and re.search(r"sqlite3|SQLITE_", p.read_text())]
    assert offenders == [], f"SQLite used outside src/store/: {offenders}"


def test_no_sql_aggregates_over_values():
    """Decimals are never summed in SQL: no SUM, TOTAL or AVG in a statement."""
    pattern = re.compile(r"\b(SUM|TOTAL|AVG)\s*\(", re.I)
    offenders = [f"{p.relative_to(REPO)}:{n}: {line.strip()}"
                 for p in sources(SRC / "store")
                 for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == [], offenders

# Shared by the bench scripts: free ports, waiting for a server, and replacing
# one section of docs/benchmarks.md so each `make bench*` target owns its part.

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_http() { # url, seconds
    i=0
    while ! curl -s -o /dev/null "$1"; do
        i=$((i + 1))
        [ "$i" -gt $(( $2 * 20 )) ] && { echo "bench: $1 did not come up" >&2; return 1; }
        sleep 0.05
    done
}

# write_section NAME FILE [AFTER]: replaces the block between the NAME markers
# in docs/benchmarks.md with the content of FILE. When absent, the block goes
# after the first of the sections named in AFTER (space-separated) that the
# document has, else at its end.
write_section() {
    /usr/bin/python3 - "$1" "$2" "${3:-}" <<'PY'
import pathlib, sys
name, content_file, after = sys.argv[1], sys.argv[2], sys.argv[3].split()
doc = pathlib.Path("docs/benchmarks.md")
text = doc.read_text() if doc.exists() else "# Benchmarks\n\nEach section is written by its `make bench*` target; figures are ratios against a reference measured in the same run, because absolute numbers drift on shared machines.\n"
start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
block = f"{start}\n{pathlib.Path(content_file).read_text().rstrip()}\n{end}"
if start in text and end in text:
    head, rest = text.split(start, 1)
    text = head + block + rest.split(end, 1)[1]
else:
    for other in after:
        mark = f"<!-- bench:{other}:end -->"
        if mark in text:
            head, rest = text.split(mark, 1)
            text = head + mark + "\n\n" + block + rest
            break
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
doc.write_text(text)
PY
}

# wrk_run URL OUTFILE [header]: 10 s, 64 connections, latency distribution.
wrk_run() {
    if [ -n "${3:-}" ]; then
        wrk -t2 -c64 -d"${BENCH_SECONDS:-10}"s --latency -H "$3" "$1" > "$2"
    else
        wrk -t2 -c64 -d"${BENCH_SECONDS:-10}"s --latency "$1" > "$2"
    fi
}

wrk_rps() { sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$1"; }
wrk_p99() { sed -n 's/^ *99% *\([0-9.]*[a-z]*\).*/\1/p' "$1"; }
wrk_non2xx() { sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$1"; }

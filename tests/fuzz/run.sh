#!/bin/sh
# Runs libFuzzer targets one after the other and prints one line per target
# with its final figures. Usage: tests/fuzz/run.sh run|smoke|long SECONDS TARGET...
#
#   run    grows build/fuzz/corpus/<t> (kept between runs) from the seeds in
#          tests/fuzz/corpus/<t>, which libFuzzer only reads (a second corpus
#          directory is read-only to it);
#   smoke, long  start from the seeds alone, in an emptied build/fuzz/<mode>/<t>
#          (`make fuzz-smoke`, and the recorded runs of bench/fuzz_long.sh:
#          figures that do not depend on earlier runs).
#
# Both use the target's dictionary (tests/fuzz/dict/<t>.dict) and write crash
# reproducers to build/fuzz/artifacts/<t>/; the full log of each run is in
# build/fuzz/logs/<mode>-<t>.log. Exits non-zero when any target failed.
set -u
mode=$1 seconds=$2
shift 2
status=0
mkdir -p build/fuzz/logs
for t in "$@"; do
    bin=build/fuzz/$t
    seeds=tests/fuzz/corpus/$t
    dict=tests/fuzz/dict/$t.dict
    if [ "$mode" != run ]; then
        work=build/fuzz/$mode/$t
        rm -rf "$work"
    else
        work=build/fuzz/corpus/$t
    fi
    mkdir -p "$work" "build/fuzz/artifacts/$t"
    log=build/fuzz/logs/$mode-$t.log
    set -- -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="build/fuzz/artifacts/$t/"
    [ -f "$dict" ] && set -- "$@" -dict="$dict"
    [ -d "$seeds" ] || seeds=
    "$bin" "$@" "$work" $seeds >"$log" 2>&1
    rc=$?
    # The last status line ("#123 DONE cov: 1 ft: 2 corp: 3/4b ...") and the totals.
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.* corp: \([^ ]*\).*/\1/p')
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        printf '%-20s ok     cov: %s ft: %s corpus: %s execs: %s (%s s)\n' \
            "$t" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${execs:-?}" "$seconds"
    else
        status=1
        printf '%-20s FAILED (exit %s) cov: %s ft: %s corpus: %s execs: %s; see %s\n' \
            "$t" "$rc" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${execs:-?}" "$log"
        grep -E 'ERROR: |SUMMARY: |Test unit written to|fuzz property' "$log" | head -5 | sed 's/^/    /'
    fi
done
exit $status

#!/bin/sh
# recalc_compare: the fast recalculation computes exactly what the code
# before it did. On one generated dataset (bench/recalc_gen.sh) three copies
# are recalculated:
#   old   the lazy path of the branch point (OLD_REV, 2f8b27f): one
#         inventory_refresh per dirty account (bench/recalc_lazy.c linked
#         with the objects built from that commit);
#   lazy  the same driver linked with the current objects;
#   all   `build/taxd admin inventory recalc --all`.
# Then every summary, lot and relief row, and each account's watermark,
# version and ledger basis, is dumped in key order and the dumps are compared
# byte for byte (cmp). Exit 0 only when all three are identical and no
# account is left dirty.
#
#   bench/recalc_compare.sh [TX [ACCOUNTS]]     (default 200000 2000)
#
# Work files go to $RECALC_WORK (default build/recalc-compare); the old
# build is cached there by commit.
set -eu
cd "$(dirname "$0")/.."
TX=${1:-200000}
ACCOUNTS=${2:-2000}
OLD_REV=${OLD_REV:-2f8b27f}
work=${RECALC_WORK:-$PWD/build/recalc-compare}
mkdir -p "$work"
LIBS="-lmicrohttpd -ljansson -lsqlite3 -lcrypto -lcurl -lpthread"
CFLAGS_BENCH="-std=c17 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wshadow"

# ---- the two builds
make -s build/taxd >/dev/null
old_src="$work/old-$OLD_REV"
if [ ! -x "$old_src/recalc_lazy" ]; then
    rm -rf "$old_src" && mkdir -p "$old_src"
    git archive "$OLD_REV" | tar -x -C "$old_src"
    make -s -C "$old_src" build/taxd >/dev/null
    (cd "$old_src" && ar rcs libtaxd.a $(find src -name '*.c' ! -path src/main.c | sort |
        sed 's|^|build/obj/|; s|\.c$|.o|'))
    cc $CFLAGS_BENCH -I"$old_src/src" -o "$old_src/recalc_lazy" bench/recalc_lazy.c \
        "$old_src/libtaxd.a" $LIBS
fi
ar rcs "$work/libnew.a" $(find src -name '*.c' ! -path src/main.c | sort |
    sed 's|^|build/obj/|; s|\.c$|.o|')
cc $CFLAGS_BENCH -Isrc -o "$work/recalc_lazy_new" bench/recalc_lazy.c "$work/libnew.a" $LIBS

# ---- one dataset, three copies
tenant=$(bench/recalc_gen.sh build/taxd "$work/base.db" "$TX" "$ACCOUNTS")
for v in old lazy all; do
    rm -f "$work/$v.db"*
    cp "$work/base.db" "$work/$v.db"
    for k in "$work"/base.db.*.key; do cp "$k" "$work/$v.db.${k##*/base.db.}"; done
done
echo "old:  $("$old_src/recalc_lazy" --db "$work/old.db" --tenant "$tenant")"
echo "lazy: $("$work/recalc_lazy_new" --db "$work/lazy.db" --tenant "$tenant")"
echo "all:  $(build/taxd admin --db "$work/all.db" inventory recalc --all)"

# ---- dumps in key order, compared byte for byte
dump() {
    sqlite3 "$1" <<'SQL'
.mode list
.nullvalue NULL
SELECT 'account', uuid, id, coalesce(dirty_from, 'clean'), inventory_version,
       coalesce(inventory_basis, 'NULL') FROM accounts ORDER BY uuid;
SELECT 'summary', * FROM inventory_summaries ORDER BY account_uuid, asset_code;
SELECT 'lot', * FROM inventory_lots ORDER BY account_uuid, asset_code, seq;
SELECT 'relief', * FROM inventory_reliefs ORDER BY account_uuid, seq;
SQL
}
status=0
for v in old lazy all; do
    dump "$work/$v.db" >"$work/$v.dump"
    printf '%-5s %s  ' "$v" "$(sha256sum <"$work/$v.dump" | cut -c1-16)"
    cut -d'|' -f1 "$work/$v.dump" | sort | uniq -c | tr -s ' \n' ' '
    echo
done
dirty=$(sqlite3 "$work/all.db" "SELECT count(*) FROM accounts WHERE dirty_from IS NOT NULL")
[ "$dirty" = 0 ] || { echo "recalc --all left $dirty accounts dirty"; status=1; }
for v in lazy all; do
    if cmp "$work/old.dump" "$work/$v.dump"; then
        echo "$v == old: identical ($(wc -c <"$work/$v.dump") bytes)"
    else
        echo "$v != old"; status=1
    fi
done
exit $status

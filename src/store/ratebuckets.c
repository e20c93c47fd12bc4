/* store/ratebuckets.c: see ratebuckets.h.
 *
 * One statement, no transaction: the row lock the conflicting INSERT takes
 * (SQLite's write lock; PostgreSQL's row lock, under which ON CONFLICT DO
 * UPDATE re-reads the latest version even at READ COMMITTED) makes the
 * refill-check-take atomic, and running it outside BEGIN keeps it off the
 * group commit (SQLite) and out of SERIALIZABLE (PostgreSQL), where nodes
 * hammering one key would fail each other's transactions and retry.
 *
 * Arithmetic, in thousandths of a token (the level column): a rule of `rate`
 * tokens per second adds `rate` thousandths per millisecond. The elapsed
 * time is clamped to [0, the time to fill the bucket] before it is
 * multiplied, so nothing overflows a BIGINT whatever the gap, and a negative
 * gap (a clock step backwards, or a node whose clock lags) adds nothing. `at`
 * only moves forward (max).
 *
 * All or nothing: the DO UPDATE's WHERE refuses when the refilled level holds
 * fewer than `want` tokens; the row is then left as it was and RETURNING
 * answers no row, so "a row" means "want granted" on both backends (RETURNING
 * sees only the new row, from which a partial grant could not be told). */
#include "store/ratebuckets.h"

#include <string.h>

#include "store/internal.h"

#define MILLI 1000

/* ?1 key, ?2 rate, ?3 burst, ?4 now_ms, ?5 want, ?6 the time to fill (ms). */
#define RB_REFILLED "min(?3 * 1000, rate_buckets.level + min(max(?4 - rate_buckets.at, 0), ?6) * ?2)"
static const store_sql_t Q_TAKE = {"rate_take",
    "INSERT INTO rate_buckets (key, level, at) VALUES (?1, (?3 - ?5) * 1000, ?4)"
    " ON CONFLICT (key) DO UPDATE SET"
    "  level = " RB_REFILLED " - ?5 * 1000,"
    "  at = max(rate_buckets.at, ?4)"
    " WHERE " RB_REFILLED " >= ?5 * 1000"
    " RETURNING level",
    /* PostgreSQL: LEAST/GREATEST, and BIGINT parameters (an untyped ?3 * 1000
     * would be an int4 and overflow for a large burst). */
    "INSERT INTO rate_buckets (key, level, at) VALUES ($1, ($3::bigint - $5::bigint) * 1000, $4::bigint)"
    " ON CONFLICT (key) DO UPDATE SET"
    "  level = LEAST($3::bigint * 1000, rate_buckets.level"
    "    + LEAST(GREATEST($4::bigint - rate_buckets.at, 0), $6::bigint) * $2::bigint) - $5::bigint * 1000,"
    "  at = GREATEST(rate_buckets.at, $4::bigint)"
    " WHERE LEAST($3::bigint * 1000, rate_buckets.level"
    "    + LEAST(GREATEST($4::bigint - rate_buckets.at, 0), $6::bigint) * $2::bigint) >= $5::bigint * 1000"
    " RETURNING level"};

static store_status_t read_level(const store_sql_t *q, db_stmt_t *stmt, void *record)
{
    (void)q;
    *(int64_t *)record = db_column_int(stmt, 0);
    return STORE_OK;
}

store_status_t store_rate_take(store_conn_t *conn, const char *key, uint32_t rate_per_s,
                               uint32_t burst, int64_t now_ms, uint32_t want, uint32_t *granted,
                               int64_t *level_milli)
{
    *granted = 0;
    if (level_milli != NULL)
        *level_milli = -1;
    if (!text_fits(key, STORE_RATE_KEY_MAX))
        return store_bad_argument("rate_take");
    int64_t rate = rate_per_s > 0 ? rate_per_s : 1;
    int64_t cap = burst > 0 ? burst : 1;
    int64_t take = want < 1 ? 1 : want > cap ? cap : want;
    int64_t fill_ms = (cap * MILLI + rate - 1) / rate;
    store_status_t st = conn_enter(conn);
    if (st != STORE_OK)
        return st;
    db_stmt_t *stmt;
    if ((st = conn_prepare_key(conn, &Q_TAKE, key, &stmt)) != STORE_OK)
        return st;
    if (!(bind_int(stmt, 2, rate) && bind_int(stmt, 3, cap) && bind_int(stmt, 4, now_ms) &&
          bind_int(stmt, 5, take) && bind_int(stmt, 6, fill_ms)))
        return conn_bind_failed(conn, &Q_TAKE, stmt);
    int64_t level = -1;
    st = conn_read_row(conn, &Q_TAKE, stmt, read_level, &level);
    if (st == STORE_NOT_FOUND)
        return STORE_OK; /* refused: the bucket holds fewer than `take` tokens */
    if (st != STORE_OK)
        return st;
    *granted = (uint32_t)take;
    if (level_milli != NULL)
        *level_milli = level;
    return STORE_OK;
}

#!/usr/bin/env bash
# IDs as text, side by side in one run on one throwaway cluster: pg_seqgen's base32 text, typed
# IDs, ULIDs, short codes and base32 order numbers against PostgreSQL's own text and encode(),
# the per-row floor abs(g) and, when its source is given, the sqids extension (pg_sqids, which
# builds a Sqids encoder per call, as its SQL functions do), built here from its source with
# pgrx 0.18.0 (the version this project's cargo-pgrx builds; the only change to its source).
#
#   bash bench/text.sh                                        # about 4 minutes on 2 cores
#   PG_SQIDS_SRC=/path/to/sqids-postgresql bash bench/text.sh # with pg_sqids (github.com/sqids/sqids-postgresql)
#
# Prints a Markdown table: ns per row, the ratio to abs(g), and the ratio to what is encoded.
# pg_sqids runs a hundredth of the rows: it takes about 130 us a call here (it builds an encoder
# and its blocklist for each).
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

ROWS=${BENCH_ROWS:-2000000}
DIR=/tmp/pg_seqgen_bench_text
PORT=${BENCH_PORT:-55509}
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)

ensure_deps
install_extension
if [ -n "${PG_SQIDS_SRC:-}" ]; then
    say "building pg_sqids from $PG_SQIDS_SRC with pgrx 0.18.0 into PostgreSQL $PG_MAJOR"
    src=/tmp/pg_seqgen_bench_pg_sqids
    rm -rf "$src" && cp -r "$PG_SQIDS_SRC" "$src" && rm -rf "$src/.git"
    sed -i -E 's/^(pgrx(-tests)? = )"[^"]*"/\1"=0.18.0"/' "$src/Cargo.toml"
    grep -q '^pg15 ' "$src/Cargo.toml" || { echo "pg_sqids: no pg15 feature in its Cargo.toml" >&2; exit 1; }
    for m in 17 18; do
        grep -q "^pg$m " "$src/Cargo.toml" ||
            sed -i "/^pg15 /a pg$m = [\"pgrx/pg$m\", \"pgrx-tests/pg$m\"]" "$src/Cargo.toml"
    done
    log=/tmp/pg_seqgen_bench_pg_sqids.log
    if ! (cd "$src" && as_root env "PATH=$PATH" "HOME=$HOME" CARGO_TARGET_DIR="$PG_TREES/peers-target" \
        cargo pgrx install --release --no-default-features --features "pg$PG_MAJOR" --pg-config "$PG_CONFIG") >"$log" 2>&1; then
        tail -30 "$log"
        echo "pg_sqids did not build (full log: $log)" >&2
        exit 1
    fi
fi

say "starting a throwaway cluster in $DIR"
cluster_init "$DIR" "$PORT" "shared_buffers = 256MB"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT
psql_at "$DIR" "$PORT" -f "$BENCH_DIR/setup.sql" >/dev/null
if [ -n "${PG_SQIDS_SRC:-}" ]; then
    psql_at "$DIR" "$PORT" -c "CREATE EXTENSION pg_sqids" >/dev/null
fi
say "IDs as text: $ROWS rows per query, median of 5 interleaved rounds"
psql_at "$DIR" "$PORT" -At -F $'\t' -v rows="$ROWS" -f "$BENCH_DIR/text.sql" | grep -F 'count(' >/tmp/pg_seqgen_bench_text.tsv
python3 - "$ROWS" /tmp/pg_seqgen_bench_text.tsv "$(date -u +%F)" "$PG_MAJOR" <<'PY'
import re, sys
rows, path, day, major = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ns = {}
for line in open(path):
    q, t = line.rstrip("\n").split("\t")
    # the rows of each query (pg_sqids' are a hundredth)
    n, d = re.search(r"generate_series\(1, (\d+)(?: / (\d+))?\)", q).groups()
    ns[q[len("SELECT count("):q.index(") FROM generate_series")]] = float(t) * 1e6 / (int(n) // int(d or 1))
floor = ns["abs(g)"]
# what each row encodes: the ratio to it is the encoding's own cost
rows_shown = [
    ("g::text", "abs(g)"), ("encode(int8send(g), 'hex')", "abs(g)"), ("seqgen_encode(g)", "abs(g)"),
    ("sqids_encode(g)", "abs(g)"),
    ("seqgen_next('b')::text", "seqgen_next('b')"), ("encode(int8send(seqgen_next('b')), 'hex')", "seqgen_next('b')"),
    ("seqgen_encode(seqgen_next('b'))", "seqgen_next('b')"), ("seqgen_encode_typed('inv', seqgen_next('b'))", "seqgen_next('b')"),
    ("sqids_encode(seqgen_next('b'))", "seqgen_next('b')"),
    ("seqgen_uuidv7()::text", "seqgen_uuidv7()"), ("seqgen_encode_uuid(seqgen_uuidv7())", "seqgen_uuidv7()"),
    ("seqgen_next_code('q')", "seqgen_next('q')"),
    ("seqgen_order_no('o10')", "abs(g)"), ("seqgen_order_no('o32')", "seqgen_order_no('o10')"),
]
print(f"`bash bench/text.sh` on PostgreSQL {major} ({day}), single session, {rows:,} rows (`pg_sqids` {rows // 100:,}), median of 5; "
      f"the floor `abs(g)` {floor:.0f} ns. `o10`: `SN{{yyyy}}{{MM}}{{dd}}{{seq:8}}`, `o32`: `SN{{yyyy}}{{MM}}{{dd}}{{seq:6:b32}}`.\n")
print("| f | ns per row | ratio to `abs(g)` | what it encodes | ratio to that |")
print("| --- | ---: | ---: | --- | ---: |")
for f, base in rows_shown:
    if f not in ns:
        continue
    print(f"| `{f}` | {ns[f]:.0f} | {ns[f] / floor:.2f}x | `{base}` | {ns[f] / ns[base]:.2f}x |")
PY

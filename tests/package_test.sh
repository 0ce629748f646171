#!/usr/bin/env bash
# The Debian package for PostgreSQL 15: build it (scripts/package.sh), install it with apt in
# place of the source install, preload it in a throwaway cluster, run the demo's kind of SQL
# against it, remove it with apt (its files must be gone), then put the source install back.
. "$(dirname "$0")/../scripts/lib.sh"
cd "$ROOT"
use_major "$DEBIAN_MAJOR"
deb=$(PG_MAJORS=$DEBIAN_MAJOR bash scripts/package.sh | tail -1)
pkg=$(dpkg-deb --field "$deb" Package)
lib=$("$PG_CONFIG" --pkglibdir)
ext=$("$PG_CONFIG" --sharedir)/extension
echo "built $deb ($(du -h "$deb" | cut -f1)): $(dpkg-deb --contents "$deb" | grep -c pg_seqgen) files"

# whatever happens below, leave the machine with the source install and without the package
DIR=/tmp/pg_seqgen_package_test
PORT=55466
restore() {
    cluster_stop "$DIR" immediate || true
    if dpkg -s "$pkg" >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive as_root apt-get remove -y -qq "$pkg" >/dev/null || true
    fi
    install_extension
}
trap restore EXIT
# a package left behind by an interrupted run first
if dpkg -s "$pkg" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive as_root apt-get remove -y -qq "$pkg" >/dev/null
fi

say "the source install removed; apt-get install $deb"
as_root rm -f "$lib/pg_seqgen.so" "$ext"/pg_seqgen*
DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --reinstall "$deb" >/dev/null
dpkg -L "$pkg" | grep -q "$lib/pg_seqgen.so"

cluster_init "$DIR" "$PORT"
cluster_start "$DIR"
out=$(psql_at "$DIR" "$PORT" -At <<'SQL'
CREATE EXTENSION pg_seqgen;
SELECT seqgen_create('order', step => 1000, start_with => 100000);
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT seqgen_next('order'), customer text);
INSERT INTO orders (customer) VALUES ('alice'), ('bob'), ('carol');
SELECT string_agg(id::text, ',' ORDER BY id) FROM orders;
SELECT seqgen_snowflake() > 0, seqgen_uuidv7() IS NOT NULL;
SELECT seqgen_set_template('order', 'SN{yyyy}{MM}{dd}{seq:8}{check}', 'Asia/Shanghai');
SELECT seqgen_check_digit_valid(seqgen_order_no('order'));
SELECT extversion FROM pg_extension WHERE extname = 'pg_seqgen';
SQL
)
echo "$out"
expected_version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
echo "$out" | grep -qx "100000,100001,100002" || { echo "package: unexpected IDs" >&2; exit 1; }
echo "$out" | grep -qx "t|t" || { echo "package: snowflake/uuid failed" >&2; exit 1; }
echo "$out" | grep -qx "$expected_version" || { echo "package: wrong version" >&2; exit 1; }
echo "$out" | grep -qx "t" || { echo "package: the order number's check digit is not valid" >&2; exit 1; }
cluster_stop "$DIR" fast

say "apt-get remove $pkg"
DEBIAN_FRONTEND=noninteractive as_root apt-get remove -y -qq "$pkg" >/dev/null
if [ -e "$lib/pg_seqgen.so" ] || ls "$ext"/pg_seqgen* >/dev/null 2>&1; then
    echo "package: files left after apt-get remove" >&2
    exit 1
fi
# leave the machine as it was: the source install back
trap - EXIT
install_extension
echo "test result: ok. 1 passed; 0 failed; the .deb installed with apt, used, and removed"

# Citus for the integration suite: built once from the shared sources and cached, then
# installed into Debian's PostgreSQL 15 (`make install` of the cached build, a few seconds).
# Source it after scripts/lib.sh and call `citus_ensure`; it exports SEQGEN_CITUS=1 when
# Citus is installed, which turns the Citus tests on (tests/integration/tests/citus.rs).
#
# Citus 13.2 supports PostgreSQL 15, 16 and 17; the tests run it on 15 (Debian's, with its
# server headers from apt). The build takes about 4 minutes on 2 cores, once per machine.

CITUS_VERSION=${CITUS_VERSION:-13.2.2}
CITUS_SOURCES=${CITUS_SOURCES:-/work/shared/citus}
CITUS_CACHE=${CITUS_CACHE:-$PG_TREES/citus-$CITUS_VERSION-pg15}

citus_ensure() {
    local pg_config=/usr/lib/postgresql/15/bin/pg_config
    if [ ! -f "$CITUS_CACHE/.built" ]; then
        local tarball="$CITUS_SOURCES/citus-$CITUS_VERSION.tar.gz"
        [ -f "$tarball" ] || { echo "Citus sources not found: $tarball (set CITUS_SOURCES)" >&2; return 1; }
        local pkgs=(libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev autoconf flex)
        local missing=() p
        for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
        if [ ${#missing[@]} -gt 0 ]; then
            say "installing ${missing[*]} (to build Citus)"
            as_root apt-get update -qq
            DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
        fi
        say "building Citus $CITUS_VERSION for PostgreSQL 15 into $CITUS_CACHE (about 4 minutes, once)"
        as_root rm -rf "$CITUS_CACHE" && as_root mkdir -p "$CITUS_CACHE"
        as_root tar xzf "$tarball" -C "$CITUS_CACHE" --strip-components=1
        # guarded by PG_VERSION_NUM inside, so harmless on every 15
        local patch="$CITUS_SOURCES/citus-$CITUS_VERSION-pg15.20.patch"
        if [ -f "$patch" ]; then
            (cd "$CITUS_CACHE" && as_root patch -p1 -s < "$patch")
        fi
        local log=/tmp/pg_seqgen_citus_build.log
        if ! (cd "$CITUS_CACHE" && as_root ./configure PG_CONFIG="$pg_config" && as_root make -j2) >"$log" 2>&1; then
            tail -40 "$log"
            echo "building Citus failed (full log: $log)" >&2
            return 1
        fi
        as_root touch "$CITUS_CACHE/.built"
    fi
    if [ ! -f "$("$pg_config" --pkglibdir)/citus.so" ] || [ "$CITUS_CACHE/.built" -nt "$("$pg_config" --pkglibdir)/citus.so" ]; then
        say "installing Citus $CITUS_VERSION into PostgreSQL 15"
        (cd "$CITUS_CACHE" && as_root make install) >/tmp/pg_seqgen_citus_install.log 2>&1 \
            || { tail -20 /tmp/pg_seqgen_citus_install.log; return 1; }
    fi
    export SEQGEN_CITUS=1
}

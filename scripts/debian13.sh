# PostgreSQL 17 in a Debian 13 root. Source it after lib.sh: `. scripts/debian13.sh`.
#
# Debian 13 (trixie) packages postgresql-17 and postgresql-server-dev-17; their binaries need a
# newer glibc than this Debian 12 machine has, so 17 runs in a Debian 13 root made with
# debootstrap from Debian's own packages and cached with the wheels ($PG_TREES/debian13). The
# host's Rust toolchain and cargo-pgrx run inside unchanged (bind-mounted), and so does this
# clone (at /src/pg_seqgen); builds inside go to a target directory of the root's own, so the
# host never runs a binary linked against the newer glibc. Inside the root, 17 is the Debian
# major: lib.sh sees trixie and sets DEBIAN_MAJOR=17, so tests/run.sh and scripts/package.sh
# run there unchanged and build a .deb against Debian 13's postgresql-17.
#
#   debian13_ensure    create the root once (about 3 minutes), or nothing
#   debian13_mount     bind-mount /proc, /dev, the toolchain and this clone (idempotent)
#   debian13_umount    undo it (tests/run.sh does on exit)
#   in_debian13 CMD... run CMD inside the root, as root, with the toolchain on PATH

DEBIAN13_ROOT=${DEBIAN13_ROOT:-$PG_TREES/debian13}
DEBIAN13_MIRROR=${DEBIAN13_MIRROR:-http://deb.debian.org/debian}
DEBIAN13_PACKAGES=(postgresql-17 postgresql-server-dev-17 postgresql-contrib libclang-dev clang pkg-config
    gcc libc6-dev sudo ca-certificates faketime python3 git)

debian13_ensure() {
    if [ -f "$DEBIAN13_ROOT/.done" ]; then
        return
    fi
    say "creating the Debian 13 root for PostgreSQL 17 in $DEBIAN13_ROOT (debootstrap; about 3 minutes, once)"
    if ! command -v debootstrap >/dev/null; then
        as_root apt-get update -qq
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq debootstrap >/dev/null
    fi
    debian13_umount
    if mount | grep -q " $DEBIAN13_ROOT/"; then
        echo "$DEBIAN13_ROOT still has mounts; not removing it" >&2
        return 1
    fi
    as_root rm -rf "$DEBIAN13_ROOT"
    as_root debootstrap --variant=minbase trixie "$DEBIAN13_ROOT" "$DEBIAN13_MIRROR" >/tmp/pg_seqgen_debootstrap.log 2>&1 || {
        tail -20 /tmp/pg_seqgen_debootstrap.log >&2
        return 1
    }
    debian13_mount
    as_root chroot "$DEBIAN13_ROOT" apt-get update -qq
    as_root chroot "$DEBIAN13_ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${DEBIAN13_PACKAGES[@]}" >/tmp/pg_seqgen_debian13_apt.log 2>&1 || {
        tail -20 /tmp/pg_seqgen_debian13_apt.log >&2
        return 1
    }
    as_root touch "$DEBIAN13_ROOT/.done"
}

# bind_once SRC DST: mount --bind SRC on DST unless something is mounted there already
bind_once() {
    as_root mkdir -p "$2"
    mountpoint -q "$2" || as_root mount --bind "$1" "$2"
}

debian13_mount() {
    mountpoint -q "$DEBIAN13_ROOT/proc" || as_root mount -t proc proc "$DEBIAN13_ROOT/proc"
    bind_once /dev "$DEBIAN13_ROOT/dev"
    bind_once /dev/pts "$DEBIAN13_ROOT/dev/pts"
    bind_once "$HOME/.cargo" "$DEBIAN13_ROOT/root/.cargo"
    bind_once "$HOME/.rustup" "$DEBIAN13_ROOT/root/.rustup"
    # this clone, whatever an interrupted run of another clone left mounted there
    if mountpoint -q "$DEBIAN13_ROOT/src/pg_seqgen"; then
        as_root umount "$DEBIAN13_ROOT/src/pg_seqgen" || as_root umount -l "$DEBIAN13_ROOT/src/pg_seqgen"
    fi
    bind_once "$ROOT" "$DEBIAN13_ROOT/src/pg_seqgen"
    # name lookups for crates.io, should cargo need anything the registry cache lacks
    as_root cp /etc/resolv.conf "$DEBIAN13_ROOT/etc/resolv.conf" 2>/dev/null || true
}

debian13_umount() {
    local m
    for m in src/pg_seqgen root/.rustup root/.cargo dev/pts dev proc; do
        if mountpoint -q "$DEBIAN13_ROOT/$m" 2>/dev/null; then
            as_root umount "$DEBIAN13_ROOT/$m" || as_root umount -l "$DEBIAN13_ROOT/$m"
        fi
    done
}

in_debian13() {
    as_root chroot "$DEBIAN13_ROOT" env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
        PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        CARGO_TARGET_DIR=/var/cache/pg_seqgen/target "$@"
}

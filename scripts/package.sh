#!/usr/bin/env bash
# Build installable packages of pg_seqgen (release builds, `cargo pgrx package`):
#   - PostgreSQL 15 (Debian 12's): target/package/postgresql-15-pg-seqgen_<version>_<arch>.deb,
#     installable with `apt-get install ./<file>.deb` on Debian 12 with only PostgreSQL 15
#     installed (no Rust, no cargo-pgrx);
#   - PostgreSQL 17 (Debian 13's): target/package/postgresql-17-pg-seqgen_<version>_<arch>.deb,
#     the same for Debian 13, built in the Debian 13 root (scripts/debian13.sh);
#   - the majors that come from wheels (16, 18): target/package/pg_seqgen-<version>-pg<major>.tar.gz
#     holding lib/pg_seqgen.so and extension/pg_seqgen*; copy them into `pg_config --pkglibdir`
#     and `pg_config --sharedir`/extension of that installation.
#
#   bash scripts/package.sh               # every major in PG_MAJORS (default 15 16 17 18)
#   PG_MAJORS=15 bash scripts/package.sh  # the .deb only
# Prints the path of every package it built.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

ensure_deps
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
ARCH=$(dpkg --print-architecture)
OUT=$ROOT/target/package
mkdir -p "$OUT"

for major in $PG_MAJORS; do
    if [ "$major" = "$ROOT_MAJOR" ] && [ "$DEBIAN_MAJOR" != "$ROOT_MAJOR" ]; then
        . "$ROOT/scripts/debian13.sh"
        debian13_ensure
        debian13_mount
        deb=$(in_debian13 env PG_MAJORS="$major" bash /src/pg_seqgen/scripts/package.sh | tail -1)
        debian13_umount
        echo "$ROOT/${deb#/src/pg_seqgen/}"
        continue
    fi
    use_major "$major"
    stage=$OUT/stage-pg$major
    rm -rf "$stage"
    say "cargo pgrx package for PostgreSQL $major" >&2
    cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$stage" >"$OUT/build-pg$major.log" 2>&1 || {
        tail -30 "$OUT/build-pg$major.log" >&2
        exit 1
    }
    lib=$("$PG_CONFIG" --pkglibdir)
    ext=$("$PG_CONFIG" --sharedir)/extension
    if [ "$major" = "$DEBIAN_MAJOR" ]; then
        name=postgresql-$major-pg-seqgen
        mkdir -p "$stage/DEBIAN" "$stage/usr/share/doc/$name"
        cp README.md CHANGELOG.md "$stage/usr/share/doc/$name/"
        cat >"$stage/DEBIAN/control" <<EOF
Package: $name
Version: $VERSION
Architecture: $ARCH
Maintainer: pg_seqgen developers <pg_seqgen@localhost>
Depends: postgresql-$major, libc6, libgcc-s1
Section: database
Priority: optional
Description: ID generators inside PostgreSQL $major (pg_seqgen $VERSION)
 Segment IDs (Leaf-segment), snowflake IDs, server-wide monotonic UUIDv7,
 templated order numbers and opaque numbers, never reissued after a rollback,
 a crash or a clock step back. Add pg_seqgen to shared_preload_libraries,
 restart, then CREATE EXTENSION pg_seqgen.
EOF
        deb=$OUT/${name}_${VERSION}_${ARCH}.deb
        dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
        echo "$deb"
    else
        tree=$OUT/pg_seqgen-$VERSION-pg$major
        rm -rf "$tree"
        mkdir -p "$tree/lib" "$tree/extension"
        cp "$stage$lib/pg_seqgen.so" "$tree/lib/"
        cp "$stage$ext"/pg_seqgen* "$tree/extension/"
        cat >"$tree/INSTALL" <<EOF
pg_seqgen $VERSION for PostgreSQL $major. Install into the server's installation:
  cp lib/pg_seqgen.so "\$(pg_config --pkglibdir)/"
  cp extension/* "\$(pg_config --sharedir)/extension/"
then add pg_seqgen to shared_preload_libraries, restart, and CREATE EXTENSION pg_seqgen.
EOF
        tar -czf "$tree.tar.gz" -C "$OUT" "$(basename "$tree")"
        echo "$tree.tar.gz"
    fi
done

"""Turns the raw benchmark output into the Markdown tables the README shows, and (with a fifth
argument) a PNG chart of the ratios: per-row cost against the floor, pgbench TPS against
`SELECT 1`."""
import datetime
import glob
import os
import platform
import re
import sys

out, seconds, rows, major = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
chart = sys.argv[5] if len(sys.argv) > 5 else None
# (label, ratio, ours) for the chart
chart_rows, chart_tps = [], []

single = {}
for line in open(os.path.join(out, "single.tsv")):
    q, ms = line.rstrip("\n").split("\t")
    single[q] = float(ms)
ids_per_ms = single.pop("snowflake_ids_per_ms")


def per_row(fragment, n=rows):
    q = next(k for k in single if fragment in k)
    return single[q] * 1e6 / n


def has_row(fragment):
    return any(fragment in k for k in single)


def pgbench(name):
    text = open(os.path.join(out, name + ".out")).read()
    tps = float(re.search(r"tps = ([0-9.]+)", text).group(1))
    lat = []
    for f in glob.glob(os.path.join(out, "log_" + name + ".*")):
        with open(f) as fh:
            lat.extend(int(line.split()[2]) for line in fh)
    lat.sort()

    def q(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

    return tps, q(0.99), q(0.999)


cpu = "unknown CPU"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
print()
print(f"Measured {datetime.date.today()} on {os.cpu_count()} cores ({cpu}), {platform.system()} "
      f"{platform.release()}, PostgreSQL {major}, `PG_MAJOR={major} bash bench/run.sh` (pgbench {seconds} s each).")
print()
print("**Single session**, `SELECT count(f) FROM generate_series(1, %d) g`, median of 5:" % rows)
print()
print("| f | ns per row | ratio to `abs(g)` |")
print("| --- | ---: | ---: |")
floor = per_row("abs(g)")
for label, frag in [("`abs(g)` (the per-row floor)", "abs(g)"),
                    ("`nextval('s')`, default sequence", "nextval('s')"),
                    ("`nextval('s_cache')`, `CACHE 1000`", "s_cache"),
                    ("`gen_random_uuid()`", "gen_random_uuid()) FROM"),
                    ("`seqgen_next('b')`", "seqgen_next('b')"),
                    ("`seqgen_next('q')`, an opaque tag", "seqgen_next('q')"),
                    ("`seqgen_snowflake()`", "seqgen_snowflake()"),
                    ("`seqgen_snowflake53()`, JavaScript-safe (8 sequence bits: at most 256 per ms by design)",
                     "seqgen_snowflake53()"),
                    ("`seqgen_order_no('o')`, `SN{yyyy}{MM}{dd}{seq:8}{check}`", "seqgen_order_no"),
                    ("`gen_random_uuid()::text`", "gen_random_uuid()::text"),
                    ("`seqgen_uuidv7()`", "seqgen_uuidv7()"),
                    ("`uuidv7()`, PostgreSQL 18's", "count(uuidv7())")]:
    if not has_row(frag):
        continue
    ns = per_row(frag)
    print(f"| {label} | {ns:.0f} | {ns / floor:.2f}x |")
    chart_rows.append((label.split("`")[1], ns / floor, "seqgen" in frag))
print()
uuid_ns = per_row("seqgen_uuidv7()")
print(f"`seqgen_uuidv7()`: {uuid_ns / floor:.2f}x the per-row floor (target at most 2x), "
      f"{per_row('gen_random_uuid()) FROM') / uuid_ns:.1f}x faster than `gen_random_uuid()` (target at least 3x)"
      + (f", {per_row('count(uuidv7())') / uuid_ns:.2f}x the speed of PostgreSQL 18's `uuidv7()`"
         if has_row("count(uuidv7())") else "") + ".")
print()
print("**IDs as text**, the same way (the generator's own cost included):")
print()
print("| f | ns per row | ratio to `abs(g)` | ratio to the ID itself |")
print("| --- | ---: | ---: | ---: |")
for label, frag, base in [("`seqgen_next('b')::text` (decimal)", "seqgen_next('b')::text", "count(seqgen_next('b'))"),
                          ("`encode(int8send(seqgen_next('b')), 'hex')`", "int8send", "count(seqgen_next('b'))"),
                          ("`seqgen_encode(seqgen_next('b'))` (13 base32)", "count(seqgen_encode(seqgen_next", "count(seqgen_next('b'))"),
                          ("`seqgen_encode_typed('inv', seqgen_next('b'))`", "seqgen_encode_typed", "count(seqgen_next('b'))"),
                          ("`seqgen_uuidv7()::text` (36 hex and dashes)", "seqgen_uuidv7()::text", "count(seqgen_uuidv7())"),
                          ("`encode(uuid_send(seqgen_uuidv7()), 'base64')`", "uuid_send", "count(seqgen_uuidv7())"),
                          ("`seqgen_encode_uuid(seqgen_uuidv7())` (a ULID)", "seqgen_encode_uuid", "count(seqgen_uuidv7())"),
                          ("`seqgen_encode_typeid('user', seqgen_uuidv7())`", "seqgen_encode_typeid", "count(seqgen_uuidv7())"),
                          ("`seqgen_next_code('q')` (a short code; ratio to the opaque ID)", "seqgen_next_code", "count(seqgen_next('q'))")]:
    if not has_row(frag):
        continue
    ns = per_row(frag)
    print(f"| {label} | {ns:.0f} | {ns / floor:.2f}x | {ns / per_row(base):.2f}x |")
print()
opaque_ratio = per_row("seqgen_next('q')") / per_row("seqgen_next('b')")
print(f"Opaque tag against a plain tag, per row: {opaque_ratio:.2f}x.")
print()
ceiling = 4096.0
floor_per_ms = 1e6 / floor  # rows per ms at the abs(g) floor
target = min(ceiling, floor_per_ms)
wall_per_ms = 1e6 / per_row("seqgen_snowflake()")
print(f"Snowflake rate, 12 sequence bits (ceiling {ceiling:.0f} IDs/ms; floor rate {floor_per_ms:,.0f} rows/ms): "
      f"{ids_per_ms:,.0f} IDs/ms while generating (from the IDs' timestamps) = {ids_per_ms / target:.1%} of the lower; "
      f"{wall_per_ms:,.0f} IDs/ms wall clock including the query's fixed cost = {wall_per_ms / target:.1%}.")
print()
gs = per_row("FROM generate_series(1, 1000000)", 1_000_000)
bt = per_row("seqgen_next_batch", 1_000_000)
print("| 1,000,000 rows | ns per row | ratio to `generate_series` |")
print("| --- | ---: | ---: |")
print(f"| `generate_series(1, 1000000)` | {gs:.0f} | 1.00x |")
print(f"| `seqgen_next_batch('b', 1000000)` | {bt:.0f} | {bt / gs:.2f}x |")
print()
print("**pgbench**, 8 clients, 2 threads, `-M prepared`; latency percentiles from `--log`:")
print()
print("| script | TPS | ratio to `SELECT 1` | p99 (us) | p99.9 (us) | p99.9 ratio |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
base = pgbench("select1")
for label, name in [("`SELECT 1`", "select1"),
                    ("`SELECT nextval('s')`", "nextval"),
                    ("`SELECT gen_random_uuid()`", "uuid"),
                    ("`SELECT seqgen_next('b')` (step 1000, adaptive)", "seqgen_next"),
                    ("`SELECT seqgen_snowflake()`", "snowflake"),
                    ("`SELECT seqgen_snowflake53()`", "snowflake53"),
                    ("`SELECT seqgen_uuidv7()`", "seqgen_uuidv7"),
                    ("`SELECT uuidv7()` (PostgreSQL 18)", "uuidv7"),
                    ("`SELECT seqgen_next('p')` (step 100, adaptive off)", "seqgen_next_step100")]:
    if not os.path.exists(os.path.join(out, name + ".out")):
        continue
    tps, p99, p999 = pgbench(name)
    print(f"| {label} | {tps:,.0f} | {tps / base[0]:.2f}x | {p99} | {p999} | {p999 / base[2]:.2f}x |")
    chart_tps.append((label.split("`")[1], tps / base[0], "seqgen" in label))
new = [pgbench("seqgen_next_step100"), pgbench("seqgen_next_step100_2")]
old = [pgbench("old_step100"), pgbench("old_step100_2")]
print()
print("**Step 100 against the release**: the same pgbench script on a second cluster running pg_seqgen 0.1.0, "
      "alternating with this version (two rounds each):")
print()
print("| version | TPS (round 1, round 2) | mean TPS | ratio to 0.1.0 | p99.9 (us, rounds) |")
print("| --- | ---: | ---: | ---: | ---: |")
old_mean = sum(r[0] for r in old) / 2
for label, runs in [("this version", new), ("0.1.0", old)]:
    mean = sum(r[0] for r in runs) / 2
    print(f"| {label} | {runs[0][0]:,.0f}, {runs[1][0]:,.0f} | {mean:,.0f} | {mean / old_mean:.2f}x | "
          f"{runs[0][2]}, {runs[1][2]} |")
print()
print("**Several databases**: the same tag `b` in the database `postgres` and in two more databases with "
      "the extension (each its own allocator), per row against each database's own floor, median of 5:")
print()
print("| database | `abs(g)` ns per row | `seqgen_next('b')` ns per row | ratio to the floor | `nextval('s')` ratio |")
print("| --- | ---: | ---: | ---: | ---: |")
dbrows = {}
for line in open(os.path.join(out, "databases.tsv")):
    db, q, ms = line.rstrip("\n").split("\t")
    dbrows.setdefault(db, {})[q] = float(ms) * 1e6 / rows
for db, qs in dbrows.items():
    fl = next(v for k, v in qs.items() if "abs(g)" in k)
    sn = next(v for k, v in qs.items() if "seqgen_next" in k)
    nv = next(v for k, v in qs.items() if "nextval" in k)
    print(f"| {db} | {fl:.0f} | {sn:.0f} | {sn / fl:.2f}x | {nv / fl:.2f}x |")
print()
print("**pgbench over three databases**: the same 8 clients spread 3 + 3 + 2 over `postgres`, `bench2` and "
      "`bench3` (three pgbench processes at once), against 8 clients in one database:")
print()
print("| script | TPS, 8 clients in one database | TPS over three databases (sum) | ratio to `SELECT 1` over three | per database | p99.9 (us, worst database) |")
print("| --- | ---: | ---: | ---: | --- | ---: |")
spread_base = sum(pgbench(f"spread_select1_{db}")[0] for db in ("postgres", "bench2", "bench3"))
for label, one, spread in [("`SELECT 1`", "select1", "spread_select1"),
                           ("`SELECT nextval('s')`", "nextval", "spread_nextval"),
                           ("`SELECT seqgen_next('b')`", "seqgen_next", "spread_seqgen_next"),
                           ("`SELECT seqgen_snowflake()`", "snowflake", "spread_snowflake")]:
    parts = [pgbench(f"{spread}_{db}") for db in ("postgres", "bench2", "bench3")]
    total = sum(p[0] for p in parts)
    print(f"| {label} | {pgbench(one)[0]:,.0f} | {total:,.0f} | {total / spread_base:.2f}x | "
          f"{', '.join(f'{p[0]:,.0f}' for p in parts)} | {max(p[2] for p in parts)} |")
print()
print("**Many tags in turn**: each call names one of T tags (`seqgen_next('t' || g % T)`), against the floor "
      "of the same expression (`length('t' || g % T)`), median of 5, in a cluster with `seqgen.max_tags = 131072`; "
      "then the same tags in a scattered order (`'t' || g * 7919 % T`: each call's entry far from the last one's); "
      "with blocks of values per session (`seqgen.backend_block`, default 16) and without (`= 1`):")
print()
print("| T | order | floor ns per row | `seqgen_next` ns per row | ratio to the floor | with `seqgen.backend_block = 1` |")
print("| ---: | --- | ---: | ---: | ---: | ---: |")


def tag_rows(name):
    rows_of = {}
    for line in open(os.path.join(out, name)):
        q, ms = line.rstrip("\n").split("\t")
        rows_of[q] = float(ms) * 1e6 / rows
    return rows_of


tags, tags1 = tag_rows("tags.tsv"), tag_rows("tags_block1.tsv")
for t, order, expr in [(1000, "in turn", "(g % 1000)"), (10000, "in turn", "(g % 10000)"),
                       (100000, "in turn", "(g % 100000)"), (10000, "scattered", "(g::int8 * 7919 % 10000)"),
                       (100000, "scattered", "(g::int8 * 7919 % 100000)")]:
    fl = next(v for k, v in tags.items() if f"length('t' || {expr})" in k)
    nx = next(v for k, v in tags.items() if f"seqgen_next('t' || {expr})" in k)
    fl1 = next(v for k, v in tags1.items() if f"length('t' || {expr})" in k)
    nx1 = next(v for k, v in tags1.items() if f"seqgen_next('t' || {expr})" in k)
    print(f"| {t:,} | {order} | {fl:.0f} | {nx:.0f} | {nx / fl:.2f}x | {nx1 / fl1:.2f}x |")
versions = {}
for line in open(os.path.join(out, "versions.tsv")):
    label, q, ms = line.rstrip("\n").split("\t")
    versions.setdefault(label, []).append((q, float(ms) * 1e6 / rows))


def over_floor(label):
    # per round: seqgen_next's cost above abs(g), both in the same cluster; the median round
    pairs = versions[label]
    fl = [v for q, v in pairs if "abs(g)" in q]
    nx = [v for q, v in pairs if "seqgen_next" in q]
    per = sorted(n - f for f, n in zip(fl, nx))
    return per[len(per) // 2], sorted(nx)[len(nx) // 2]


this_over, this_ns = over_floor("this")
old_over, old_ns = over_floor("0.3.0")
print()
print(f"**The per-tag privilege check on the hot path**: `seqgen_next('b')` per row, this version against 0.3.0 "
      f"(no such check), 9 alternating rounds on twin clusters: {this_ns:.0f} ns against {old_ns:.0f} ns "
      f"({this_ns / old_ns - 1:+.1%}); above each cluster's `abs(g)` floor: {this_over:.0f} ns against "
      f"{old_over:.0f} ns.")
waits = dict(line.strip().split("|") for line in open(os.path.join(out, "waits.tsv")) if "|" in line)
print()
print(f"Draws that waited for a segment: tag b {waits.get('b', '?')}, tag p {waits.get('p', '?')}.")


def draw_chart(path):
    """Two horizontal bar charts of ratios (matplotlib, no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5.5), constrained_layout=True)
    for ax, data, title, xlabel, ref in [
        (a, chart_rows, f"Per row, one session ({rows:,} rows; lower is better)", "ns per row / abs(g)", 1.0),
        (b, chart_tps, "pgbench, 8 clients (higher is better)", "TPS / SELECT 1", 1.0),
    ]:
        labels = [d[0] for d in data][::-1]
        values = [d[1] for d in data][::-1]
        colors = ["#2b7bb9" if d[2] else "#b0b0b0" for d in data][::-1]
        bars = ax.barh(labels, values, color=colors)
        ax.bar_label(bars, labels=[f"{v:.2f}x" for v in values], padding=3, fontsize=8)
        ax.axvline(ref, color="black", linewidth=0.8, linestyle="--")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.tick_params(axis="y", labelsize=8)
        if ax is a:
            # from 1x to 50x: a log scale keeps the small ratios readable
            ax.set_xscale("log")
            ax.set_xlim(0.5, max(values) * 2)
        else:
            ax.set_xlim(0, max(values) * 1.18)
    fig.suptitle(f"pg_seqgen (blue) against PostgreSQL's own generators (grey), PostgreSQL {major}, "
                 f"{datetime.date.today()}", fontsize=11)
    fig.savefig(path, dpi=110)


if chart:
    draw_chart(chart)
    print()
    print(f"Chart: {chart}")

-- One round of the same-tag draw and its floor (bench/run.sh alternates versions).
SELECT * FROM bench_median(ARRAY[
    format('SELECT count(abs(g)) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''b'')) FROM generate_series(1, %s) g', :rows)
], 1);

-- Per database: the per-row floor, seqgen_next and nextval side by side (median of 5).
SELECT current_database(), query, ms FROM bench_median(ARRAY[
    format('SELECT count(abs(g)) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''b'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(nextval(''s'')) FROM generate_series(1, %s) g', :rows)
], 5);

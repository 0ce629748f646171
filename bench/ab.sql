-- One round of bench/ab.sh: the same-tag draw, a thousand tags in turn, and their floors.
SELECT * FROM bench_median(ARRAY[
    format('SELECT count(abs(g)) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''b'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(length(''t'' || (g %% 1000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g %% 1000))) FROM generate_series(1, %s) g', :rows)
], 1);

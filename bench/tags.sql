-- Many tags in turn: each call names one of T tags ('t0' .. 't<T-1>'), against the floor of
-- the same expression (the tag name built, its length taken). Median of 5.
SELECT * FROM bench_median(ARRAY[
    format('SELECT count(length(''t'' || (g %% 1000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g %% 1000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(length(''t'' || (g %% 10000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g %% 10000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(length(''t'' || (g %% 100000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g %% 100000))) FROM generate_series(1, %s) g', :rows)
], 5);

-- Many tags in turn: each call names one of T tags ('t0' .. 't<T-1>'), against the floor of
-- the same expression (the tag name built, its length taken). Median of 5. Then the same
-- tags in a scattered order ('t' || (g * 7919) % T: every tag once per T calls, each next
-- one far from the last in the backend's cache).
SELECT * FROM bench_median(ARRAY[
    format('SELECT count(length(''t'' || (g %% 1000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g %% 1000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(length(''t'' || (g %% 10000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g %% 10000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(length(''t'' || (g %% 100000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g %% 100000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(length(''t'' || (g::int8 * 7919 %% 10000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g::int8 * 7919 %% 10000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(length(''t'' || (g::int8 * 7919 %% 100000))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''t'' || (g::int8 * 7919 %% 100000))) FROM generate_series(1, %s) g', :rows)
], 5);

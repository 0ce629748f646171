-- Objects the benchmark measures.
CREATE EXTENSION pg_seqgen;
SELECT seqgen_create('b');          -- default step 1000, adaptive
SELECT seqgen_create('p', 100);     -- step 100: segments switch constantly
SELECT seqgen_create('o');          -- order numbers
SELECT seqgen_set_template('o', 'SN{yyyy}{MM}{dd}{seq:8}{check}');
CREATE SEQUENCE s;                  -- PostgreSQL's default sequence
CREATE SEQUENCE s_cache CACHE 1000; -- with a per-backend cache of 1000

-- Times each query `rounds` times, round-robin (so drift hits every query alike), and
-- returns the median milliseconds per query.
CREATE FUNCTION bench_median(queries text[], rounds int)
RETURNS TABLE (query text, ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    t timestamptz;
    times float8[] := '{}';
    n int := array_length(queries, 1);
BEGIN
    FOR i IN 1..n LOOP EXECUTE queries[i]; END LOOP;  -- warm-up
    FOR r IN 1..rounds LOOP
        FOR i IN 1..n LOOP
            t := clock_timestamp();
            EXECUTE queries[i];
            times := times || (extract(epoch FROM clock_timestamp() - t) * 1000)::float8;
        END LOOP;
    END LOOP;
    RETURN QUERY
    SELECT queries[i],
           (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
              FROM unnest(times) WITH ORDINALITY AS u(x, k) WHERE (k - 1) % n = i - 1)
      FROM generate_series(1, n) i;
END $$;
SELECT seqgen_create('q');          -- an opaque tag
SELECT seqgen_make_opaque('q');

-- Single-session rows: per-row cost of each generator over :rows rows.
SELECT * FROM bench_median(ARRAY[
    format('SELECT count(abs(g)) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(nextval(''s'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(nextval(''s_cache'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(gen_random_uuid()) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''b'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''q'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_snowflake()) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_snowflake53()) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_order_no(''o'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(gen_random_uuid()::text) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_uuidv7()) FROM generate_series(1, %s) g', :rows),
    -- IDs as text (issue 34): PostgreSQL's own text and encode() beside seqgen's base32
    format('SELECT count(seqgen_next(''b'')::text) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(encode(int8send(seqgen_next(''b'')), ''hex'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_encode(seqgen_next(''b''))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_encode_typed(''inv'', seqgen_next(''b''))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_uuidv7()::text) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(encode(uuid_send(seqgen_uuidv7()), ''base64'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_encode_uuid(seqgen_uuidv7())) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_encode_typeid(''user'', seqgen_uuidv7())) FROM generate_series(1, %s) g', :rows),
    -- short codes of the opaque tag q (issue 34): beside its opaque IDs
    format('SELECT count(seqgen_next_code(''q'')) FROM generate_series(1, %s) g', :rows),
    'SELECT count(*) FROM generate_series(1, 1000000)',
    'SELECT count(*) FROM seqgen_next_batch(''b'', 1000000)'
] || CASE WHEN current_setting('server_version_num')::int >= 180000  -- PostgreSQL 18's uuidv7()
          THEN ARRAY[format('SELECT count(uuidv7()) FROM generate_series(1, %s) g', :rows)]
          ELSE '{}'::text[] END, 5);

-- Snowflake: IDs per millisecond while generating, from the IDs' own timestamps (the
-- generator's rate without the query's fixed cost), against the layout's ceiling.
SELECT 'snowflake_ids_per_ms',
       count(*)::float8 / ((max(id) >> 22) - (min(id) >> 22) + 1)
  FROM (SELECT seqgen_snowflake() AS id FROM generate_series(1, :rows)) s;

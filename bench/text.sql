-- IDs as text (issue 34), single session: per-row cost over :rows rows, median of 5
-- interleaved rounds. The text of a bigint ID, of a uuid, an order number with a base32
-- counter, a short code, PostgreSQL's own text and encode(), and the sqids extension
-- (pg_sqids) when bench/text.sh built it.
SELECT seqgen_create('o32');
SELECT seqgen_set_template('o32', 'SN{yyyy}{MM}{dd}{seq:6:b32}');
SELECT seqgen_create('o10');
SELECT seqgen_set_template('o10', 'SN{yyyy}{MM}{dd}{seq:8}');
SELECT * FROM bench_median(ARRAY[
    format('SELECT count(abs(g)) FROM generate_series(1, %s) g', :rows),
    -- the encodings alone, of the row number
    format('SELECT count(g::text) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(encode(int8send(g), ''hex'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_encode(g)) FROM generate_series(1, %s) g', :rows),
    -- with the generator
    format('SELECT count(seqgen_next(''b'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''b'')::text) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(encode(int8send(seqgen_next(''b'')), ''hex'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_encode(seqgen_next(''b''))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_encode_typed(''inv'', seqgen_next(''b''))) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_uuidv7()) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_uuidv7()::text) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_encode_uuid(seqgen_uuidv7())) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next(''q'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_next_code(''q'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_order_no(''o10'')) FROM generate_series(1, %s) g', :rows),
    format('SELECT count(seqgen_order_no(''o32'')) FROM generate_series(1, %s) g', :rows)
] || CASE WHEN EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_sqids')
          -- a hundredth of the rows: it builds an encoder (and its blocklist) for every call
          THEN ARRAY[format('SELECT count(sqids_encode(g)) FROM generate_series(1, %s / 100) g', :rows),
                     format('SELECT count(sqids_encode(seqgen_next(''b''))) FROM generate_series(1, %s / 100) g', :rows)]
          ELSE '{}'::text[] END, 5);

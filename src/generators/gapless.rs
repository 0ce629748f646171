//! Gapless numbers: `seqgen_create_gapless`, `seqgen_gapless_next`, `seqgen_gapless_order_no`,
//! and the commit-time trigger `seqgen_gapless_assign` (attached by `seqgen_gapless_attach`,
//! sql/gapless.sql).
//!
//! A gapless tag counts per key (and per period of its template) in `seqgen.gapless_counter`,
//! in the drawing transaction itself: the counter row is written, and stays locked, until the
//! transaction ends, so whatever undoes the transaction (a rollback, a savepoint rolled back,
//! `ROLLBACK PREPARED`, a crash before the commit) undoes the number, and the committed
//! numbers of a key are exactly 1, 2, 3, ... (from the tag's `start_with`). The price is that
//! two transactions drawing on one key take turns. Drawn at commit (the trigger, deferred),
//! a transaction holds its key only while it commits; drawn in the transaction
//! (`seqgen_gapless_next`), until it ends. A waiter gives up after `seqgen.allocation_timeout`
//! (or the session's shorter `lock_timeout`) with 55P03 naming the key; other keys never wait.
//! No shared memory and no allocator: a gapless number is a row write by nature.

use pgrx::prelude::*;
use pgrx::{pg_sys, PgTrigger, WhoAllocated};
use seqgen_core::template::{Template, Tz};

use crate::plumbing::acl;
use crate::plumbing::catalog::first_row;
use crate::plumbing::error::{check_tag, OrRaise, SeqgenError};

// (not `Result`: #[pg_trigger] names the standard one)
type Res<T> = crate::plumbing::error::Result<T>;
use crate::plumbing::session::{as_superuser, bounded_lock_wait, with_settings};

/// The settings a key column's text is read under at commit (its text must not depend on the
/// committing session's).
const KEY_TEXT_SETTINGS: &[(&str, &str)] = &[
    ("search_path", "pg_catalog, pg_temp"),
    ("quote_all_identifiers", "off"),
    ("DateStyle", "ISO, YMD"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "UTC"),
    ("extra_float_digits", "1"),
    ("bytea_output", "hex"),
];

fn spi_err(e: pgrx::spi::Error) -> SeqgenError {
    SeqgenError::Internal(e.to_string())
}

/// Create a gapless tag (owned by the calling role), optionally with an order-number template
/// (set once, here: a later one could restart or repeat its numbers). Numbers start at
/// `start_with` for every key (and every period of the template).
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_create_gapless(
    biz_tag: Option<&str>,
    template: default!(Option<&str>, "NULL"),
    time_zone: default!(Option<&str>, "'UTC'"),
    start_with: default!(Option<i64>, 1),
    description: default!(Option<&str>, "NULL"),
) {
    let zone = crate::plumbing::error::required(time_zone, "time_zone");
    create(biz_tag, template, zone, start_with, description).or_raise()
}

pub(crate) fn create(
    tag: Option<&str>,
    template: Option<&str>,
    zone: &str,
    start_with: Option<i64>,
    description: Option<&str>,
) -> Res<()> {
    let tag = tag.ok_or(SeqgenError::NullArgument("biz_tag"))?;
    check_tag(tag)?;
    if crate::plumbing::node::is_citus(crate::plumbing::directory::attach()?) {
        return Err(SeqgenError::Unsupported(
            "gapless tags are not supported on Citus: every node counts on its own, so no node could promise the cluster's numbers are gapless"
                .into(),
        ));
    }
    if let Some(text) = template {
        let t = seqgen_core::template::parse(text).map_err(|e| SeqgenError::InvalidArgument(e.to_string()))?;
        if t.is_opaque() {
            return Err(SeqgenError::InvalidArgument(format!(
                "template \"{text}\": gapless numbers are sequential, {{seq:N:opaque}} would shuffle them"
            )));
        }
    }
    crate::generators::tags::create_row(Some(tag), Some(1), start_with, description, true)?;
    match template {
        Some(text) => crate::generators::order::set_any_template(tag, text, zone, false),
        None => Ok(()),
    }
}

/// The next number of `key` for `tag`, in the calling transaction: the key is held until the
/// transaction ends. For a table, numbering at commit (`seqgen_gapless_attach`) holds it
/// only while the transaction commits.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_gapless_next(biz_tag: Option<&str>, key: default!(Option<&str>, "''")) -> i64 {
    args(biz_tag, key).and_then(|(tag, key)| take(tag, key, false)).map(|(n, _)| n).or_raise()
}

/// The tag and key of a call: neither may be NULL (a NULL key would be no key at all).
fn args<'a>(tag: Option<&'a str>, key: Option<&'a str>) -> Res<(&'a str, &'a str)> {
    Ok((tag.ok_or(SeqgenError::NullArgument("biz_tag"))?, key.ok_or(SeqgenError::NullArgument("key"))?))
}

/// The next order number of `key` for a gapless tag with a template (`{seq:N}` is the key's
/// number in the period), in the calling transaction.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_gapless_order_no(biz_tag: Option<&str>, key: default!(Option<&str>, "''")) -> String {
    args(biz_tag, key)
        .and_then(|(tag, key)| {
            take(tag, key, true).and_then(|(_, s)| s.ok_or_else(|| SeqgenError::NoTemplate(tag.to_string())))
        })
        .or_raise()
}

/// A gapless tag's template, parsed, with its zone.
struct Numbering {
    template: Template,
    tz: Tz,
}

/// The template of gapless tag `tag` (`None` without one), checking that the tag is gapless.
fn numbering(tag: &str) -> Res<Option<Numbering>> {
    let row = bounded_lock_wait(|| {
        as_superuser(|| {
            first_row(
                "SELECT a.gapless, t.template, t.time_zone FROM seqgen.alloc a \
             LEFT JOIN seqgen.template t ON t.biz_tag OPERATOR(pg_catalog.=) a.biz_tag \
             WHERE a.biz_tag OPERATOR(pg_catalog.=) $1",
                &[tag.into()],
                false,
                |r| r.get_three::<bool, String, String>(),
            )
        })
    })?;
    let Some((gapless, text, zone)) = row else {
        return Err(crate::plumbing::replication::unknown_tag(tag));
    };
    if gapless != Some(true) {
        return Err(SeqgenError::NotGapless(tag.to_string()));
    }
    let (Some(text), Some(zone)) = (text, zone) else { return Ok(None) };
    let template = seqgen_core::template::parse(&text).map_err(|e| SeqgenError::Internal(e.to_string()))?;
    let tz = seqgen_core::template::parse_time_zone(&zone).map_err(SeqgenError::Internal)?;
    Ok(Some(Numbering { template, tz }))
}

/// Take the next number of `key` for `tag` (checking the caller may draw from it): the number,
/// and the order number it renders with the tag's template (when `render` and it has one).
fn take(tag: &str, key: &str, render: bool) -> Res<(i64, Option<String>)> {
    check_tag(tag)?;
    if !acl::may_draw(tag)? {
        return Err(SeqgenError::TagPermission(tag.to_string()));
    }
    let numbering = numbering(tag)?;
    if let (Some(nb), true, false) = (&numbering, render, key.is_empty()) {
        // two keys counting apart would render the same texts: as for keyed order numbers,
        // the template must tell the keys apart
        if !nb.template.has_key() {
            return Err(SeqgenError::TemplateLacksKey(tag.to_string()));
        }
    }
    let period = match &numbering {
        Some(nb) => nb.template.locate(nb.tz, crate::plumbing::shmem::now_ms()).key,
        None => 0,
    };
    let n = next_number(tag, key, period)?;
    let rendered = match (&numbering, render) {
        (Some(nb), true) => {
            let capacity = nb.template.capacity();
            if n > capacity {
                // the transaction fails: the number goes back with it
                return Err(SeqgenError::OrderOverflow { tag: tag.to_string(), capacity });
            }
            nb.template.renders_year(period).map_err(SeqgenError::DatetimeOutOfRange)?;
            let node = crate::plumbing::guc::NODE_ID.get().max(0) as u32;
            Some(nb.template.render_keyed(period, n as u64, node, tag, key))
        }
        _ => None,
    };
    Ok((n, rendered))
}

/// Count `key` of `tag` up by one in `period`, in the calling transaction (the row stays
/// locked until it ends); a waiter gives up after the bounded wait with 55P03 naming the key.
fn next_number(tag: &str, key: &str, period: i64) -> Res<i64> {
    let began = std::time::Instant::now();
    let counted = |gave_up: bool| {
        if let Some(h) = crate::plumbing::shmem::header() {
            h.stats.gapless_drawn(began.elapsed().as_micros() as u64, gave_up);
        }
    };
    let got = PgTryBuilder::new(|| {
        bounded_lock_wait(|| {
            as_superuser(|| {
                Spi::connect_mut(|c| {
                    let t = c.update(
                        "INSERT INTO seqgen.gapless_counter AS c (biz_tag, key, period_key, last) \
                         SELECT a.biz_tag, $2, $3, a.max_id OPERATOR(pg_catalog.+) 1 FROM seqgen.alloc a \
                         WHERE a.biz_tag OPERATOR(pg_catalog.=) $1 AND a.gapless \
                         ON CONFLICT (biz_tag, key, period_key) DO UPDATE SET last = c.last OPERATOR(pg_catalog.+) 1 \
                         RETURNING c.last",
                        None,
                        &[tag.into(), key.into(), period.into()],
                    )?;
                    if t.is_empty() {
                        return Ok(None);
                    }
                    t.first().get_one::<i64>()
                })
            })
        })
    })
    // the lock wait ran out: the same SQLSTATE, naming the key (the transaction fails, and
    // with it anything it drew)
    .catch_when(PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE, |_| {
        counted(true);
        SeqgenError::GaplessBusy { tag: tag.to_string(), key: key.to_string() }.raise()
    })
    .execute()
    .map_err(spi_err)?;
    if got.is_some() {
        counted(false);
    }
    got.ok_or_else(|| SeqgenError::NotGapless(tag.to_string()))
}

/// The base types (domains resolved) a gapless key column may have: their text is the same
/// under the fixed settings of `KEY_TEXT_SETTINGS` whoever commits, and their output functions
/// are PostgreSQL's own (the key is read with the extension's privileges). Enums too (their
/// labels). Refused, for example: the `reg*` types (their text follows `search_path` and
/// `quote_all_identifiers`), `money` (`lc_monetary`), types of other extensions, and types whose
/// equal values have several texts (`numeric` 1.0 and 1.00, `-0` and `0` of `real` and `double
/// precision`, `interval` '1 day' and '24 hours'): each text would count as a key of its own.
/// The key is read with `format('%s', ...)`, the type's output function: a cast to text could be
/// a function of the table owner's, run with the extension's privileges.
pub(crate) const KEY_TYPES: &[&str] = &[
    "text",
    "character varying",
    "character",
    "name",
    "\"char\"",
    "smallint",
    "integer",
    "bigint",
    "boolean",
    "uuid",
    "date",
    "timestamp without time zone",
    "timestamp with time zone",
    "time without time zone",
    "bytea",
    "inet",
    "cidr",
];

/// The commit-time numbering of a table (see `seqgen_gapless_attach`): a deferred constraint
/// trigger `AFTER INSERT OR UPDATE ... FOR EACH ROW WHEN (NEW.<column> IS NULL)` with the
/// arguments tag, number column, key column ('' for none). The row version the event is for
/// is numbered if it is still the live one and still unnumbered (a row updated again later in
/// the transaction is numbered by the event of its last version, a deleted one not at all).
/// Whether it is, and its key, are read with the extension's privileges, so row-level
/// security that hides the row from the committing role does not make it look dead. The
/// number is written into it by the committing user, with that user's privileges: the table's
/// own triggers and constraints run as they would for the user's own `UPDATE` (run as the
/// owner, they ran with the user's `search_path`: a planted function ran as the owner). An
/// update that changes no row (a BEFORE UPDATE trigger returning NULL, a policy hiding the
/// row) fails the commit: a committed row is numbered, or its transaction fails.
#[pg_trigger]
fn seqgen_gapless_assign<'a>(
    trigger: &'a PgTrigger<'a>,
) -> std::result::Result<Option<PgHeapTuple<'a, impl WhoAllocated>>, SeqgenError> {
    assign(trigger).or_raise();
    Ok(None::<PgHeapTuple<'a, pgrx::AllocatedByPostgres>>)
}

/// What the trigger reads of the numbered table, with the extension's privileges.
struct Target {
    /// the table's name, for messages
    name: String,
    read: String,
    write: String,
    /// the key column's type and base type (domains resolved) and whether that is an enum
    key_type: Option<(String, String, bool)>,
    /// the key column's collation, if it is nondeterministic (equal values, several texts)
    nondeterministic: Option<String>,
    /// may the committing user read the row's ctid (table-level SELECT) and update the number?
    may_select: bool,
    may_update: bool,
}

fn target(relid: pg_sys::Oid, user: pg_sys::Oid, column: &str, key_column: &str) -> Res<Target> {
    // type names as KEY_TYPES spells them, whatever the session's quote_all_identifiers
    let row = as_superuser(|| {
        with_settings(KEY_TEXT_SETTINGS, || Spi::connect(|c| {
            let t = c.select(
                "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname), \
                        pg_catalog.format('SELECT %s FROM ONLY %I.%I WHERE ctid OPERATOR(pg_catalog.=) $1::pg_catalog.tid AND %I IS NULL', \
                        CASE WHEN $3 OPERATOR(pg_catalog.=) '' THEN '''''' ELSE pg_catalog.format('pg_catalog.format(''%%s'', %I)', $3) END, \
                        n.nspname, c.relname, $2), \
                        pg_catalog.format('UPDATE ONLY %I.%I SET %I = $1 WHERE ctid OPERATOR(pg_catalog.=) $2::pg_catalog.tid \
                                           RETURNING %I IS NOT DISTINCT FROM CAST($1 AS %s)', n.nspname, c.relname, $2, $2, \
                          (SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a \
                            WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) $2)), \
                        pg_catalog.has_column_privilege($4, c.oid, 'ctid', 'SELECT'), \
                        pg_catalog.has_column_privilege($4, c.oid, $2, 'UPDATE'), \
                        (SELECT pg_catalog.format_type(a.atttypid, NULL) FROM pg_catalog.pg_attribute a \
                          WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) $3 \
                            AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped), \
                        (WITH RECURSIVE ty(oid, base, typtype) AS ( \
                            SELECT t.oid, t.typbasetype, t.typtype FROM pg_catalog.pg_type t \
                              JOIN pg_catalog.pg_attribute a ON a.atttypid OPERATOR(pg_catalog.=) t.oid \
                             WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) $3 \
                               AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped \
                            UNION ALL \
                            SELECT t.oid, t.typbasetype, t.typtype FROM pg_catalog.pg_type t JOIN ty \
                              ON t.oid OPERATOR(pg_catalog.=) ty.base WHERE ty.base OPERATOR(pg_catalog.<>) 0) \
                         SELECT pg_catalog.format_type(ty.oid, NULL) OPERATOR(pg_catalog.||) \
                                CASE WHEN ty.typtype OPERATOR(pg_catalog.=) 'e' THEN ' enum' ELSE '' END \
                           FROM ty WHERE ty.base OPERATOR(pg_catalog.=) 0), \
                        (SELECT pg_catalog.format('%I.%I', cn.nspname, co.collname) FROM pg_catalog.pg_attribute a \
                           JOIN pg_catalog.pg_collation co ON co.oid OPERATOR(pg_catalog.=) a.attcollation \
                           JOIN pg_catalog.pg_namespace cn ON cn.oid OPERATOR(pg_catalog.=) co.collnamespace \
                          WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) $3 \
                            AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped AND NOT co.collisdeterministic) \
                 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
                 WHERE c.oid OPERATOR(pg_catalog.=) $1",
                Some(1),
                &[relid.into(), column.into(), key_column.into(), user.into()],
            )?;
            if t.is_empty() {
                return Ok(None);
            }
            let r = t.first();
            Ok::<_, pgrx::spi::Error>(Some((
                r.get::<String>(1)?,
                r.get::<String>(2)?,
                r.get::<String>(3)?,
                r.get::<bool>(4)?,
                r.get::<bool>(5)?,
                r.get::<String>(6)?,
                r.get::<String>(7)?,
                r.get::<String>(8)?,
            )))
        }))
    })
    .map_err(spi_err)?;
    let Some((Some(name), Some(read), Some(write), sel, upd, key_type, base, collation)) = row else {
        return Err(SeqgenError::Internal("the numbered table is gone".into()));
    };
    let key_type = match (key_column.is_empty(), key_type, base) {
        (true, _, _) => None,
        (false, Some(ty), Some(base)) => {
            let (base, is_enum) = match base.strip_suffix(" enum") {
                Some(b) => (b.to_string(), true),
                None => (base, false),
            };
            Some((ty, base, is_enum))
        }
        (false, _, _) => {
            return Err(SeqgenError::InvalidArgument(format!(
                "key column \"{key_column}\" of table {name} does not exist"
            )))
        }
    };
    Ok(Target {
        name,
        read,
        write,
        key_type,
        nondeterministic: collation,
        may_select: sel.unwrap_or(false),
        may_update: upd.unwrap_or(false),
    })
}

/// A key column's type must give one text whatever the session's settings (see `KEY_TYPES`).
pub(crate) fn check_key_type(table: &str, column: &str, ty: &str, base: &str, is_enum: bool) -> Res<()> {
    if is_enum || KEY_TYPES.contains(&base) {
        return Ok(());
    }
    Err(SeqgenError::GaplessKeyType { table: table.to_string(), column: column.to_string(), ty: ty.to_string() })
}

fn assign(trigger: &PgTrigger<'_>) -> Res<()> {
    let args = trigger.extra_args().map_err(|e| SeqgenError::Internal(e.to_string()))?;
    let [tag, column, key_column] = args.as_slice() else {
        return Err(SeqgenError::InvalidArgument(
            "seqgen_gapless_assign takes three arguments: the tag, the number column and the key column ('' for none); use seqgen_gapless_attach()"
                .into(),
        ));
    };
    let td = trigger.trigger_data();
    let update = matches!(trigger.op(), Ok(pgrx::PgTriggerOperation::Update));
    let row = if update { td.tg_newtuple } else { td.tg_trigtuple };
    if row.is_null() || !matches!(trigger.level(), pgrx::PgTriggerLevel::Row) {
        return Err(SeqgenError::InvalidArgument(
            "seqgen_gapless_assign is a row trigger; use seqgen_gapless_attach()".into(),
        ));
    }
    let tid = unsafe { (*row).t_self };
    let (block, offset) = unsafe {
        (pgrx::itemptr::item_pointer_get_block_number(&tid), pgrx::itemptr::item_pointer_get_offset_number(&tid))
    };
    let ctid = format!("({block},{offset})");
    let relid = trigger.relid().map_err(|e| SeqgenError::Internal(e.to_string()))?;
    let user = unsafe { pg_sys::GetUserId() };
    let target = target(relid, user, column, key_column)?;
    if let Some((ty, base, is_enum)) = &target.key_type {
        check_key_type(&target.name, key_column, ty, base, *is_enum)?;
    }
    if let Some(collation) = target.nondeterministic {
        return Err(SeqgenError::GaplessKeyCollation { table: target.name, column: key_column.to_string(), collation });
    }
    if !(target.may_select && target.may_update) {
        return Err(SeqgenError::GaplessPrivilege { table: target.name, column: column.to_string() });
    }
    // Is the row version still the live one, and unnumbered? Its key's text under fixed
    // settings (two sessions with another DateStyle, TimeZone, search_path, ... count one key,
    // not two). Read with the extension's privileges: row-level security that hides the row
    // from the committing role must not make it look dead (it would stay unnumbered). The key
    // types allowed have PostgreSQL's own output functions.
    let key: Option<Option<String>> = as_superuser(|| {
        with_settings(KEY_TEXT_SETTINGS, || {
            Spi::connect(|c| {
                let t = c.select(&target.read, Some(1), &[ctid.as_str().into()])?;
                if t.is_empty() {
                    return Ok(None);
                }
                t.first().get_one::<String>().map(Some)
            })
        })
    })
    .map_err(spi_err)?;
    // not the live version any more, or numbered already: nothing to do
    let Some(key) = key else { return Ok(()) };
    let key = key.unwrap_or_default();
    if key.len() > crate::plumbing::shmem::KEY_MAX {
        return Err(SeqgenError::InvalidArgument(format!(
            "a gapless key is at most {} bytes, the key of a row of table {} has {}",
            crate::plumbing::shmem::KEY_MAX,
            target.name,
            key.len()
        )));
    }
    let (n, rendered) = take(tag, &key, true)?;
    let write = &target.write;
    let written = Spi::connect_mut(|c| {
        let t = match &rendered {
            Some(text) => c.update(write, None, &[text.as_str().into(), ctid.as_str().into()])?,
            None => c.update(write, None, &[n.into(), ctid.as_str().into()])?,
        };
        let len = t.len();
        // the number as the column holds it, compared in the column's type (numeric(12,2)
        // holds 42 as 42.00)
        let kept = if len == 1 { t.first().get_one::<bool>()? } else { None };
        Ok::<_, pgrx::spi::Error>((len, kept))
    })
    .map_err(spi_err)?;
    match written {
        (1, Some(true)) => Ok(()),
        // a BEFORE UPDATE trigger set the number to NULL (the row would be numbered again at
        // once, and again, until the counter overflowed) or to another value
        (1, _) => Err(SeqgenError::GaplessOverwritten { table: target.name, ctid, column: column.to_string() }),
        _ => Err(SeqgenError::GaplessNotWritten { table: target.name, ctid }),
    }
}

/// `seqgen.seqgen_gapless_create_trigger`: the commit-time trigger on one table, for
/// `seqgen_gapless_attach`, which reaches it by OID (sql/gapless.sql) once
/// `seqgen.gapless_attach_targets` has checked the call. The caller needs the TRIGGER privilege
/// on the table, as for `CREATE TRIGGER`; the trigger is then created as the bootstrap
/// superuser, because its function is in schema `seqgen`, which the caller may not use.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_gapless_create_trigger(tbl: pg_sys::Oid, number_column: &str, biz_tag: &str, key_column: Option<&str>) {
    create_trigger(tbl, number_column, biz_tag, key_column.unwrap_or("")).or_raise()
}

fn create_trigger(tbl: pg_sys::Oid, column: &str, tag: &str, key_column: &str) -> Res<()> {
    let settings = &[("search_path", "pg_catalog, pg_temp"), ("quote_all_identifiers", "off")];
    // the lock CREATE TRIGGER takes, before the checks: the table checked is the one the
    // trigger goes on (a refusal ends the caller's transaction or subtransaction, and the lock)
    // SAFETY: locking an OID takes no catalog read; a missing table is refused below
    unsafe { pg_sys::LockRelationOid(tbl, pg_sys::ShareRowExclusiveLock as pg_sys::LOCKMODE) };
    // the caller may create triggers on the table and on each of its partitions (run as the
    // superuser, CREATE TRIGGER on a partitioned table clones the trigger to its partitions
    // without checking them), and (as seqgen.gapless_attach_targets) may call
    // seqgen_gapless_attach; otherwise the first table it may not, by name
    let refused: Option<String> = with_settings(settings, || {
        Spi::connect(|c| {
            let r = c.select(
                "SELECT CASE WHEN NOT pg_catalog.has_function_privilege(pg_catalog.format( \
                            '%I.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text)', \
                            (SELECT n.nspname FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n \
                                 ON n.oid OPERATOR(pg_catalog.=) e.extnamespace \
                              WHERE e.extname OPERATOR(pg_catalog.=) 'pg_seqgen')), 'EXECUTE') \
                               OR pg_catalog.has_table_privilege($1, 'TRIGGER') IS NOT TRUE \
                            THEN $1::pg_catalog.regclass::pg_catalog.text \
                            ELSE (SELECT t.relid::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_partition_tree($1) t \
                                   WHERE NOT pg_catalog.has_table_privilege(t.relid, 'TRIGGER') LIMIT 1) END",
                Some(1),
                &[tbl.into()],
            )?;
            r.first().get::<String>(1)
        })
    })
    .map_err(spi_err)?;
    if let Some(name) = refused {
        return Err(SeqgenError::TablePermission(name));
    }
    as_superuser(|| {
        with_settings(settings, || {
            Spi::connect_mut(|c| {
                let sql = c
                    .select(
                        "SELECT pg_catalog.format('CREATE CONSTRAINT TRIGGER %I AFTER INSERT OR UPDATE ON %s \
                         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.%I IS NULL) \
                         EXECUTE FUNCTION seqgen.seqgen_gapless_assign(%L, %L, %L)', \
                         'seqgen_gapless_' OPERATOR(pg_catalog.||) $2, $1::pg_catalog.regclass, $2, $3, $2, $4)",
                        Some(1),
                        &[tbl.into(), column.into(), tag.into(), key_column.into()],
                    )?
                    .first()
                    .get::<String>(1)?
                    .unwrap_or_default();
                c.update(&sql, None, &[]).map(|_| ())
            })
        })
    })
    .map_err(spi_err)
}

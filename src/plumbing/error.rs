//! Every error pg_seqgen raises, mapped to its SQLSTATE in one place.
//!
//! pgrx can only raise the SQLSTATEs PostgreSQL itself defines, so each condition is mapped to
//! the closest standard code; docs/errors.md lists the mapping (its SQLSTATE table is generated
//! from this file by tests/integration/tests/docs.rs).

use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::PgLogLevel;
use seqgen_core::text::TextIdError;

#[derive(Debug, thiserror::Error)]
pub enum SeqgenError {
    #[error("pg_seqgen must be loaded via shared_preload_libraries")]
    NotPreloaded,
    #[error("pg_seqgen serves at most {0} databases (seqgen.max_databases), and every one is in use")]
    TooManyDatabases(i32),
    #[error("pg_seqgen cannot hand out IDs during recovery (this server is a hot standby)")]
    HotStandby,
    #[error("the pg_seqgen allocation worker is not running")]
    WorkerNotRunning,
    #[error("the pg_seqgen allocation worker has not found the pg_seqgen catalog in database \"{0}\"")]
    CatalogMissing(String),
    #[error("timed out after {ms} ms waiting for the pg_seqgen allocation worker (tag \"{tag}\")")]
    Timeout { tag: String, ms: i32 },
    #[error("the catalog row of tag \"{0}\" is locked by another transaction")]
    RowLocked(String),
    #[error("tag \"{0}\" does not exist")]
    UnknownTag(String),
    /// An unknown tag that column DEFAULTs draw from: `columns` (table, column name);
    /// `adoptable`: one column, whose DEFAULT is `seqgen_next(tag)` alone (`seqgen_adopt` sets
    /// the same).
    #[error("tag \"{tag}\" does not exist")]
    UnknownTagDrawn { tag: String, columns: Vec<(String, String)>, adoptable: bool },
    #[error("tag \"{tag}\" does not exist")]
    TagNotReplicated { tag: String, subscription: String },
    #[error("tag \"{tag}\" is not served while subscription \"{subscription}\" replicates the catalog here")]
    CatalogReplicatedIn { tag: String, subscription: String },
    #[error("permission denied for tag \"{0}\"")]
    TagPermission(String),
    #[error("must be the owner of tag \"{0}\"")]
    NotTagOwner(String),
    #[error("tag \"{0}\" was created by a transaction that has not committed yet")]
    TagNotCommitted(String),
    #[error("tag \"{0}\" already exists")]
    DuplicateTag(String),
    /// `seqgen_currval` of a tag (`Some`) or `seqgen_lastval` (`None`) before a draw.
    #[error("{}", match .0 { Some(t) => format!("currval of tag \"{t}\" is not yet defined in this session"), None => "lastval is not yet defined in this session".into() })]
    NotYetDrawn(Option<String>),
    #[error("invalid tag name: {0}")]
    BadTag(String),
    #[error("{0} must not be NULL")]
    NullArgument(&'static str),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    DatetimeOutOfRange(String),
    #[error("tag \"{0}\" has exhausted the bigint range")]
    Exhausted(String),
    #[error("the clock is {behind} ms behind the last {what} timestamp, more than seqgen.snowflake_max_borrow allows")]
    ClockBehind { what: &'static str, behind: i64 },
    #[error("the {0} layout's time range is used up")]
    TimeExhausted(&'static str),
    #[error("{0} IDs are not available yet")]
    ClocksNotOpen(&'static str),
    #[error("the clock is before seqgen.snowflake_epoch")]
    BeforeEpoch,
    #[error("node id {node} does not fit in the tag's {bits} node bits")]
    NodeDoesNotFit { node: u32, bits: u32 },
    #[error("seqgen.node_id {0} does not fit in the 4 node bits of seqgen_snowflake53() (0 to 15)")]
    Snowflake53Node(u32),
    #[error("this node is not in its Citus cluster's metadata")]
    NotInCluster,
    #[error("this server has not confirmed Citus group {0} as its own yet")]
    GroupNotConfirmed(i64),
    #[error("{0} is not known yet")]
    NotReady(String),
    #[error("tag \"{0}\" has no node bits, so on Citus its values from different nodes would meet")]
    CitusNeedsNodeBits(String),
    #[error("the order-number template of tag \"{0}\" does not render the node id")]
    CitusNeedsNodeField(String),
    #[error("tag \"{0}\" is not opaque")]
    NotOpaque(String),
    #[error("tag \"{tag}\" has used up its {capacity} short codes of {length} characters")]
    CodesUsedUp { tag: String, length: usize, capacity: u64 },
    #[error("only a superuser may call {0}")]
    SuperuserOnly(&'static str),
    #[error("tag \"{0}\" is gapless")]
    Gapless(String),
    #[error("tag \"{0}\" is not gapless")]
    NotGapless(String),
    #[error("the gapless number of tag \"{tag}\", key \"{key}\" is held by another transaction until it ends")]
    GaplessBusy { tag: String, key: String },
    #[error("gapless key column \"{column}\" of table {table} has type {ty}, whose text depends on session settings")]
    GaplessKeyType { table: String, column: String, ty: String },
    #[error("gapless key column \"{column}\" of table {table} has the nondeterministic collation {collation}")]
    GaplessKeyCollation { table: String, column: String, collation: String },
    #[error("permission denied to number the rows of table {table} at commit")]
    GaplessPrivilege { table: String, column: String },
    #[error("permission denied for table {0}")]
    TablePermission(String),
    #[error("could not write the gapless number of row {ctid} of table {table}")]
    GaplessNotWritten { table: String, ctid: String },
    #[error("the gapless number of row {ctid} of table {table} was changed as it was written")]
    GaplessOverwritten { table: String, ctid: String, column: String },
    #[error("tag \"{0}\" has no template")]
    NoTemplate(String),
    #[error("the template of tag \"{0}\" numbers per key")]
    TemplateHasKey(String),
    #[error("the template of tag \"{0}\" has no {{key}}, so the numbers of two keys would be the same")]
    TemplateLacksKey(String),
    #[error("the order-number counter of tag \"{tag}\" is full for this period ({capacity} numbers)")]
    OrderOverflow { tag: String, capacity: i64 },
    #[error("tag \"{tag}\" cannot have another key: its owner's tags reached seqgen.max_keys_per_role ({limit})")]
    KeyLimit { tag: String, limit: i64 },
    #[error("{0}")]
    Unsupported(String),
    #[error("cannot PREPARE a transaction that wrote a pg_seqgen snowflake or UUIDv7 reservation")]
    PreparedReservation,
    #[error("the pg_seqgen catalog is at version {0}, older than the loaded library")]
    NeedsUpdate(String),
    #[error("the pg_seqgen allocation worker could not serve tag \"{tag}\": {detail}")]
    WorkerFailed { tag: String, detail: String, state: i32 },
    #[error("pg_seqgen internal error: {0}")]
    Internal(String),
    /// An ERROR raised inside a subtransaction that caught it (`session::subtransaction`):
    /// its message and SQLSTATE, kept.
    #[error("{message}")]
    Raised { state: i32, message: String },
    #[error("column \"{column}\" of relation {table} does not exist")]
    UnknownColumn { table: String, column: String },
    /// A value that has no ID text, or text that is no ID (`seqgen_encode`, `seqgen_decode`).
    #[error(transparent)]
    TextId(#[from] seqgen_core::text::TextIdError),
    /// An error of one part of a configuration document (`seqgen_apply`), with its JSON path;
    /// keeps the SQLSTATE and hint of the error it wraps.
    #[error("{path}: {inner}")]
    At { path: String, inner: Box<SeqgenError> },
}

pub type Result<T> = std::result::Result<T, SeqgenError>;

impl SeqgenError {
    pub fn sqlstate(&self) -> PgSqlErrorCode {
        use PgSqlErrorCode::*;
        use SeqgenError::*;
        match self {
            At { inner, .. } => inner.sqlstate(),
            NotPreloaded
            | WorkerNotRunning
            | ClocksNotOpen(_)
            | CatalogMissing(_)
            | TagNotCommitted(_)
            | NoTemplate(_)
            | TemplateHasKey(_)
            | TemplateLacksKey(_)
            | NotOpaque(_)
            | Gapless(_)
            | NotGapless(_)
            | NodeDoesNotFit { .. }
            | Snowflake53Node(_)
            | NotInCluster
            | GroupNotConfirmed(_)
            | NotReady(_)
            | CitusNeedsNodeBits(_)
            | CitusNeedsNodeField(_)
            | NeedsUpdate(_)
            | CatalogReplicatedIn { .. }
            | NotYetDrawn(_) => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            WorkerFailed { state, .. } if *state != 0 => PgSqlErrorCode::from(*state),
            WorkerFailed { .. } => ERRCODE_INTERNAL_ERROR,
            Raised { state, .. } => PgSqlErrorCode::from(*state),
            UnknownColumn { .. } => ERRCODE_UNDEFINED_COLUMN,
            TextId(e) if e.is_input_syntax() => ERRCODE_INVALID_TEXT_REPRESENTATION,
            TextId(TextIdError::OutOfRange { .. } | TextIdError::TooWide { .. }) => ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            TextId(TextIdError::NoCodesLeft { .. }) => ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
            TextId(_) => ERRCODE_INVALID_PARAMETER_VALUE,
            HotStandby => ERRCODE_READ_ONLY_SQL_TRANSACTION,
            Timeout { .. } | RowLocked(_) | GaplessBusy { .. } => ERRCODE_LOCK_NOT_AVAILABLE,
            UnknownTag(_) | UnknownTagDrawn { .. } | TagNotReplicated { .. } => ERRCODE_UNDEFINED_OBJECT,
            TagPermission(_) | NotTagOwner(_) | SuperuserOnly(_) | GaplessPrivilege { .. } | TablePermission(_) => {
                ERRCODE_INSUFFICIENT_PRIVILEGE
            }
            GaplessNotWritten { .. } | GaplessOverwritten { .. } => ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            DuplicateTag(_) => ERRCODE_DUPLICATE_OBJECT,
            BadTag(_) | InvalidArgument(_) => ERRCODE_INVALID_PARAMETER_VALUE,
            // 22008 (datetime_field_overflow is datetime_value_out_of_range)
            DatetimeOutOfRange(_) => ERRCODE_DATETIME_FIELD_OVERFLOW,
            NullArgument(_) => ERRCODE_NULL_VALUE_NOT_ALLOWED,
            Exhausted(_) | TimeExhausted(_) | OrderOverflow { .. } | CodesUsedUp { .. } => {
                ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED
            }
            ClockBehind { .. } => ERRCODE_SYSTEM_ERROR,
            BeforeEpoch => ERRCODE_CONFIG_FILE_ERROR,
            TooManyDatabases(_) | KeyLimit { .. } => ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            Unsupported(_) | PreparedReservation | GaplessKeyType { .. } | GaplessKeyCollation { .. } => {
                ERRCODE_FEATURE_NOT_SUPPORTED
            }
            Internal(_) => ERRCODE_INTERNAL_ERROR,
        }
    }

    /// Facts about the error (the DETAIL line), where there are some.
    pub fn detail(&self) -> Option<String> {
        use SeqgenError::*;
        Some(match self {
            At { inner, .. } => return inner.detail(),
            GaplessKeyType { .. } => "Two sessions with other settings (search_path, quote_all_identifiers, lc_monetary, ...) would count one key as two, and repeat its numbers.".into(),
            GaplessKeyCollation { .. } => "Values the collation counts as equal (ACME and acme, under a case-insensitive one) have different texts: one key would be counted as several, and its numbers repeated.".into(),
            GaplessPrivilege { column, .. } => format!("Numbering at commit updates column \"{column}\" of the rows the role wrote, found by their ctid: the role needs SELECT on the table (a grant on columns does not cover ctid) and UPDATE on column \"{column}\"."),
            GaplessOverwritten { column, .. } => format!("A BEFORE UPDATE trigger set column \"{column}\" to NULL or another value in the update that writes the number: the row would not keep its number (set to NULL, it would be numbered again, and again)."),
            KeyLimit { .. } => "Each key of seqgen_next(biz_tag, key) and seqgen_order_no(biz_tag, key) counts toward the role that owns its tag, whoever draws it; keys already in use still draw.".into(),
            ClocksNotOpen(_) => "The pg_seqgen launcher has not read every database's reservation since the server started: until it has, an ID could be issued below one another database issued before a restart with the clock behind.".into(),
            NodeDoesNotFit { .. } => "The node id is seqgen.node_id, or on Citus the node id the coordinator assigned the node's group.".into(),
            NotInCluster => "Its group is not listed in pg_dist_node, so it has no node id to number with.".into(),
            TagNotReplicated { subscription, .. } => format!("This database subscribes to \"{subscription}\", which does not bring the pg_seqgen catalog."),
            CatalogReplicatedIn { subscription, .. } => format!("Subscription \"{subscription}\" brings pg_seqgen's catalog in from its publisher, which draws from the tag: drawing here too would repeat its values."),
            CitusNeedsNodeField(_) => "On Citus every node numbers on its own: numbers that do not show the node would meet.".into(),
            Gapless(_) => "A gapless tag's numbers are counted in the drawing transaction; the segment generators (seqgen_next, seqgen_next_batch, seqgen_order_no) do not serve it.".into(),
            TemplateHasKey(_) => "Its template has {key}: each key counts on its own.".into(),
            GaplessNotWritten { .. } => "The update that writes the number changed no row: a BEFORE UPDATE trigger returned NULL, or a row-level security policy hides the row from the committing role.".into(),
            UnknownTagDrawn { columns, .. } => {
                let named: Vec<String> = columns.iter().take(3).map(|(t, c)| format!("column \"{c}\" of table {t}")).collect();
                let more = columns.len().saturating_sub(3);
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                let (of, draw) = if columns.len() == 1 { ("The DEFAULT of", "draws") } else { ("The DEFAULTs of", "draw") };
                format!("{of} {}{more} {draw} from it: the table may hold values the tag gave before its catalog row went (a switchover whose publication left out pg_seqgen's catalog, a restore without it).", named.join(", "))
            }
            _ => return None,
        })
    }

    pub fn hint(&self) -> Option<String> {
        use SeqgenError::*;
        Some(match self {
            At { inner, .. } => return inner.hint(),
            NotPreloaded => "Add pg_seqgen to shared_preload_libraries in postgresql.conf and restart the server.".into(),
            TooManyDatabases(_) => "Drop the extension from a database that no longer needs it, or raise seqgen.max_databases (and max_worker_processes) and restart the server.".into(),
            HotStandby => "Draw IDs on the primary.".into(),
            ClocksNotOpen(_) => "Check the server log for the \"pg_seqgen launcher\": every database that allows connections is read at start-up, and seqgen.max_databases must leave room for every database with the extension.".into(),
            WorkerNotRunning => "Check the server log for the \"pg_seqgen launcher\" and \"pg_seqgen allocator\" background workers; max_worker_processes must leave room for one allocator per database.".into(),
            CatalogMissing(db) => format!("Run CREATE EXTENSION pg_seqgen in database \"{db}\"."),
            Timeout { .. } => "Check the server log for the \"pg_seqgen allocator\" background worker; raise seqgen.allocation_timeout if the server is overloaded.".into(),
            RowLocked(_) => "Commit or roll back the transaction that holds the row (see pg_locks), then retry.".into(),
            UnknownTag(_) => "Create it with seqgen_create().".into(),
            UnknownTagDrawn { tag, columns, adoptable } => match &columns[..] {
                [(table, column)] if *adoptable => format!(
                    "Create it above the column's values, not at 1, which would repeat them: SELECT seqgen_adopt({}, {}, {}); see \"Logical replication\" in the documentation.",
                    literal(tag), literal(table), literal(column)
                ),
                _ => "Create it above the values those columns hold, not at 1, which would repeat them, or restore pg_seqgen's catalog; see \"Logical replication\" in the documentation.".into(),
            },
            TagNotReplicated { subscription, .. } => format!("Publish the catalog on the old side too (SELECT seqgen_publish('<publication>')), then ALTER SUBSCRIPTION \"{subscription}\" REFRESH PUBLICATION here. A tag created here by hand would start its numbering again."),
            CatalogReplicatedIn { subscription, .. } => format!("Draw on the publisher until the switchover; then ALTER SUBSCRIPTION \"{subscription}\" DISABLE (or DROP SUBSCRIPTION) here, and this side draws on above everything the publisher reserved. Drawing on both sides would repeat values."),
            TagPermission(t) => format!("The tag's owner can allow it: SELECT seqgen_grant('{t}', '<role>');"),
            NotTagOwner(_) => "Only the tag's owner (the role that created it, or a member of that role) and superusers may change it.".into(),
            NotInCluster => "On the coordinator: SELECT citus_set_coordinator_host('<host>', <port>) (for the coordinator itself) or SELECT citus_add_node('<host>', <port>) for this node. The node draws within a second of joining.".into(),
            GroupNotConfirmed(g) => format!("A promoted standby or a Citus clone reads its primary's group, and numbering with it would repeat the primary's IDs. After a failover, point the group at this server on the coordinator (SELECT citus_update_node(<nodeid>, '<host>', <port>)); a clone being split off gets a group of its own when citus_promote_clone_and_rebalance commits. The server log of the \"pg_seqgen sync\" worker says what it found for group {g}."),
            NotReady(_) => "Check the server log for the \"pg_seqgen allocator\" of this database; raise seqgen.allocation_timeout if the server is overloaded.".into(),
            CitusNeedsNodeBits(t) => format!("Tags created in a Citus database get node bits themselves; for a tag created before Citus: SELECT seqgen_set_node_bits('{t}', 8);"),
            CitusNeedsNodeField(t) => format!("Put {{node}} or {{node:N}} in the template, for example: SELECT seqgen_set_template('{t}', 'SN{{yyyy}}{{MM}}{{dd}}{{node:3}}{{seq:6}}');"),
            Gapless(t) => format!("Draw its numbers with seqgen_gapless_next('{t}') or seqgen_gapless_order_no('{t}'), or number a table at commit with seqgen_gapless_attach()."),
            TemplateHasKey(t) => format!("Name the key: seqgen_order_no('{t}', key)."),
            NotYetDrawn(Some(t)) => format!("The value of seqgen_currval('{t}') is what seqgen_next('{t}') last returned to this session; other sessions' draws do not count."),
            NotYetDrawn(None) => "The value of seqgen_lastval() is what seqgen_next() last returned to this session, of any tag or key.".into(),
            TagNotCommitted(_) => "Commit the transaction that ran seqgen_create() before drawing IDs from the tag.".into(),
            ClockBehind { what, .. } => format!("{what} IDs resume when the server clock catches up; check NTP."),
            TimeExhausted("UUIDv7") => "The UUIDv7 generator's 42 bits of milliseconds end in 2109.".into(),
            TimeExhausted(_) => "Choose a later seqgen.snowflake_epoch or more time bits (IDs then resume above every issued one).".into(),
            BeforeEpoch => "Set seqgen.snowflake_epoch to a moment in the past.".into(),
            CodesUsedUp { .. } => "Draw longer codes: a tag's codes of a length end after 32^(length - 1) of its counter values, and one more character holds 32 times as many.".into(),
            NoTemplate(t) => format!("Attach one with seqgen_set_template('{t}', ...)."),
            TemplateLacksKey(t) => format!("Put the key in the template, e.g. SELECT seqgen_set_template('{t}', '{{key}}-{{seq:6}}'); a gapless tag takes its template when it is created: seqgen_create_gapless('{t}', '{{key}}-{{seq:6}}')."),
            GaplessBusy { .. } => "Numbers of one key are given out one transaction at a time: number at commit (seqgen_gapless_attach) to hold the key only while a transaction commits, or raise seqgen.allocation_timeout (or the session's lock_timeout).".into(),
            NotGapless(t) => format!("Segment tags are drawn with seqgen_next('{t}'); create a gapless one with seqgen_create_gapless()."),
            NeedsUpdate(_) => "Run ALTER EXTENSION pg_seqgen UPDATE in this database.".into(),
            WorkerFailed { .. } => "Only this tag's request failed; see seqgen_worker_status() and the server log.".into(),
            PreparedReservation => "A raised reservation must count from the moment its transaction commits, which a prepared transaction cannot promise: write it in a transaction that commits without PREPARE TRANSACTION.".into(),
            GaplessKeyType { .. } => "Key on a column of a type whose text is fixed (text, an integer, a date, uuid, an enum, ...): for a regclass, its oid or its name as text (a generated column works).".into(),
            GaplessKeyCollation { .. } => "Key on a column with a deterministic collation (COLLATE \"C\"), or on a generated column such as lower(key).".into(),
            GaplessPrivilege { .. } => "Grant the committing role SELECT on the table and UPDATE on the number column.".into(),
            TablePermission(_) => "Attaching puts a trigger on the table: its owner, or a role granted TRIGGER on it, may.".into(),
            GaplessNotWritten { .. } => "Let the committing role update the rows it inserts: no BEFORE UPDATE trigger may return NULL for the numbering update, and the table's SELECT and UPDATE policies must admit the row.".into(),
            GaplessOverwritten { column, .. } => format!("Let the table's BEFORE UPDATE triggers leave column \"{column}\" as the update sets it."),
            KeyLimit { .. } => "Reuse keys, drop the tags no longer needed (their keys go with them), or raise seqgen.max_keys_per_role.".into(),
            TextId(e) => return e.hint().map(String::from),
            OrderOverflow { .. } => "Use a wider {seq:N} or a finer period; for periods of a second, seqgen.order_no_overflow = wait waits for the next second instead.".into(),
            _ => return None,
        })
    }

    /// Raise this error as a PostgreSQL ERROR.
    pub fn raise(self) -> ! {
        // a keyed counter's slot name is the tag, a separator and the key: shown as
        // `tag "t" key "k"` (tags cannot contain the separator, so only such names change)
        let shown = crate::plumbing::names::shown_name;
        let mut report = ErrorReport::new(self.sqlstate(), shown(self.to_string()), "pg_seqgen");
        if let Some(d) = self.detail() {
            report = report.set_detail(shown(d));
        }
        if let Some(h) = self.hint() {
            report = report.set_hint(shown(h));
        }
        report.report(PgLogLevel::ERROR);
        unreachable!("ERROR does not return")
    }
}

/// Unwrap or raise.
pub trait OrRaise<T> {
    fn or_raise(self) -> T;
}

impl<T> OrRaise<T> for Result<T> {
    #[inline]
    fn or_raise(self) -> T {
        match self {
            Ok(v) => v,
            Err(e) => e.raise(),
        }
    }
}

/// `text` as an SQL string literal, for a call quoted in a hint.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// An argument of an administrative call, which must not be NULL: raises 22004 naming it
/// (draws are STRICT instead, like `nextval`). One rule for every administrative function.
#[inline]
pub fn required<T>(value: Option<T>, name: &'static str) -> T {
    value.ok_or(SeqgenError::NullArgument(name)).or_raise()
}

/// A slot name: a tag, or a tag and the key of one of its keyed counters.
pub fn check_name(name: &str) -> Result<()> {
    match crate::plumbing::names::split_name(name) {
        (tag, None) => check_tag(tag),
        (tag, Some(key)) => {
            check_tag(tag)?;
            check_key(key)
        }
    }
}

/// The key of a keyed counter (`seqgen_next(tag, key)`).
pub fn check_key(key: &str) -> Result<()> {
    let max = crate::plumbing::names::KEY_MAX;
    if key.is_empty() {
        return Err(SeqgenError::InvalidArgument("a key must not be empty".into()));
    }
    if key.len() > max {
        return Err(SeqgenError::InvalidArgument(format!("a key is at most {max} bytes, this one has {}", key.len())));
    }
    if key.chars().any(char::is_control) {
        return Err(SeqgenError::InvalidArgument("a key must not contain control characters".into()));
    }
    Ok(())
}

/// Validate a tag name: 1 to 63 bytes, no control characters.
pub fn check_tag(tag: &str) -> Result<()> {
    if tag.is_empty() {
        return Err(SeqgenError::BadTag("a tag name must not be empty".into()));
    }
    if tag.len() > crate::plumbing::names::NAME_MAX {
        return Err(SeqgenError::BadTag(format!(
            "a tag name is at most {} bytes, this one has {}",
            crate::plumbing::names::NAME_MAX,
            tag.len()
        )));
    }
    if tag.chars().any(char::is_control) {
        return Err(SeqgenError::BadTag("a tag name must not contain control characters".into()));
    }
    Ok(())
}

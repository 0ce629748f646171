//! The operation fuzzer: pg_seqgen's own Jepsen.
//!
//! A seeded random sequence of steps, each one of:
//! * a draw from any generator (segments, with the session's `seqgen_currval` and
//!   `seqgen_lastval`, which must be the value drawn; batches, order numbers, snowflakes,
//!   UUIDv7s, gapless numbers in the transaction or at its commit, on a few keys) by one
//!   of four sessions in two databases (one session is an ordinary role), in a random
//!   transaction shape: autocommit, commit, rollback, rollback to a savepoint, prepare then
//!   commit or roll back prepared, or prepare and leave it;
//! * an administrative call (create, drop, alter, restart and its undo, templates in several
//!   zones, opaque, node bits, snowflake advance, reservations raised by hand, grants, bad
//!   input) in a random transaction shape;
//! * a server event: fast or immediate restart, SIGSTOP or SIGTERM of an allocator, SIGTERM
//!   of the launcher, LOCK TABLE on a catalog table (held by a session, or by a prepared
//!   transaction that outlives restarts), the clock stepped back or jumped forward;
//! * `seqgen.key_floor_hold` set to 0 or 2 s for the rest of the run (`Op::Hold`);
//! * a heal: every fault ends (processes continued, locks released, prepared transactions
//!   finished, the clock back).
//!
//! Beside the draws it keeps a model of what must happen (issue 29): which tags exist, which
//! of them the ordinary role `fz_app` was granted (a committed grant or revoke, a drop; an
//! unknown state after a prepared one until the next committed one), the floor of every
//! committed restart, whether a fault is active, and how many order numbers a victim tag drew
//! in its period while a second tenant (`fz_att`) churns keys of its own tag. Judged against
//! it: `fz_app` is never served a tag it was not granted; every value of a tag drawn after a
//! committed restart is at or above its floor, every value of a key after a committed
//! `seqgen_advance` above its values before plus the margin, and the first value of a key no
//! one drew before above the margins of the tag's committed advances; a superuser's draw of an existing tag with no
//! fault active is never refused (42704, 42501, 55000, 0A000: only waits may fail); and the
//! victim's period is never full (2200H) before an eighth of its capacity was drawn.
//! Session 2 runs at REPEATABLE READ and `fz_app`'s at SERIALIZABLE. The table numbered at
//! commit is partitioned, has a BEFORE trigger and row-level security. A concurrent step has
//! two new sessions draw two tags in turn (blocks of values) while session 2 restarts them:
//! a statement that starts after a restart committed draws at or above its floor.
//! `seqgen.max_keys_per_role` is 600 here: the second tenant's churn meets it late in a run; a
//! churn that takes the tenant's keys past it must be refused (53400), and the victim's numbers
//! are judged as before.
//!
//! After every step it checks: no value or text returned by any call (committed or rolled
//! back) was returned before (per tag incarnation and database; snowflakes and UUIDv7s
//! server-wide); each session's values of a tag (and of each key) increase, unless the tag
//! was made opaque; every call answered within `seqgen.allocation_timeout` + 1 s with a value or
//! a documented SQLSTATE (never XX000, never a lost connection, no crash in the server log);
//! the committed gapless numbers of every key are exactly 1..N; the counters of
//! `seqgen_stats()` never go down until a reset or a restart, and with no fault active every
//! value reserved is drawn, cached or lost (`reserved - (drawn + cached + lost_eviction +
//! lost_change + lost_period)` keeps its value); `fz_app` sees in `seqgen_status()` and the view
//! `seqgen_tags` exactly the tags the model says it was granted, and may not reset the counters;
//! and after a heal, every tag, snowflakes, UUIDv7s and gapless numbers can be drawn within 2 s.
//!
//! The steps are a pure function of the seed, so a failing seed replays. A failure prints the
//! operation log, then shrinks it (dropping runs of steps and replaying on a fresh cluster) to
//! the few steps that matter. CI runs fixed seeds with a fixed number of steps
//! (`SEQGEN_FUZZ_SEEDS`, `SEQGEN_FUZZ_STEPS`); `SEQGEN_FUZZ_SOAK_SECS=3600` runs random seeds
//! for that long.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seqgen_integration::*;

const TIMEOUT_MS: u64 = 1000;
const DBS: [&str; 2] = ["postgres", "fz2"];
/// Session i draws in database `DBS[i % 2]`; session 3 is the ordinary role `fz_app`.
const SESSIONS: usize = 4;
const TAGS: [&str; 4] = ["a", "b", "c", "d"];
/// A tag of short codes beside `TAGS` (index `TAGS.len()`): opaque from the start and granted
/// to `fz_app`, so that most code draws are served (a tag of `TAGS` is rarely opaque). No
/// administrative step names it, but a document applied with `drop_missing` may drop it.
const CODES_TAG: usize = TAGS.len();

fn tag_name(t: usize) -> &'static str {
    TAGS.get(t).copied().unwrap_or("cd")
}
/// Templates that can meet each other (same prefix and length, or the same digits in another
/// order), or not.
const TEMPLATES: [&str; 12] = [
    "F{yyyy}{MM}{dd}{seq:3}",
    "F{yyyy}{MM}{dd}{seq:3:opaque}",
    "F{yyyy}{MM}{dd}{seq:2}{check}",
    "F{yyyy}{MM}{dd}{HH}{seq:1}",
    // a base32 counter of the same shape as the four above (and one at the end that meets G{seq:4})
    "F{yyyy}{MM}{dd}{seq:3:b32}",
    "F{yyyy}{dd}{MM}{seq:3}",
    "G{seq:4}",
    "G{seq:4:opaque}",
    "F{yyyy}{MM}{dd}{HH}{mm}-{seq:2}",
    // counters per key: seqgen_order_no(tag, key)
    "F{key}-{yyyy}{MM}{dd}{seq:2}",
    "{key}/{seq:3}",
    "G{seq:4:b32:opaque}",
];
/// The first template of counters per key.
const KEYED_TEMPLATE: usize = 9;
/// The base32 counter of the first family.
const BASE32_TEMPLATE: usize = 4;
const ZONES: [&str; 5] = ["UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago", "America/New_York", "Asia/Shanghai"];
/// Tables the lock faults lock: the catalog's, and `fz_cols`, whose DEFAULTs draw from every
/// tag (the error for a dropped tag names its column without waiting for a lock on it).
const TABLES: [&str; 6] =
    ["seqgen.alloc", "seqgen.template", "seqgen.order_counter", "seqgen.snowflake", "seqgen.uuidv7", "fz_cols"];
const MODES: [&str; 3] = ["ACCESS EXCLUSIVE", "EXCLUSIVE", "SHARE"];
/// Every SQLSTATE a call may answer with (pg_seqgen's documented ones, and PostgreSQL's for
/// the fuzzer's own statements); XX000 and lost connections never.
const DOCUMENTED: [&str; 19] = [
    "55P03", "55000", "58000", "2200H", "42704", "42710", "22023", "22004", "22008", "0A000", "42501", "53400",
    "23514", "40001", "25001", "25P02", "42P01", "23503", "57014",
];

/// Where the ledgers of keyed counters start (`KEYED + tag * 3 + key`, beside the tags').
const KEYED: usize = 1000;
/// The ledgers of key `n<i>` of tag `t`: `NEW_KEYS * (t + 1) + i`.
const NEW_KEYS: usize = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Auto,
    Commit,
    Rollback,
    SavepointRollback,
    PrepareCommit,
    PrepareRollback,
    PrepareLeave,
}

#[derive(Debug, Clone, PartialEq)]
enum Draw {
    Next(usize),
    /// `seqgen_next` naming every tag in turn in one statement, rows 12 + 4 x the argument
    /// (calls that change the tag from call to call draw from per-session blocks).
    InTurn(usize),
    /// `seqgen_next` of tags `t` and `t + 1` in turn, 24 rows: two tags fit in the three slots,
    /// so the session's blocks of values grow (1, 2, 4, ...) and outlive the statement (four
    /// tags in turn evict each other at every draw, and take no blocks).
    Pair(usize),
    Batch(usize, i32),
    /// `seqgen_next(tag, key)` on keys `k0` to `k2` in turn, this many rows.
    Keyed(usize, u32),
    /// `seqgen_next(tag, key)` of a key no one drew before (`n` and the step's number): it
    /// starts above every margin a committed `seqgen_advance` added to the tag (a key the old
    /// primary first drew while a standby lagged must not start at 1 on the promoted one).
    NewKey(usize, usize),
    /// `seqgen_next(tag, key)` of key `n` and that number, often one drawn before (made under
    /// the tag's lease, its row maybe lost in a crash since: it goes on above the tag's
    /// `key_floor`, never again from where it started), maybe never.
    KeyAgain(usize, usize),
    OrderNo(usize, u32),
    /// `seqgen_order_no(tag, key)` on keys `k0` to `k2` in turn, this many rows.
    OrderKeyed(usize, u32),
    /// A clock-ordered generator's IDs, this many rows, in a [`Form`]: as text, decoded here
    /// into the same ledger as the numbers, so a text and a number of one ID count as a repeat.
    Snowflake(u32, Form),
    Uuid(u32, Form),
    Snowflake53(u32, Form),
    /// Gapless numbers of tag `gl`: rows of one key (`k0` to `k2`), numbered in the
    /// transaction (`seqgen_gapless_next`) or at its commit (the table's trigger).
    Gapless {
        key: u32,
        rows: u32,
        at_commit: bool,
    },
    /// `seqgen_next_code(tag, length)`, this many rows: refused (55000) unless the tag is
    /// opaque; never a code twice per tag incarnation, each code well-formed with its check
    /// character.
    Code(usize, u32, u32),
}

/// How a draw's IDs come back: as the values, as their sortable text (`seqgen_encode`,
/// `seqgen_encode_uuid`), or typed (`seqgen_encode_typed`, `seqgen_encode_typeid`, type `fz`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    Value,
    Text,
    Typed,
}

impl Form {
    fn draw(rng: &mut StdRng) -> Form {
        [Form::Value, Form::Value, Form::Value, Form::Text, Form::Typed][rng.random_range(0..5)]
    }

    /// The SQL of a bigint `call` in this form, `width` characters as text.
    fn bigint(self, call: &str, width: usize) -> String {
        match self {
            Form::Value => call.to_string(),
            Form::Text => format!("seqgen_encode({call}, {width})"),
            Form::Typed => format!("seqgen_encode_typed('fz', {call})"),
        }
    }

    fn uuid(self, call: &str) -> String {
        match self {
            Form::Value => call.to_string(),
            Form::Text => format!("seqgen_encode_uuid({call})"),
            Form::Typed => format!("seqgen_encode_typeid('fz', {call})"),
        }
    }

    /// A drawn bigint, read back with the core's codec; its text must be the canonical one.
    fn bigint_of(self, v: &str, width: usize) -> Result<i64, String> {
        use seqgen_core::text;
        let id = match self {
            Form::Value => return v.parse().map_err(|_| format!("not a bigint: {v}")),
            Form::Text => text::decode_i64(v),
            Form::Typed => text::decode_typed_i64("fz", v),
        }
        .map_err(|e| format!("not an ID's text: {e}"))?;
        let canonical = match self {
            Form::Text => text::encode_i64(id, width as i64),
            _ => text::encode_typed_i64("fz", id),
        };
        if canonical.as_deref() != Ok(v) {
            return Err(format!("{v} is not the text of {id} ({canonical:?})"));
        }
        Ok(id)
    }

    /// A drawn uuid as PostgreSQL prints it, from itself or from its text.
    fn uuid_of(self, v: &str) -> Result<String, String> {
        use seqgen_core::text;
        let n = match self {
            Form::Value => return Ok(v.to_string()),
            Form::Text => text::decode_u128(v),
            Form::Typed => text::decode_typeid("fz", v),
        }
        .map_err(|e| format!("not a uuid's text: {e}"))?;
        let canonical = match self {
            Form::Text => Ok(text::encode_u128(n)),
            _ => text::encode_typeid("fz", n),
        };
        if canonical.as_deref() != Ok(v) {
            return Err(format!("{v} is not the text of its uuid ({canonical:?})"));
        }
        let h = format!("{n:032x}");
        Ok(format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]))
    }
}

/// A tag incarnation of a database: (database, tag, incarnation).
type TagKey = (usize, usize, u32);

#[derive(Debug, Clone, PartialEq)]
enum Admin {
    /// A tag with this step; `if_not_exists`.
    Create(usize, i32, bool),
    /// `missing_ok`.
    Drop(usize, bool),
    Alter(usize, i32),
    Restart(usize, i64, bool),
    RestartUndo(usize),
    /// Raise the tag's counter and its keys' by a margin (`seqgen_advance`, the failover
    /// runbook's call): once it commits, the tag's values are above the highest drawn before
    /// it plus the margin (the model's floor).
    AdvanceTag(usize, i64),
    Template(usize, usize, usize),
    Opaque(usize),
    NodeBits(usize, i32),
    /// Advance a clock-ordered generator's floor (0: snowflake, 1: UUIDv7, 2: 53-bit snowflake)
    /// to the clock plus this many ms (without force).
    Advance(usize, i64),
    /// Raise a reservation by hand (0: snowflake, 1: UUIDv7) to the clock plus this many ms.
    HandRaise(usize, i64),
    Grant(usize, bool),
    /// Configuration as code: 0: apply this database's own `seqgen_config()` (must change
    /// nothing), 1: apply the other database's, 2: a document naming only this tag, with
    /// `drop_missing`.
    Apply(usize, usize),
    BadInput(usize),
    /// `seqgen_key_status` of a tag (a read: it must answer, or refuse with a documented code).
    KeyStatus(usize),
    /// `seqgen_column_tag` of `fz_cols`' column for the tag: must name the tag.
    ColumnTag(usize),
    /// `seqgen_status()` (false) or the view `seqgen_tags` (true): by `fz_app`, it must list no
    /// tag `fz_app` was not granted, and every tag it was.
    Status(bool),
    /// `seqgen_stats_reset()`: by a superuser it sets the counters to zero (not
    /// transactional, as `pg_stat_reset()`); `fz_app` is refused (42501).
    StatsReset,
    /// `seqgen_gapless_attach` by `fz_app`, granted it, of `fz_attach_t`, a table it does not
    /// own: refused (42501), as 1.0 creates the trigger itself once it has checked the caller.
    AttachNotOwned,
}

#[derive(Debug, Clone, PartialEq)]
enum Fault {
    Restart(&'static str),
    StopAllocator(usize),
    TermAllocator(usize),
    TermLauncher,
    Lock(usize, usize, usize),
    LockPrepared(usize, usize),
    ClockBack(i64),
    ClockForward(i64),
    /// The clock jumps forward to 2 s before New York's next fall-back (local time then
    /// repeats an hour; `ZONES` has New York), if it is not past it already.
    FallBack,
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Draw(usize, Draw, Shape),
    Admin(usize, Admin, Shape),
    Fault(Fault),
    Heal(bool),
    /// Three times: the second tenant `fz_att` draws this many keys of its own tag `z` that
    /// no one drew before (evicting slots), then a superuser draws one order number of the
    /// victim tag `v`.
    Churn(u32),
    /// In `fz_app`'s database: a superuser grants a tag to `fz_app`, `fz_app` draws it (its answer
    /// cached), a superuser revokes it in the shape, and `fz_app` draws it again at once
    /// (steps in between would evict the tag from the three slots, and with it the cache),
    /// and once more from a new session (answered from the grants the slot keeps).
    Revoke(usize, Shape),
    /// Session `s` draws every tag in turn (per-session blocks), a superuser restarts tag `t`
    /// above everything reserved in the shape (from another backend for session 0), and
    /// session `s` draws in turn again at once.
    RestartUnder(usize, usize, Shape),
    /// Two new superuser sessions of `postgres` draw tags `t` and `t + 1` in turn (blocks of
    /// values per session) for about a second, while session 2 restarts one of them every
    /// 50 ms: a statement that starts after a restart committed draws at or above its floor,
    /// each session's values of a tag increase, nothing twice.
    Blocks(usize),
    /// `seqgen.key_floor_hold` set to this many ms for the rest of the run (`ALTER SYSTEM`,
    /// reloaded): at 0 a tag's floor under new keys is given back in every once-a-second round
    /// and raised again by its next new key, so restarts and locks meet the floor on its way
    /// up and down; the default (2 s) keeps it up.
    Hold(i32),
}

/// The session of the second tenant (database `postgres`), beside the four of `SESSIONS`.
const ATTACKER: usize = 4;
/// The victim's template: a thousand numbers a day; an eighth of them must be drawn before its
/// period may be full.
const VICTIM_TEMPLATE: &str = "V{yyyy}{MM}{dd}{seq:3}";
const VICTIM_CAPACITY: u64 = 999;
/// `seqgen.max_keys_per_role` in the fuzzer's cluster.
const KEY_BOUND: u32 = 600;

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Draw(s, d, shape) => write!(f, "session {s} ({}) draws {d:?} [{shape:?}]", DBS[s % 2]),
            Op::Admin(s, a, shape) => write!(f, "session {s} ({}) {a:?} [{shape:?}]", DBS[s % 2]),
            Op::Fault(x) => write!(f, "fault {x:?}"),
            Op::Heal(c) => write!(f, "heal (prepared transactions {})", if *c { "committed" } else { "rolled back" }),
            Op::Churn(n) => write!(f, "fz_att draws {n} new keys, then one victim order number"),
            Op::Revoke(t, shape) => write!(f, "fz_app draws {} between a grant and a revoke [{shape:?}]", TAGS[*t]),
            Op::RestartUnder(s, t, shape) => {
                write!(f, "session {s} draws in turn around a restart of {} [{shape:?}]", TAGS[*t])
            }
            Op::Blocks(t) => {
                write!(f, "2 sessions draw {} and {} in turn under restarts", TAGS[*t], TAGS[(t + 1) % TAGS.len()])
            }
            Op::Hold(ms) => write!(f, "seqgen.key_floor_hold = {ms}"),
        }
    }
}

/// The steps of a seed: a pure function of it.
fn generate(seed: u64, steps: usize) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    let shape = |rng: &mut StdRng| match rng.random_range(0..20) {
        0..=7 => Shape::Auto,
        8..=10 => Shape::Commit,
        11..=12 => Shape::Rollback,
        13..=14 => Shape::SavepointRollback,
        15..=16 => Shape::PrepareCommit,
        17..=18 => Shape::PrepareRollback,
        _ => Shape::PrepareLeave,
    };
    let mut ops = vec![];
    // the tag of the last seqgen_advance generated
    let mut advanced: Option<usize> = None;
    for i in 0..steps {
        let s = rng.random_range(0..SESSIONS);
        let t = rng.random_range(0..TAGS.len());
        let op = match rng.random_range(0..100) {
            0..=54 => {
                // order numbers mostly from tags a and b (so templates change under drawn
                // numbers often)
                let ot = if rng.random_bool(0.8) { t % 2 } else { t };
                let d = match rng.random_range(0..29) {
                    27..=28 => Draw::Code(
                        if rng.random_bool(0.6) { CODES_TAG } else { t },
                        [1, 40][rng.random_range(0..2)],
                        [5, 8][rng.random_range(0..2)],
                    ),
                    // mostly of the tag advanced last (a new key after an advance is the case)
                    24 if rng.random_bool(0.5) => Draw::NewKey(advanced.unwrap_or(t), i),
                    23 if i > 0 && rng.random_bool(0.3) => Draw::KeyAgain(t, i - rng.random_range(1..=i.min(40))),
                    23..=24 => Draw::Keyed(t, [1, 3, 40][rng.random_range(0..3)]),
                    0..=3 => Draw::Next(t),
                    // per-session blocks: many tags in turn, often, and two (whose blocks grow)
                    4 | 25 => Draw::InTurn(t),
                    26 => Draw::Pair(t),
                    5..=6 => Draw::Batch(t, [1, 7, 100, 2000][rng.random_range(0..4)]),
                    7..=11 => Draw::OrderNo(ot, [1, 30, 150][rng.random_range(0..3)]),
                    // mostly from c, which starts with a template per key
                    12..=13 => {
                        Draw::OrderKeyed(if rng.random_bool(0.6) { 2 } else { ot }, [1, 3, 40][rng.random_range(0..3)])
                    }
                    14..=15 => Draw::Snowflake([1, 50][rng.random_range(0..2)], Form::draw(&mut rng)),
                    16..=17 => Draw::Uuid([1, 50][rng.random_range(0..2)], Form::draw(&mut rng)),
                    18..=19 => Draw::Snowflake53([1, 50][rng.random_range(0..2)], Form::draw(&mut rng)),
                    _ => Draw::Gapless {
                        key: rng.random_range(0..3),
                        rows: [1, 3][rng.random_range(0..2)],
                        at_commit: rng.random_bool(0.6),
                    },
                };
                Op::Draw(s, d, shape(&mut rng))
            }
            55..=79 => {
                // administrative calls mostly from the superuser sessions (the ordinary role
                // has EXECUTE on the drawing functions only)
                let s = if rng.random_bool(0.9) { s % 2 } else { s };
                let a = match rng.random_range(0..30) {
                    0..=3 => Admin::Create(t, [1, 10, 100][rng.random_range(0..3)], rng.random_bool(0.3)),
                    4 => Admin::Drop(t, rng.random_bool(0.3)),
                    5 => Admin::Alter(t, [5, 50][rng.random_range(0..2)]),
                    6 => Admin::Restart(t, [1_000_000, i64::MAX][rng.random_range(0..2)], false),
                    7 => Admin::Restart(t, 9_000_000_000_000_000_000, true),
                    8 => Admin::RestartUndo(t),
                    29 => {
                        advanced = Some(t);
                        Admin::AdvanceTag(t, [10, 1_000_000][rng.random_range(0..2)])
                    }
                    9..=13 => {
                        // mostly the family of the first five (same length and date), in UTC
                        let i = if rng.random_bool(0.7) {
                            rng.random_range(0..5)
                        } else {
                            rng.random_range(0..TEMPLATES.len())
                        };
                        let z = if rng.random_bool(0.6) { 0 } else { rng.random_range(0..ZONES.len()) };
                        Admin::Template(if rng.random_bool(0.8) { t % 2 } else { t }, i, z)
                    }
                    14 => Admin::Opaque(t),
                    15 => Admin::NodeBits(t, [2, 3][rng.random_range(0..2)]),
                    16 => Admin::Advance(rng.random_range(0..3), [-1000, 500, 3_600_000][rng.random_range(0..3)]),
                    17..=18 => {
                        Admin::HandRaise(rng.random_range(0..2), [3_600_000, 500, -5000][rng.random_range(0..3)])
                    }
                    19..=20 | 26..=28 => Admin::Grant(t, rng.random_bool(0.5)),
                    21..=22 => Admin::Apply(rng.random_range(0..2), t),
                    23 if rng.random_bool(0.3) => Admin::Apply(2, t),
                    24 => match rng.random_range(0..6) {
                        0 => Admin::KeyStatus(t),
                        1 => Admin::ColumnTag(t),
                        2 => Admin::StatsReset,
                        5 => Admin::AttachNotOwned,
                        v => Admin::Status(v == 3),
                    },
                    _ => Admin::BadInput(rng.random_range(0..16)),
                };
                // a raise by an hour that commits would rightly refuse calls for an hour: only
                // shapes that end in a rollback (or a refused PREPARE) for those
                let sh = shape(&mut rng);
                let sh = match (&a, sh) {
                    (Admin::HandRaise(_, d), Shape::Auto | Shape::Commit) if *d > 1000 => Shape::SavepointRollback,
                    (Admin::HandRaise(..), Shape::Auto) => Shape::Commit,
                    (_, sh) => sh,
                };
                // seqgen_status() is checked by what the ordinary role fz_app sees, and an attach
                // of a table it does not own is fz_app's
                Op::Admin(if matches!(a, Admin::Status(_) | Admin::AttachNotOwned) { 3 } else { s }, a, sh)
            }
            80..=89 => {
                let db = rng.random_range(0..DBS.len());
                Op::Fault(match rng.random_range(0..12) {
                    0 => Fault::Restart("fast"),
                    1 => Fault::Restart("immediate"),
                    2..=3 => Fault::StopAllocator(db),
                    4 => Fault::TermAllocator(db),
                    5 => Fault::TermLauncher,
                    6..=7 => Fault::Lock(db, rng.random_range(0..TABLES.len()), rng.random_range(0..MODES.len())),
                    8 => Fault::LockPrepared(db, rng.random_range(0..TABLES.len())),
                    9 => Fault::ClockBack([800, 10_000][rng.random_range(0..2)]),
                    10 => Fault::FallBack,
                    _ => Fault::ClockForward([60_000, 86_400_000][rng.random_range(0..2)]),
                })
            }
            90..=92 => Op::Churn([20, 60][rng.random_range(0..2)]),
            93..=94 => Op::Revoke(rng.random_range(0..TAGS.len()), shape(&mut rng)),
            // the superuser sessions that take per-session blocks (16 and 1,024 values)
            95 => Op::RestartUnder(rng.random_range(0..2), rng.random_range(0..TAGS.len()), shape(&mut rng)),
            96..=97 => Op::Blocks(rng.random_range(0..TAGS.len())),
            98 => Op::Hold([0, 2000][rng.random_range(0..2)]),
            _ => Op::Heal(rng.random_bool(0.5)),
        };
        ops.push(op);
        if i + 1 == steps {
            ops.push(Op::Heal(true));
        }
    }
    ops
}

/// What must happen, as far as the fuzzer knows for certain.
#[derive(Default)]
struct Model {
    /// Per tag incarnation: is `fz_app` granted it (`None`: unknown, a prepared grant or
    /// revoke is pending). A new incarnation is not granted.
    granted: HashMap<TagKey, Option<bool>>,
    /// Per tag incarnation: the floor of the committed restarts, and the floors before each
    /// (an undo goes back one); unknown after a prepared restart or undo.
    floors: HashMap<TagKey, i64>,
    floor_undo: HashMap<TagKey, Vec<i64>>,
    floor_unknown: HashSet<TagKey>,
    /// Per tag incarnation: the highest value seen drawn (what a committed advance is above).
    drawn_max: HashMap<TagKey, i64>,
    /// The same per key (0 to 2) of a tag incarnation, and the floor a committed advance set
    /// for it: above its highest value drawn before plus the margin, or, for a key never drawn,
    /// above the margin (a key the old primary first drew while a standby lagged starts there).
    key_drawn_max: HashMap<(TagKey, usize), i64>,
    key_floors: HashMap<(TagKey, usize), i64>,
    /// Per tag incarnation: the margins of its committed advances, added up (a new key starts
    /// above them).
    key_base: HashMap<TagKey, i64>,
    /// A fault is active (from a fault step to the next heal).
    fault_active: bool,
    /// Order numbers of the victim tag drawn in its current period (reset when the clock moves
    /// or the victim is created again).
    victim_drawn: u64,
    /// Per database: the counters of `seqgen_stats()` last read (they only grow until a reset
    /// or a restart), and what `reserved - (drawn + cached + lost_eviction + lost_change +
    /// lost_period)` must
    /// stay (0 from the server's start; after a reset, learned from the next quiet readings).
    counters: [Option<Vec<i64>>; 2],
    balance: [Option<i64>; 2],
    /// A reset since the server started.
    reset_seen: [bool; 2],
}

/// One fuzzing run on its own cluster.
struct Run {
    c: Cluster,
    sessions: Vec<Option<Client>>,
    holder: Option<Client>,
    stopped: Vec<i32>,
    clock_base: i64,
    clock_back: i64,
    /// Prepared transactions left open: database, gid, the tags whose drop they hold.
    prepared: Vec<(usize, String, Vec<usize>)>,
    gid: u32,
    /// Per database and tag: the current incarnation (a committed drop starts a new one),
    /// whether it exists, whether it has a template.
    incarnation: HashMap<(usize, usize), u32>,
    exists: HashSet<(usize, usize)>,
    templated: HashSet<(usize, usize)>,
    ids: HashMap<(usize, usize, u32), HashSet<i64>>,
    /// Per session, tag incarnation (and key, `usize::MAX` for the tag's own counter): the last
    /// value the session drew. A session's values of a tag increase (blocks of values per
    /// session included), except for tags made opaque (or possibly so, by a configuration
    /// applied from the other database): those are in `unordered`.
    last_drawn: HashMap<(usize, TagKey, usize), i64>,
    unordered: HashSet<(usize, usize, u32)>,
    texts: HashMap<(usize, usize, u32), HashSet<String>>,
    /// Short codes per tag incarnation (their own ledger: a code and an order number may
    /// happen to be the same text).
    codes: HashMap<(usize, usize, u32), HashSet<String>>,
    flakes: HashSet<i64>,
    flakes53: HashSet<i64>,
    uuids: HashSet<String>,
    log_seen: usize,
    /// The model (see the module's comment).
    model: Model,
    churns: u32,
    pub log: Vec<String>,
    pub calls: usize,
    pub longest: Duration,
}

fn bound() -> Duration {
    Duration::from_millis(TIMEOUT_MS + 1000)
}

impl Run {
    fn new(name: &str, port: u16) -> Run {
        let c = Cluster::init(
            name,
            port,
            &[
                "seqgen.allocation_timeout = 1000",
                "seqgen.max_tags = 3",
                "seqgen.max_keys_per_role = 600",
                "max_prepared_transactions = 20",
                "max_connections = 60",
                "log_min_messages = warning",
                // the WAL writer held off: an immediate restart loses the rows of the last keys
                // made under a lease (their commits do not wait for the flush)
                "wal_writer_delay = '10s'",
            ],
        )
        .with_clock_shift();
        c.start();
        c.sql("CREATE ROLE fz_app LOGIN; CREATE ROLE fz_att LOGIN");
        c.sql(&format!("CREATE DATABASE {}", DBS[1]));
        // every tag exists at the start, half of them with a template (steps drop and create
        // them again)
        for db in DBS {
            let mut cl = c.connect_db(db);
            cl.batch_execute(
                "CREATE EXTENSION pg_seqgen;
                 GRANT EXECUTE ON FUNCTION seqgen_next, seqgen_next_batch(text, integer),
                   seqgen_order_no, seqgen_snowflake(), seqgen_uuidv7(),
                   seqgen_gapless_next(text, text), seqgen_next(text, text),
                   seqgen_order_no(text, text), seqgen_next_code(text, integer), seqgen_status(),
                   seqgen_currval(text), seqgen_lastval() TO fz_app;
                 SELECT seqgen_create_gapless('gl');
                 SELECT seqgen_grant('gl', 'fz_app');
                 -- numbered at commit: partitioned, with a BEFORE trigger that touches every
                 -- row written (the numbering update too) and row-level security
                 CREATE TABLE gl_t (k text NOT NULL, no bigint, touched int NOT NULL DEFAULT 0)
                   PARTITION BY LIST (k);
                 CREATE TABLE gl_t0 PARTITION OF gl_t FOR VALUES IN ('k0');
                 CREATE TABLE gl_t1 PARTITION OF gl_t FOR VALUES IN ('k1');
                 CREATE TABLE gl_tx PARTITION OF gl_t DEFAULT;
                 SELECT seqgen_gapless_attach('gl_t', 'no', 'gl', 'k');
                 CREATE FUNCTION gl_touch() RETURNS trigger LANGUAGE plpgsql
                   AS $$ BEGIN NEW.touched := NEW.touched + 1; RETURN NEW; END $$;
                 CREATE TRIGGER gl_touch BEFORE INSERT OR UPDATE ON gl_t FOR EACH ROW EXECUTE FUNCTION gl_touch();
                 ALTER TABLE gl_t ENABLE ROW LEVEL SECURITY;
                 CREATE POLICY gl_app ON gl_t TO fz_app USING (k IN ('k0', 'k1', 'k2')) WITH CHECK (k LIKE 'k_');
                 CREATE TABLE gl_d (k text NOT NULL, no bigint NOT NULL);
                 CREATE TABLE fz_attach_t (k text, no bigint);
                 GRANT EXECUTE ON FUNCTION seqgen_gapless_attach TO fz_app;
                 -- DEFAULTs that draw from every tag (never inserted into: seqgen_column_tag
                 -- reads them, and a dropped tag's error names them)
                 CREATE TABLE fz_cols (c_a bigint DEFAULT seqgen_next('a'), c_b bigint DEFAULT seqgen_next('b'),
                   c_c text DEFAULT 'C-' || seqgen_order_no('c'::varchar, 'k'), c_d bigint DEFAULT seqgen_next('d', 'k') + 1);
                 GRANT INSERT, SELECT ON gl_t, gl_t0, gl_t1, gl_tx, gl_d TO fz_app;
                 -- a draw's currval and lastval: the value as text, or what went wrong (an error
                 -- of either would otherwise pass for a refused draw); waits stay errors
                 CREATE FUNCTION fz_check(t text, v bigint) RETURNS text LANGUAGE plpgsql AS $f$
                 BEGIN
                   IF seqgen_currval(t) = v AND seqgen_lastval() = v THEN RETURN v::text; END IF;
                   RETURN format('currval %s and lastval %s after drawing %s', seqgen_currval(t), seqgen_lastval(), v);
                 EXCEPTION
                   WHEN lock_not_available OR serialization_failure THEN RAISE;
                   WHEN others THEN RETURN format('currval or lastval raised %s after drawing %s', SQLSTATE, v);
                 END $f$;
                 GRANT UPDATE (no) ON gl_t, gl_t0, gl_t1, gl_tx TO fz_app;",
            )
            .unwrap();
            cl.batch_execute(
                "GRANT EXECUTE ON FUNCTION seqgen_create(text, integer, bigint, text, boolean), seqgen_next(text, text) TO fz_att",
            )
            .unwrap();
            cl.batch_execute(
                "SELECT seqgen_create('cd', 10); SELECT seqgen_make_opaque('cd'); SELECT seqgen_grant('cd', 'fz_app');",
            )
            .unwrap();
            for (i, t) in TAGS.iter().enumerate() {
                cl.batch_execute(&format!("SELECT seqgen_create('{t}', 10)")).unwrap();
                // a and c start with templates: a's plain (a base32 counter in the second
                // database), c's per key
                if i % 2 == 0 {
                    let tpl = match (i, db) {
                        (2, _) => TEMPLATES[KEYED_TEMPLATE],
                        (_, "fz2") => TEMPLATES[BASE32_TEMPLATE],
                        _ => TEMPLATES[0],
                    };
                    cl.batch_execute(&format!("SELECT seqgen_set_template('{t}', '{tpl}')")).unwrap();
                }
            }
        }
        let exists = (0..DBS.len()).flat_map(|db| (0..TAGS.len()).map(move |t| (db, t))).collect();
        Run {
            c,
            sessions: (0..=ATTACKER).map(|_| None).collect(),
            holder: None,
            stopped: vec![],
            clock_base: 0,
            clock_back: 0,
            prepared: vec![],
            gid: 0,
            incarnation: HashMap::new(),
            last_drawn: HashMap::new(),
            unordered: HashSet::new(),
            exists,
            templated: HashSet::new(),
            ids: HashMap::new(),
            texts: HashMap::new(),
            codes: HashMap::new(),
            flakes: HashSet::new(),
            flakes53: HashSet::new(),
            uuids: HashSet::new(),
            log_seen: 0,
            model: Model {
                granted: (0..DBS.len()).map(|db| ((db, CODES_TAG, 0), Some(true))).collect(),
                balance: [Some(0), Some(0)],
                ..Model::default()
            },
            churns: 0,
            log: vec![],
            calls: 0,
            longest: Duration::ZERO,
        }
    }

    fn conninfo(&self, s: usize) -> String {
        let user = match s {
            3 => " user=fz_app",
            ATTACKER => " user=fz_att",
            _ => "",
        };
        format!("{}{user}", self.c.conninfo(DBS[s % 2]))
    }

    fn session(&mut self, s: usize) -> Result<&mut Client, String> {
        if self.sessions[s].as_ref().is_none_or(|c| c.is_closed()) {
            let ci = self.conninfo(s);
            let mut cl = Client::connect(&ci, NoTls).map_err(|e| format!("session {s} cannot connect: {e}"))?;
            // a backstop only: a call past the bound is a violation long before this
            cl.batch_execute("SET statement_timeout = '20s'").unwrap();
            // blocks of values per session (draws from many tags in turn): the default, the
            // most, none, and an odd size
            cl.batch_execute(&format!("SET seqgen.backend_block = {}", [16, 1024, 1, 3][s % 4])).unwrap();
            // and a session that remembers few tags and keys (it forgets one for each new one)
            if s == 1 || s == 3 {
                cl.batch_execute("SET seqgen.backend_cache_size = 2").unwrap();
            }
            // two sessions at the stricter isolation levels: every check that guards uniqueness
            // or privileges must decide on the latest committed state whatever the level
            let level = match s {
                2 => "repeatable read",
                3 => "serializable",
                _ => "read committed",
            };
            cl.batch_execute(&format!("SET default_transaction_isolation = '{level}'")).unwrap();
            self.sessions[s] = Some(cl);
        }
        Ok(self.sessions[s].as_mut().unwrap())
    }

    /// Run the statements of one step in `shape`: the rows of `sql` as text (or its SQLSTATE),
    /// and whether the shape then ended as planned (or the SQLSTATE of the statement that
    /// failed). Every statement is timed and its error checked against the documented
    /// SQLSTATEs; a violation is `Err`.
    #[allow(clippy::type_complexity)]
    fn run_shaped(
        &mut self,
        s: usize,
        sql: &str,
        shape: Shape,
    ) -> Result<(Result<Vec<String>, String>, Result<(), String>), String> {
        self.gid += 1;
        let gid = format!("fz_{}", self.gid);
        let (before, after): (Vec<String>, Vec<String>) = match shape {
            Shape::Auto => (vec![], vec![]),
            Shape::Commit => (vec!["BEGIN".into()], vec!["COMMIT".into()]),
            Shape::Rollback => (vec!["BEGIN".into()], vec!["ROLLBACK".into()]),
            Shape::SavepointRollback => {
                (vec!["BEGIN".into(), "SAVEPOINT s".into()], vec!["ROLLBACK TO SAVEPOINT s".into(), "COMMIT".into()])
            }
            Shape::PrepareCommit => {
                (vec!["BEGIN".into()], vec![format!("PREPARE TRANSACTION '{gid}'"), format!("COMMIT PREPARED '{gid}'")])
            }
            Shape::PrepareRollback => (
                vec!["BEGIN".into()],
                vec![format!("PREPARE TRANSACTION '{gid}'"), format!("ROLLBACK PREPARED '{gid}'")],
            ),
            Shape::PrepareLeave => (vec!["BEGIN".into()], vec![format!("PREPARE TRANSACTION '{gid}'")]),
        };
        for stmt in &before {
            if let Err(e) = self.query(s, stmt)? {
                return Err(format!("`{stmt}` failed: {e}"));
            }
        }
        let rows = self.query(s, sql)?;
        let mut ended = rows.clone().map(|_| ());
        if ended.is_ok() {
            for stmt in &after {
                if let Err(e) = self.query(s, stmt)? {
                    ended = Err(e);
                    break;
                }
            }
        }
        if ended.is_err() {
            // whatever failed, leave the session outside a transaction
            let _ = self.session(s)?.batch_execute("ROLLBACK");
        } else if shape == Shape::PrepareLeave {
            self.prepared.push((s % 2, gid, vec![]));
        }
        Ok((rows, ended))
    }

    /// One statement: its rows as text, `Ok(Err(sqlstate))` for a documented error;
    /// `Err(violation)` for a slow call, an undocumented SQLSTATE or a lost connection.
    fn query(&mut self, s: usize, sql: &str) -> Result<Result<Vec<String>, String>, String> {
        let cl = self.session(s)?;
        let t = Instant::now();
        let r = cl.simple_query(sql);
        let took = t.elapsed();
        self.calls += 1;
        self.longest = self.longest.max(took);
        if took > bound() {
            return Err(format!("`{sql}` took {took:?}, more than {:?}", bound()));
        }
        match r {
            Ok(msgs) => Ok(Ok(msgs
                .into_iter()
                .filter_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("NULL").to_string()),
                    _ => None,
                })
                .collect())),
            Err(e) => match sqlstate(&e) {
                Some(st) if DOCUMENTED.contains(&st.as_str()) => Ok(Err(st)),
                Some(st) => Err(format!("`{sql}` failed with {st}, not a documented SQLSTATE: {e}")),
                None => Err(format!("`{sql}` lost its connection: {e}")),
            },
        }
    }

    /// No fault active, nothing prepared, no lock held, the clock where it belongs.
    fn quiet(&self) -> bool {
        !self.model.fault_active && self.prepared.is_empty() && self.holder.is_none() && self.stopped.is_empty()
    }

    /// The model's judgment of one value a draw returned: the ordinary role is never served a
    /// tag it was not granted; a tag's value is at or above its committed restarts' floor.
    fn judge(&mut self, s: usize, db: usize, d: &Draw, v: &str) -> Result<(), String> {
        let (t, id) = match d {
            Draw::Next(t) | Draw::Batch(t, _) => (*t, v.parse::<i64>().ok()),
            Draw::InTurn(_) | Draw::Pair(_) => match v.split_once(':') {
                Some((t, id)) => (t.parse().map_err(|_| format!("not a tag index: {v}"))?, id.parse::<i64>().ok()),
                None => return Ok(()),
            },
            // keys count on their own: the tag's grant still applies
            Draw::Keyed(t, _)
            | Draw::NewKey(t, _)
            | Draw::KeyAgain(t, _)
            | Draw::OrderNo(t, _)
            | Draw::OrderKeyed(t, _)
            | Draw::Code(t, ..) => (*t, None),
            _ => return Ok(()),
        };
        let key = self.tag_key(db, t);
        if s == 3 && self.model.granted.get(&key).copied().unwrap_or(Some(false)) == Some(false) {
            return Err(format!(
                "fz_app was served {v} of tag {} in {}, which it was not granted",
                tag_name(t),
                DBS[db]
            ));
        }
        if let Some(id) = id {
            let m = self.model.drawn_max.entry(key).or_insert(id);
            *m = (*m).max(id);
        }
        if let (Some(id), Some(floor)) = (id, self.model.floors.get(&key)) {
            // (whether the tag was made opaque later or not: a restart is refused for opaque
            // and node-interleaved tags, and their values come above everything reserved)
            if id < *floor && !self.model.floor_unknown.contains(&key) {
                return Err(format!(
                    "session {s} drew {id} of tag {} below its floor {floor} (a committed restart or advance)",
                    TAGS[t]
                ));
            }
        }
        Ok(())
    }

    /// Record a committed (`Some(true)`) or pending (`None`) change of the model for `a`.
    fn model_admin(&mut self, db: usize, a: &Admin, committed: Option<bool>) {
        let key = |t: &usize, r: &Run| r.tag_key(db, *t);
        match (a, committed) {
            (Admin::Grant(t, g), Some(true)) => {
                let k = key(t, self);
                self.model.granted.insert(k, Some(*g));
            }
            (Admin::Grant(t, _), None) => {
                let k = key(t, self);
                self.model.granted.insert(k, None);
            }
            (Admin::Restart(t, v, _), Some(true)) => {
                let k = key(t, self);
                let before = self.model.floors.get(&k).copied().unwrap_or(i64::MIN);
                self.model.floor_undo.entry(k).or_default().push(before);
                self.model.floors.insert(k, before.max(*v));
            }
            (Admin::AdvanceTag(t, m), Some(true)) => {
                // every value reserved before is at most the old counter, every later one
                // above it plus the margin (opaque values are not in counter order)
                let k = key(t, self);
                if let (Some(drawn), false) = (self.model.drawn_max.get(&k).copied(), self.unordered.contains(&k)) {
                    let floor = drawn.saturating_add(*m).saturating_add(1);
                    let before = self.model.floors.get(&k).copied().unwrap_or(i64::MIN);
                    self.model.floors.insert(k, before.max(floor));
                }
                let base = self.model.key_base.entry(k).or_insert(0);
                *base = base.saturating_add(*m);
                for key in 0..3 {
                    let drawn = self.model.key_drawn_max.get(&(k, key)).copied().unwrap_or(0);
                    let floor = drawn.saturating_add(*m).saturating_add(1);
                    let before = self.model.key_floors.get(&(k, key)).copied().unwrap_or(i64::MIN);
                    self.model.key_floors.insert((k, key), before.max(floor));
                }
            }
            (Admin::RestartUndo(t), Some(true)) => {
                let k = key(t, self);
                match self.model.floor_undo.get_mut(&k).and_then(|u| u.pop()) {
                    Some(f) => {
                        self.model.floors.insert(k, f);
                    }
                    None => {
                        self.model.floor_unknown.insert(k);
                    }
                }
            }
            (Admin::Restart(t, ..) | Admin::RestartUndo(t) | Admin::NodeBits(t, _), _) => {
                // a pending restart, or values laid out with node bits: no floor to judge by
                let k = key(t, self);
                self.model.floor_unknown.insert(k);
            }
            _ => {}
        }
    }

    fn tag_key(&self, db: usize, t: usize) -> (usize, usize, u32) {
        (db, t, *self.incarnation.get(&(db, t)).unwrap_or(&0))
    }

    /// A draw: the number of values it returned, or its SQLSTATE. Every value returned counts,
    /// whatever the transaction did afterwards.
    fn draw(&mut self, s: usize, d: &Draw, shape: Shape) -> Result<Result<usize, String>, String> {
        let db = s % 2;
        let sql = match d {
            // with the session's currval and lastval, which must be the value just drawn
            // (fz_check says otherwise in text, which is not a bigint: a violation)
            // (every other tag with the key '', seqgen_next's DEFAULT since 1.0: the tag's own
            // counter, booked as the tag's)
            Draw::Next(t) => format!(
                "SELECT fz_check('{t}', v) FROM (SELECT seqgen_next('{t}'{key}) AS v OFFSET 0) x",
                t = TAGS[*t],
                key = if t % 2 == 1 { ", ''" } else { "" }
            ),
            Draw::InTurn(k) => format!(
                "SELECT (g % {n}) || ':' || seqgen_next((ARRAY['{}'])[1 + g % {n}]) FROM generate_series(1, {}) g",
                TAGS.join("','"),
                12 + 4 * k,
                n = TAGS.len()
            ),
            Draw::Pair(t) => {
                let u = (t + 1) % TAGS.len();
                format!(
                    "SELECT (CASE WHEN g % 2 = 0 THEN {t} ELSE {u} END) || ':' || \
                     seqgen_next(CASE WHEN g % 2 = 0 THEN '{}' ELSE '{}' END) FROM generate_series(1, 24) g",
                    TAGS[*t], TAGS[u]
                )
            }
            Draw::Batch(t, n) => format!("SELECT x FROM seqgen_next_batch('{}', {n}) x", TAGS[*t]),
            Draw::Keyed(t, n) => format!(
                "SELECT (g % 3) || ':' || seqgen_next('{}', 'k' || (g % 3)) FROM generate_series(1, {n}) g",
                TAGS[*t]
            ),
            Draw::NewKey(t, i) | Draw::KeyAgain(t, i) => format!("SELECT seqgen_next('{}', 'n{i}')", TAGS[*t]),
            Draw::OrderNo(t, k) => format!("SELECT seqgen_order_no('{}') FROM generate_series(1, {k})", TAGS[*t]),
            Draw::OrderKeyed(t, n) => {
                format!("SELECT seqgen_order_no('{}', 'k' || (g % 3)) FROM generate_series(1, {n}) g", TAGS[*t])
            }
            Draw::Snowflake(k, f) => format!("SELECT {} FROM generate_series(1, {k})", f.bigint("seqgen_snowflake()", 13)),
            Draw::Uuid(k, f) => format!("SELECT {} FROM generate_series(1, {k})", f.uuid("seqgen_uuidv7()")),
            Draw::Snowflake53(k, f) => {
                format!("SELECT {} FROM generate_series(1, {k})", f.bigint("seqgen_snowflake53()", 11))
            }
            Draw::Code(t, n, len) => {
                format!("SELECT seqgen_next_code('{}', {len}) FROM generate_series(1, {n})", tag_name(*t))
            }
            Draw::Gapless { key, rows, at_commit: true } => {
                format!("INSERT INTO gl_t (k) SELECT 'k{key}' FROM generate_series(1, {rows}) RETURNING k")
            }
            Draw::Gapless { key, rows, at_commit: false } => format!(
                "INSERT INTO gl_d SELECT 'k{key}', seqgen_gapless_next('gl', 'k{key}') FROM generate_series(1, {rows}) RETURNING no"
            ),
        };
        // a new key drawn by fz_app: whether its row existed before (a refused draw makes none)
        // (`None` when the superuser session of the database could not tell: a fault)
        let key_row = |r: &mut Run, t: usize, i: usize| -> Option<bool> {
            let sql = format!("SELECT count(*) FROM seqgen.key_counter WHERE biz_tag = '{}' AND key = 'n{i}'", TAGS[t]);
            r.query(db, &sql).ok()?.ok()?.first().map(|n| n != "0")
        };
        let existed = match d {
            Draw::NewKey(t, i) if s == 3 => key_row(self, *t, *i),
            _ => None,
        };
        let (rows, _) = self.run_shaped(s, &sql, shape)?;
        if let (Draw::NewKey(t, i), Some(false), Err(e)) = (d, existed, &rows) {
            if e == "42501" && key_row(self, *t, *i) == Some(true) {
                return Err(format!(
                    "fz_app was refused key n{i} of tag {} (42501), and the key was made: its owner's keys used up",
                    TAGS[*t]
                ));
            }
        }
        if matches!(d, Draw::Gapless { .. }) {
            // a gapless number rolled back is given again: what counts is what committed
            return Ok(rows.map(|r| r.len()));
        }
        let values = match rows {
            Ok(v) => v,
            Err(e) => {
                // the model: a superuser's draw of a tag that exists, with no fault active,
                // may wait (and time out) but is never refused
                if let (Draw::Next(t), true) = (d, s != 3 && s != ATTACKER) {
                    let refused = ["42704", "42501", "55000", "0A000"].contains(&e.as_str());
                    if refused
                        && self.quiet()
                        && self.exists.contains(&(db, *t))
                        && !self.model.floor_unknown.contains(&self.tag_key(db, *t))
                    {
                        return Err(format!(
                            "session {s} was refused tag {} with {e}: it exists and no fault is active",
                            TAGS[*t]
                        ));
                    }
                }
                return Ok(Err(e));
            }
        };
        for v in &values {
            self.judge(s, db, d, v)?;
            let fresh = match d {
                Draw::Next(t) | Draw::Batch(t, _) => {
                    let key = self.tag_key(db, *t);
                    let id = v.parse().map_err(|_| format!("not a bigint: {v}"))?;
                    self.in_order(s, key, usize::MAX, id)?;
                    self.ids.entry(key).or_default().insert(id)
                }
                Draw::InTurn(_) | Draw::Pair(_) => {
                    let parsed =
                        v.split_once(':').and_then(|(t, id)| Some((t.parse::<usize>().ok()?, id.parse::<i64>().ok()?)));
                    let (t, id) = parsed.ok_or_else(|| format!("not a tag index and a bigint: {v}"))?;
                    let key = self.tag_key(db, t);
                    self.in_order(s, key, usize::MAX, id)?;
                    self.ids.entry(key).or_default().insert(id)
                }
                Draw::Keyed(t, _) => {
                    let parsed =
                        v.split_once(':').and_then(|(k, id)| Some((k.parse::<usize>().ok()?, id.parse::<i64>().ok()?)));
                    let (k, id) = parsed.ok_or_else(|| format!("not a key index and a bigint: {v}"))?;
                    let key = self.tag_key(db, *t);
                    self.in_order(s, key, k, id)?;
                    let m = self.model.key_drawn_max.entry((key, k)).or_insert(id);
                    *m = (*m).max(id);
                    if let Some(floor) = self.model.key_floors.get(&(key, k)) {
                        if id < *floor && !self.model.floor_unknown.contains(&key) {
                            return Err(format!(
                                "session {s} drew {id} of tag {} key k{k} below its floor {floor} (a committed advance)",
                                TAGS[*t]
                            ));
                        }
                    }
                    // each key of a tag incarnation counts on its own
                    let (db, t, inc) = key;
                    self.ids.entry((db, KEYED + t * 3 + k, inc)).or_default().insert(id)
                }
                Draw::NewKey(t, i) | Draw::KeyAgain(t, i) => {
                    let id = v.parse::<i64>().map_err(|_| format!("not a bigint: {v}"))?;
                    let key = self.tag_key(db, *t);
                    let base = self.model.key_base.get(&key).copied().unwrap_or(0);
                    let (db, tk, inc) = key;
                    // a key drawn again is new as well if nothing of it was seen
                    let new = self.ids.get(&(db, NEW_KEYS + tk * NEW_KEYS + i, inc)).is_none_or(|s| s.is_empty());
                    if new && id <= base && !self.model.floor_unknown.contains(&key) {
                        return Err(format!(
                            "session {s} drew {id} of a new key of tag {}: not above the margins of its committed advances ({base})",
                            TAGS[*t]
                        ));
                    }
                    // key n<i> counts on its own, whichever draw made it
                    self.ids.entry((db, NEW_KEYS + tk * NEW_KEYS + i, inc)).or_default().insert(id)
                }
                // a key's numbers render the key: one ledger of texts per tag incarnation
                Draw::OrderNo(t, _) | Draw::OrderKeyed(t, _) => {
                    let key = self.tag_key(db, *t);
                    self.texts.entry(key).or_default().insert(v.clone())
                }
                Draw::Snowflake(_, f) => self.flakes.insert(f.bigint_of(v, 13)?),
                Draw::Uuid(_, f) => self.uuids.insert(f.uuid_of(v)?),
                Draw::Gapless { .. } => true,
                Draw::Code(t, _, len) => {
                    // as issued: upper case, none of I, L, O, U (which input may use), a valid check
                    let canonical = v.bytes().all(|b| b"0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains(&b));
                    if v.len() != *len as usize || !canonical || !seqgen_core::code::is_valid(v) {
                        return Err(format!("{v} is not a short code of {len} characters as issued"));
                    }
                    let key = self.tag_key(db, *t);
                    self.codes.entry(key).or_default().insert(v.clone())
                }
                Draw::Snowflake53(_, f) => {
                    let id = f.bigint_of(v, 11)?;
                    if id >= 1 << 53 {
                        return Err(format!("53-bit snowflake {id} is not below 2^53"));
                    }
                    self.flakes53.insert(id)
                }
            };
            if !fresh {
                return Err(format!("{v} was issued twice"));
            }
        }
        Ok(Ok(values.len()))
    }

    fn admin(&mut self, s: usize, a: &Admin, shape: Shape) -> Result<String, String> {
        let db = s % 2;
        let tag = |t: &usize| TAGS[*t];
        let sql = match a {
            Admin::Create(t, step, skip) => {
                format!("SELECT seqgen_create('{}', {step}, if_not_exists => {skip})", tag(t))
            }
            Admin::Drop(t, skip) => format!("SELECT seqgen_drop('{}', missing_ok => {skip})", tag(t)),
            Admin::Alter(t, step) => format!("SELECT seqgen_alter('{}', {step})", tag(t)),
            Admin::Restart(t, v, force) => format!("SELECT seqgen_restart('{}', {v}, {force})", tag(t)),
            Admin::RestartUndo(t) => format!("SELECT seqgen_restart_undo('{}')", tag(t)),
            Admin::AdvanceTag(t, m) => format!("SELECT seqgen_advance('{}', {m})", tag(t)),
            Admin::Template(t, i, z) => {
                format!("SELECT seqgen_set_template('{}', '{}', '{}')", tag(t), TEMPLATES[*i], ZONES[*z])
            }
            Admin::Opaque(t) => format!("SELECT seqgen_make_opaque('{}')", tag(t)),
            Admin::NodeBits(t, b) => format!("SELECT seqgen_set_node_bits('{}', {b})", tag(t)),
            Admin::Advance(0, ms) => {
                format!("SELECT seqgen_snowflake_advance(seqgen_snowflake_at(clock_timestamp() + interval '{ms} ms'))")
            }
            Admin::Advance(1, ms) => {
                format!("SELECT seqgen_uuidv7_advance(seqgen_uuidv7_at(clock_timestamp() + interval '{ms} ms'))::text")
            }
            Admin::Advance(_, ms) => format!(
                "SELECT seqgen_snowflake53_advance(seqgen_snowflake53_at(clock_timestamp() + interval '{ms} ms'))"
            ),
            Admin::HandRaise(0, ms) => format!(
                "SET LOCAL lock_timeout = 1000; UPDATE seqgen.snowflake SET reserved_id = \
                 seqgen_snowflake_at(clock_timestamp() + interval '{ms} ms')"
            ),
            Admin::HandRaise(_, ms) => format!(
                "SET LOCAL lock_timeout = 1000; UPDATE seqgen.uuidv7 SET reserved_id = \
                 (extract(epoch FROM clock_timestamp() + interval '{ms} ms') * 1000)::int8 << 21"
            ),
            Admin::Grant(t, true) => format!("SELECT seqgen_grant('{}', 'fz_app')", tag(t)),
            Admin::Grant(t, false) => format!("SELECT seqgen_revoke('{}', 'fz_app')", tag(t)),
            Admin::Apply(0, _) => "DO $$ BEGIN IF EXISTS (SELECT FROM seqgen_apply(seqgen_config())) THEN \
                 RAISE EXCEPTION 'applying the configuration of this database changed it' USING ERRCODE = 'XX001'; \
                 END IF; END $$"
                .to_string(),
            Admin::Apply(1, _) => {
                let doc = match self.query(1 - db, "SELECT seqgen_config()::text")? {
                    Ok(rows) => rows.into_iter().next().unwrap_or_default(),
                    Err(st) => return Ok(st),
                };
                format!("SELECT biz_tag || ':' || action FROM seqgen_apply($cfg${doc}$cfg$::jsonb)")
            }
            Admin::Apply(_, t) => format!(
                "SELECT biz_tag || ':' || action FROM seqgen_apply('{{\"version\": 1, \"tags\": {{\"{}\": {{\"step\": 10}}, \"gl\": {{\"gapless\": true, \"grants\": [\"fz_app\"]}}}}}}', true)",
                tag(t)
            ),
            Admin::BadInput(i) => [
                "SELECT seqgen_create('', 10)",
                "SELECT seqgen_create('x', -5)",
                "SELECT seqgen_set_template('a', '{seq:0}')",
                "SELECT seqgen_set_template('a', 'A{seq:3}', 'Mars/Olympus')",
                "SELECT seqgen_next_batch('a', 0)",
                "SELECT seqgen_snowflake_advance(-1)",
                r#"SELECT * FROM seqgen_apply('{"version": 1, "tags": {"a": {"step": 0}}}')"#,
                r#"SELECT * FROM seqgen_apply('{"version": 1, "tags": {"b": {"template": {"text": "F{seq:0}"}}}}')"#,
                "SELECT seqgen_order_no('c', E'a\\tb')",
                "SELECT seqgen_set_template('c', '{key}{node}{seq:2}')",
                // NULLs in administrative calls: 22004, not silence (issue 31, item 4)
                "SELECT seqgen_restart('a', NULL)",
                "SELECT seqgen_grant('b', NULL)",
                "SELECT seqgen_set_template('c', 'N{seq:3}', NULL)",
                "SELECT * FROM seqgen_apply(NULL)",
                "SELECT seqgen_next_code('a', 99)",
                // a version 4 UUID is no UUIDv7 floor
                "SELECT seqgen_uuidv7_advance('00000000-0000-4000-8000-000000000000')::text",
            ][*i]
                .to_string(),
            Admin::KeyStatus(t) => format!("SELECT count(*) FROM seqgen_key_status('{}')", tag(t)),
            Admin::Status(false) => "SELECT biz_tag FROM seqgen_status()".to_string(),
            Admin::Status(true) => "SELECT biz_tag FROM seqgen_tags".to_string(),
            Admin::StatsReset => "SELECT seqgen_stats_reset()".to_string(),
            Admin::AttachNotOwned => "SELECT seqgen_gapless_attach('fz_attach_t', 'no', 'gl', 'k')".to_string(),
            Admin::ColumnTag(t) => format!(
                "DO $$ BEGIN IF seqgen_column_tag('fz_cols', 'c_{0}') IS DISTINCT FROM '{0}' THEN \
                 RAISE EXCEPTION 'seqgen_column_tag(fz_cols, c_{0}) is not {0}' USING ERRCODE = 'XX001'; \
                 END IF; END $$",
                tag(t)
            ),
        };
        let committed_shape = matches!(shape, Shape::Auto | Shape::Commit | Shape::PrepareCommit | Shape::PrepareLeave);
        // opaque IDs are permuted: not in order (marked whatever the outcome, which a
        // prepared transaction may decide later)
        match a {
            Admin::Opaque(t) => {
                self.unordered.insert(self.tag_key(db, *t));
            }
            Admin::Apply(1, _) => {
                for t in 0..TAGS.len() {
                    self.unordered.insert(self.tag_key(db, t));
                }
            }
            _ => {}
        }
        let (rows, ended) = self.run_shaped(s, &sql, shape)?;
        // what a document changed, as the calls it stands for
        let applied: Vec<Admin> = match (a, &rows) {
            (Admin::Apply(..), Ok(rows)) => rows
                .iter()
                .filter_map(|r| {
                    let (name, action) = r.split_once(':')?;
                    let t = TAGS.iter().position(|n| *n == name).or((name == "cd").then_some(CODES_TAG))?;
                    Some(match action {
                        "created" => Admin::Create(t, 0, false),
                        "dropped" => Admin::Drop(t, false),
                        "granted to fz_app" => Admin::Grant(t, true),
                        "revoked from fz_app" => Admin::Grant(t, false),
                        a if a.starts_with("template ") => Admin::Template(t, 0, 0),
                        a if a.starts_with("restarted at ") => Admin::Restart(t, a[13..].parse().ok()?, false),
                        _ => return None,
                    })
                })
                .collect(),
            _ => vec![a.clone()],
        };
        if let Admin::AttachNotOwned = a {
            match &rows {
                Ok(_) => return Err("fz_app attached fz_attach_t, a table it does not own".into()),
                Err(st) if st != "42501" => {
                    return Err(format!("fz_app's attach of a table it does not own failed with {st}, not 42501"))
                }
                Err(_) => {}
            }
        }
        if let Admin::StatsReset = a {
            if s == 3 && rows.is_ok() {
                return Err("fz_app reset the counters".into());
            }
            // (whatever the transaction did: a reset is not undone)
            self.model.counters[db] = None;
            self.model.balance[db] = None;
            self.model.reset_seen[db] = true;
        }
        // fz_app sees in seqgen_status() and seqgen_tags no tag it was not granted, and (with no
        // prepared transaction pending) every tag it was
        if let (Admin::Status(_), Ok(listed), 3) = (a, &rows, s) {
            for (t, name) in TAGS.iter().enumerate() {
                let granted = self.model.granted.get(&self.tag_key(db, t)).copied().unwrap_or(Some(false));
                let shown = listed.iter().any(|l| l == name);
                if shown && granted == Some(false) {
                    return Err(format!(
                        "fz_app sees tag {name} in seqgen_status() of {}, which it was not granted",
                        DBS[db]
                    ));
                }
                if !shown && granted == Some(true) && self.exists.contains(&(db, t)) && self.prepared.is_empty() {
                    return Err(format!(
                        "fz_app does not see tag {name} in seqgen_status() of {}, which it was granted",
                        DBS[db]
                    ));
                }
            }
        }
        let r = rows.and(ended);
        // bad input is refused (with a documented code, checked by the caller), never accepted
        if let (Admin::BadInput(_), Ok(_)) = (a, &r) {
            return Err(format!("bad input was accepted: {sql}"));
        }
        // node bits change how values are laid out, whatever the outcome
        if let Admin::NodeBits(..) = a {
            self.model_admin(db, a, None);
        }
        for a in applied.iter().filter(|_| r.is_ok() && committed_shape) {
            self.model_admin(db, a, if shape == Shape::PrepareLeave { None } else { Some(true) });
            match a {
                Admin::Drop(t, _) if shape == Shape::PrepareLeave => {
                    if let Some(p) = self.prepared.last_mut() {
                        p.2.push(*t);
                    }
                }
                // (a drop with missing_ok of a tag that did not exist starts a new ledger too)
                Admin::Drop(t, _) => self.dropped(db, *t),
                Admin::Create(t, ..) if shape != Shape::PrepareLeave => {
                    self.exists.insert((db, *t));
                }
                Admin::Template(t, ..) if shape != Shape::PrepareLeave => {
                    self.templated.insert((db, *t));
                }
                _ => {}
            }
        }
        Ok(match r {
            Ok(_) => "ok".into(),
            Err(e) => e,
        })
    }

    /// Is `id` above the value session `s` drew last of tag incarnation `key` (and `k`)?
    fn in_order(&mut self, s: usize, key: TagKey, k: usize, id: i64) -> Result<(), String> {
        if self.unordered.contains(&key) {
            return Ok(());
        }
        match self.last_drawn.insert((s, key, k), id) {
            Some(before) if before >= id => Err(format!("session {s} drew {id} of tag {} after {before}", TAGS[key.1])),
            _ => Ok(()),
        }
    }

    fn dropped(&mut self, db: usize, t: usize) {
        *self.incarnation.entry((db, t)).or_default() += 1;
        self.exists.remove(&(db, t));
        self.templated.remove(&(db, t));
    }

    fn allocator_pid(&mut self, db: usize) -> Option<i32> {
        let mut c = Client::connect(&self.c.conninfo("postgres"), NoTls).ok()?;
        c.query_opt(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_seqgen allocator' AND datname = $1",
            &[&DBS[db]],
        )
        .ok()
        .flatten()
        .map(|r| r.get(0))
    }

    /// Is process `pid` (stopped) waiting inside PostgreSQL's internals (an LWLock or I/O)?
    fn in_postgres_internals(&self, pid: i32) -> bool {
        let Ok(mut c) = Client::connect(&self.c.conninfo("postgres"), NoTls) else { return true };
        c.query_opt("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", &[&pid])
            .ok()
            .flatten()
            .and_then(|r| r.get::<_, Option<String>>(0))
            .is_some_and(|w| w == "LWLock" || w == "IO")
    }

    fn set_clock(&self) {
        self.c.set_clock_offset_ms(self.clock_base - self.clock_back);
    }

    fn fault(&mut self, f: &Fault) -> Result<String, String> {
        self.model.fault_active = true;
        if matches!(f, Fault::ClockBack(_) | Fault::ClockForward(_) | Fault::FallBack) {
            // the victim's period may have changed
            self.model.victim_drawn = 0;
        }
        match f {
            Fault::Restart(mode) => {
                for pid in self.stopped.drain(..) {
                    signal(pid, "CONT");
                }
                self.holder = None;
                self.c.stop(mode);
                self.c.start();
                self.sessions.iter_mut().for_each(|s| *s = None);
                // the counters start again with shared memory
                self.model.counters = [None, None];
                self.model.balance = [Some(0), Some(0)];
                self.model.reset_seen = [false, false];
            }
            Fault::StopAllocator(db) => {
                if let Some(pid) = self.allocator_pid(*db) {
                    // not inside PostgreSQL's own locks or I/O: stopped in a WAL flush it would
                    // hold WALWriteLock, and every session that commits would wait for it in an
                    // LWLock wait no timeout ends (the harness hung so once, on 16)
                    for _ in 0..100 {
                        signal(pid, "STOP");
                        if !self.in_postgres_internals(pid) {
                            self.stopped.push(pid);
                            break;
                        }
                        signal(pid, "CONT");
                        std::thread::sleep(Duration::from_millis(3));
                    }
                }
            }
            Fault::TermAllocator(db) => {
                if let Some(pid) = self.allocator_pid(*db) {
                    if !self.stopped.contains(&pid) {
                        signal(pid, "TERM");
                    }
                }
            }
            Fault::TermLauncher => {
                let mut c = Client::connect(&self.c.conninfo("postgres"), NoTls).map_err(|e| e.to_string())?;
                if let Some(r) = c
                    .query_opt("SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_seqgen launcher'", &[])
                    .unwrap()
                {
                    signal(r.get(0), "TERM");
                }
            }
            Fault::Lock(db, t, m) => {
                self.holder = None;
                let mut h = Client::connect(&self.c.conninfo(DBS[*db]), NoTls).map_err(|e| e.to_string())?;
                match h.batch_execute(&format!(
                    "BEGIN; SET LOCAL lock_timeout = 1000; LOCK TABLE {} IN {} MODE",
                    TABLES[*t], MODES[*m]
                )) {
                    Ok(()) => self.holder = Some(h),
                    // a transaction prepared by an earlier step holds the table: no lock to add
                    Err(e) if sqlstate(&e).as_deref() == Some("55P03") => {}
                    Err(e) => return Err(format!("LOCK TABLE: {e}")),
                }
            }
            Fault::LockPrepared(db, t) => {
                self.gid += 1;
                let gid = format!("fz_lock_{}", self.gid);
                let mut h = Client::connect(&self.c.conninfo(DBS[*db]), NoTls).map_err(|e| e.to_string())?;
                if h.batch_execute(&format!(
                    "BEGIN; SET LOCAL lock_timeout = 1000; LOCK TABLE {} IN ACCESS EXCLUSIVE MODE; PREPARE TRANSACTION '{gid}'",
                    TABLES[*t]
                ))
                .is_ok()
                {
                    self.prepared.push((*db, gid, vec![]));
                }
            }
            Fault::ClockBack(ms) => {
                self.clock_back = *ms;
                self.set_clock();
            }
            Fault::ClockForward(ms) => {
                self.clock_base += ms;
                self.set_clock();
            }
            Fault::FallBack => {
                const NEW_YORK_FALL_BACK_MS: i64 = 1_825_567_200_000; // 2027-11-07 06:00:00 UTC
                let now =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
                let base = NEW_YORK_FALL_BACK_MS - 2000 - now;
                if base > self.clock_base {
                    self.clock_base = base;
                    self.set_clock();
                }
            }
        }
        Ok("done".into())
    }

    /// Every fault ends; then every tag, snowflakes and UUIDv7s must serve within 2 s.
    fn heal(&mut self, commit: bool) -> Result<String, String> {
        for pid in self.stopped.drain(..) {
            signal(pid, "CONT");
        }
        self.holder = None;
        self.clock_back = 0;
        self.set_clock();
        for (db, gid, drops) in std::mem::take(&mut self.prepared) {
            let mut c = Client::connect(&self.c.conninfo(DBS[db]), NoTls).map_err(|e| e.to_string())?;
            let verb = if commit { "COMMIT" } else { "ROLLBACK" };
            if c.batch_execute(&format!("{verb} PREPARED '{gid}'")).is_ok() && commit {
                for t in drops {
                    self.dropped(db, t);
                }
            }
        }
        // the tags the catalog really has (a prepared create committed just now counts too)
        let mut checks = vec![];
        for (db, name) in DBS.iter().enumerate() {
            let mut c = Client::connect(&self.c.conninfo(name), NoTls).map_err(|e| e.to_string())?;
            let tags = c
                .query(
                    "SELECT biz_tag, EXISTS (SELECT FROM seqgen.template t WHERE t.biz_tag = a.biz_tag), \
                     opaque_from IS NULL, EXISTS (SELECT FROM seqgen.template t WHERE t.biz_tag = a.biz_tag \
                     AND strpos(t.template, '{key}') > 0) FROM seqgen.alloc a",
                    &[],
                )
                .map_err(|e| e.to_string())?;
            for r in tags {
                let (name, tpl): (String, bool) = (r.get(0), r.get(1));
                if let Some(t) = TAGS.iter().position(|x| *x == name) {
                    self.exists.insert((db, t));
                    checks.push((db, Draw::Next(t)));
                    if r.get::<_, bool>(2) {
                        // keyed counters of an opaque tag are refused (0A000)
                        checks.push((db, Draw::Keyed(t, 3)));
                    }
                    if tpl {
                        self.templated.insert((db, t));
                        let keyed: bool = r.get(3);
                        checks.push((db, if keyed { Draw::OrderKeyed(t, 3) } else { Draw::OrderNo(t, 1) }));
                    }
                }
            }
            checks.push((db, Draw::Snowflake(1, Form::Value)));
            checks.push((db, Draw::Uuid(1, Form::Value)));
            checks.push((db, Draw::Snowflake53(1, Form::Value)));
            checks.push((db, Draw::Gapless { key: 0, rows: 1, at_commit: true }));
            checks.push((db, Draw::Gapless { key: 1, rows: 1, at_commit: false }));
        }
        let started = Instant::now();
        let mut slowest = Duration::ZERO;
        // session `db` is a superuser session in database `db`
        for (db, d) in checks {
            let t = Instant::now();
            loop {
                match self.draw(db, &d, Shape::Auto)? {
                    Ok(_) => break,
                    // a full period, an exhausted tag: not an outage
                    Err(st) if st == "2200H" => break,
                    Err(_) if t.elapsed() < Duration::from_secs(2) => std::thread::sleep(Duration::from_millis(50)),
                    Err(st) => {
                        return Err(format!("after the heal, {d:?} in {} still fails with {st} after 2 s", DBS[db]))
                    }
                }
            }
            slowest = slowest.max(t.elapsed());
        }
        self.model.fault_active = false;
        Ok(format!("service back: slowest check {} ms, all {} ms", slowest.as_millis(), started.elapsed().as_millis()))
    }

    /// The second tenant churns keys of its own tag; then the victim draws one order number,
    /// which must not be refused as a full period before an eighth of its capacity was drawn.
    fn churn(&mut self, n: u32) -> Result<String, String> {
        // the victim (a superuser's tag, step 1000) and the tenant's tag, made again when a
        // document with drop_missing dropped them
        let victim = 2;
        // (seqgen_create waits no longer than the allocation timeout: 42710 when it exists)
        if self.query(victim, "SELECT seqgen_create('v', 1000)")?.is_ok() {
            // a tag made again numbers again from the start
            self.model.victim_drawn = 0;
            self.texts.remove(&(0, usize::MAX, 0));
        }
        // (22023 once it has the template)
        let _ = self.query(victim, &format!("SELECT seqgen_set_template('v', '{VICTIM_TEMPLATE}')"))?;
        let _ = self.query(ATTACKER, "SELECT seqgen_create('z', 10)")?;
        // three rounds of churn, each followed by one victim number
        let mut out = vec![];
        for _ in 0..3 {
            self.churns += 1;
            let keys = match self.query(0, "SELECT count(*) FROM seqgen.key_counter WHERE biz_tag = 'z'")? {
                Ok(rows) => rows.first().and_then(|v| v.parse::<u32>().ok()),
                Err(_) => None,
            };
            let churned = self.query(
                ATTACKER,
                &format!("SELECT count(seqgen_next('z', 'c{}-' || g)) FROM generate_series(1, {n}) g", self.churns),
            )?;
            // the bound: n new keys past it cannot all be made
            if let (Ok(_), Some(k)) = (&churned, keys) {
                if k + n > KEY_BOUND {
                    return Err(format!(
                        "fz_att had {k} keys and made {n} more: seqgen.max_keys_per_role ({KEY_BOUND}) was not enforced"
                    ));
                }
            }
            let got = self.query(victim, "SELECT seqgen_order_no('v')")?;
            match &got {
                Ok(rows) => {
                    for v in rows {
                        if !self.texts.entry((0, usize::MAX, 0)).or_default().insert(v.clone()) {
                            return Err(format!("victim order number {v} was issued twice"));
                        }
                    }
                    self.model.victim_drawn += 1;
                }
                Err(st) if st == "2200H" && self.model.victim_drawn < VICTIM_CAPACITY / 8 => {
                    return Err(format!(
                        "the victim's period is full after {} of its {VICTIM_CAPACITY} numbers were drawn: \
                         another role's churn drained it",
                        self.model.victim_drawn
                    ));
                }
                Err(_) => {}
            }
            out.push(format!("churn {churned:?}, victim {got:?}"));
        }
        Ok(out.join("; "))
    }

    fn revoke(&mut self, t: usize, shape: Shape) -> Result<String, String> {
        // session 1 is a superuser in the database of session 3, fz_app
        let granted = self.admin(1, &Admin::Grant(t, true), Shape::Auto)?;
        let first = self.draw(3, &Draw::Next(t), Shape::Auto)?;
        let revoked = self.admin(1, &Admin::Grant(t, false), shape)?;
        let second = self.draw(3, &Draw::Next(t), Shape::Auto)?;
        // and a new session's first draw, answered from the grants its slot keeps
        self.sessions[3] = None;
        let third = self.draw(3, &Draw::Next(t), Shape::Auto)?;
        let model = self.model.granted.get(&self.tag_key(1, t)).copied();
        Ok(format!(
            "grant {granted}, draw {first:?}, revoke {revoked} [{shape:?}], draw {second:?}, \
             in a new session {third:?} (model: granted {model:?})"
        ))
    }

    fn restart_under(&mut self, s: usize, t: usize, shape: Shape) -> Result<String, String> {
        // tag t and another in turn, three times: 12 draws of each per statement, blocks of 1,
        // 2, 4, 8, 16 values (the tag's segments grow meanwhile), part of the last one left
        let mut first = Ok(0);
        for _ in 0..3 {
            let n = self.draw(s, &Draw::Pair(t), Shape::Auto)?;
            first = first.and_then(|f| n.map(|n| f + n));
        }
        // above everything reserved (and every block a session holds); read through
        // seqgen_status(), whose wait for a locked catalog is bounded (a plain SELECT waited on
        // the lock of a prepared transaction, a fault, for as long as it lasted: seed 7)
        let db = s % 2;
        let floor = match self
            .query(db, &format!("SELECT max_id + 1000 FROM seqgen_status() WHERE biz_tag = '{}'", TAGS[t]))?
        {
            Ok(rows) => match rows.first().and_then(|v| v.parse::<i64>().ok()) {
                Some(f) => f,
                None => return Ok(format!("draw {first:?}, no tag {}", TAGS[t])),
            },
            Err(st) => return Ok(format!("draw {first:?}, catalog {st}")),
        };
        // by another backend where there is one (session 2, a superuser of the same database,
        // takes no blocks): a backend's own restart is not what retires another's blocks
        let by = if s == 0 { 2 } else { db };
        let restarted = self.admin(by, &Admin::Restart(t, floor, false), shape)?;
        let second = self.draw(s, &Draw::Pair(t), Shape::Auto)?;
        Ok(format!("draw {first:?}, restart to {floor} {restarted}, draw {second:?}"))
    }

    fn hold(&mut self, ms: i32) -> Result<String, String> {
        let mut c = Client::connect(&self.c.conninfo("postgres"), NoTls).map_err(|e| e.to_string())?;
        c.batch_execute(&format!("ALTER SYSTEM SET seqgen.key_floor_hold = {ms}")).map_err(|e| e.to_string())?;
        c.batch_execute("SELECT pg_reload_conf()").map_err(|e| e.to_string())?;
        Ok("done".into())
    }

    fn blocks(&mut self, t: usize) -> Result<String, String> {
        let u = (t + 1) % TAGS.len();
        let sql = format!(
            "SELECT (CASE WHEN g % 2 = 0 THEN {t} ELSE {u} END) || ':' || \
             seqgen_next(CASE WHEN g % 2 = 0 THEN '{}' ELSE '{}' END) FROM generate_series(1, 24) g",
            TAGS[t], TAGS[u]
        );
        let ci = self.conninfo(0);
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        let drawers: Vec<_> = (0..2)
            .map(|_| {
                let (ci, sql, stop) = (ci.clone(), sql.clone(), stop.clone());
                std::thread::spawn(move || -> Result<Vec<(usize, i64, Duration)>, String> {
                    let mut cl = Client::connect(&ci, NoTls).map_err(|e| format!("a drawer cannot connect: {e}"))?;
                    cl.batch_execute("SET statement_timeout = '20s'; SET seqgen.backend_block = 16").unwrap();
                    let mut got = vec![];
                    while !stop.load(Ordering::Relaxed) {
                        let started = t0.elapsed();
                        let Ok(msgs) = cl.simple_query(&sql) else {
                            // refused (a tag dropped meanwhile, a lock): the next statement
                            std::thread::sleep(Duration::from_millis(20));
                            continue;
                        };
                        for m in msgs {
                            if let postgres::SimpleQueryMessage::Row(r) = m {
                                let v = r.get(0).unwrap_or("");
                                let (i, id) = v
                                    .split_once(':')
                                    .and_then(|(i, id)| Some((i.parse().ok()?, id.parse().ok()?)))
                                    .ok_or_else(|| format!("not a tag index and a bigint: {v}"))?;
                                got.push((i, id, started));
                            }
                        }
                    }
                    Ok(got)
                })
            })
            .collect();
        // restarts from session 2 (a superuser of postgres), above everything reserved
        let mut restarts: Vec<(usize, i64, Duration)> = vec![];
        let mut outcome: Result<(), String> = Ok(());
        for i in 0..20 {
            let r = if i % 2 == 0 { t } else { u };
            // (through seqgen_status(): its wait for a locked catalog is bounded)
            let top =
                self.query(2, &format!("SELECT max_id + 1000 FROM seqgen_status() WHERE biz_tag = '{}'", TAGS[r]));
            let floor = match top {
                Ok(Ok(rows)) => rows.first().and_then(|v| v.parse::<i64>().ok()),
                Ok(Err(_)) => None,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            };
            if let Some(floor) = floor {
                match self.admin(2, &Admin::Restart(r, floor, false), Shape::Auto) {
                    Ok(done) if done == "ok" => restarts.push((r, floor, t0.elapsed())),
                    Ok(_) => {}
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
        let mut sessions = vec![];
        for d in drawers {
            sessions.push(d.join().map_err(|_| "a drawer panicked".to_string())??);
        }
        outcome?;
        let (mut values, mut blocks_seen) = (0, 0);
        for got in &sessions {
            let mut last: HashMap<usize, i64> = HashMap::new();
            for (i, id, started) in got {
                values += 1;
                let key = self.tag_key(0, *i);
                if !self.ids.entry(key).or_default().insert(*id) {
                    return Err(format!("{id} of tag {} was issued twice", TAGS[*i]));
                }
                let floor = restarts.iter().filter(|(r, _, done)| r == i && done < started).map(|(_, f, _)| *f).max();
                if let Some(f) = floor.filter(|f| id < f) {
                    return Err(format!(
                        "a session drew {id} of tag {} in a statement that started after its restart to {f} committed",
                        TAGS[*i]
                    ));
                }
                if !self.unordered.contains(&key) {
                    if let Some(before) = last.insert(*i, *id) {
                        if before >= *id {
                            return Err(format!("a session drew {id} of tag {} after {before}", TAGS[*i]));
                        }
                        if *id > before + 1 {
                            blocks_seen += 1;
                        }
                    }
                }
            }
        }
        Ok(format!("{values} values, {} restarts, {blocks_seen} jumps", restarts.len()))
    }

    /// A crash or a panic in the server log since the last look.
    fn check_log(&mut self) -> Result<(), String> {
        let log = self.c.log();
        let new = &log[self.log_seen.min(log.len())..];
        self.log_seen = log.len();
        for bad in ["terminated by signal", "PANIC", "panicked at", "internal error"] {
            if let Some(line) = new.lines().find(|l| l.contains(bad)) {
                return Err(format!("server log: {line}"));
            }
        }
        Ok(())
    }

    /// The committed gapless numbers of every key in every database are exactly 1..N (checked
    /// when the server answers; a restart in progress is not a violation).
    fn check_gapless(&mut self) -> Result<(), String> {
        for name in DBS {
            let Ok(mut c) = Client::connect(&self.c.conninfo(name), NoTls) else { return Ok(()) };
            let Ok(rows) = c.query(
                "SELECT k, n, lo, hi, d, unnumbered FROM ( \
                   SELECT k, count(*) n, min(no) lo, max(no) hi, count(DISTINCT no) d, \
                          count(*) FILTER (WHERE no IS NULL) unnumbered \
                   FROM (SELECT k, no FROM gl_t UNION ALL SELECT k, no FROM gl_d) u GROUP BY k) s \
                 WHERE unnumbered > 0 OR lo <> 1 OR hi <> n OR d <> n",
                &[],
            ) else {
                return Ok(());
            };
            if let Some(r) = rows.first() {
                let (k, n, lo, hi, d, u): (String, i64, Option<i64>, Option<i64>, i64, i64) =
                    (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5));
                return Err(format!(
                    "gapless key {k} in {name}: {n} committed rows numbered {lo:?}..{hi:?}, {d} distinct, {u} unnumbered"
                ));
            }
        }
        Ok(())
    }

    /// The counters of `seqgen_stats()` in each database (read when the server answers): none
    /// goes down until a reset or a restart, `lost_session` is part of `drawn`, and, with no
    /// fault active, every value reserved is drawn, cached or lost by a slot (the balance keeps
    /// its value; a reading taken while a publication is in flight is taken again).
    fn check_counters(&mut self) -> Result<(), String> {
        const COLS: &str = "drawn, segments, reserved, lost_eviction, lost_change, lost_session, evictions, \
                            waits, wait_timeouts, gapless_draws, gapless_timeouts, lost_period, cached";
        let diff = |v: &[i64]| v[2] - (v[0] + v[12] + v[3] + v[4] + v[11]);
        for (db, name) in DBS.iter().enumerate() {
            let Ok(mut c) = Client::connect(&self.c.conninfo(name), NoTls) else { return Ok(()) };
            let mut read = || -> Option<Vec<i64>> {
                let r = c.query_one(&format!("SELECT {COLS} FROM seqgen_stats()"), &[]).ok()?;
                Some((0..13).map(|i| r.get(i)).collect())
            };
            let Some(mut v) = read() else { return Ok(()) };
            if let Some(last) = &self.model.counters[db] {
                if let Some(i) = (0..12).find(|&i| v[i] < last[i]) {
                    return Err(format!(
                        "seqgen_stats() of {name}: {} went down from {} to {} without a reset",
                        COLS.split(", ").nth(i).unwrap().trim(),
                        last[i],
                        v[i]
                    ));
                }
            }
            // (since the server started: a block drawn before a reset may be lost after it)
            if v[5] > v[0] && !self.model.reset_seen[db] {
                return Err(format!("seqgen_stats() of {name}: lost_session {} above drawn {}", v[5], v[0]));
            }
            self.model.counters[db] = Some(v.clone());
            if self.model.fault_active {
                continue;
            }
            for tries in 0.. {
                std::thread::sleep(Duration::from_millis(if tries == 0 { 0 } else { 100 }));
                let Some(w) = read() else { return Ok(()) };
                match self.model.balance[db] {
                    Some(b) if diff(&w) == b => break,
                    // learned: two readings in a row agree
                    None if tries > 0 && diff(&w) == diff(&v) => {
                        self.model.balance[db] = Some(diff(&w));
                        break;
                    }
                    Some(b) if tries >= 20 => {
                        return Err(format!(
                            "seqgen_stats() of {name}: reserved - (drawn + cached + lost_eviction + lost_change + lost_period) \
                             is {}, not {b}: a value reserved is neither drawn, cached nor lost ({COLS}: {w:?})",
                            diff(&w)
                        ));
                    }
                    None if tries >= 20 => break,
                    _ => v = w,
                }
            }
        }
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<String, String> {
        let r = match op {
            Op::Draw(s, d, shape) => self.draw(*s, d, *shape).map(|r| match r {
                Ok(n) => format!("{n} values"),
                Err(st) => st,
            }),
            Op::Admin(s, a, shape) => self.admin(*s, a, *shape),
            Op::Fault(f) => self.fault(f),
            Op::Heal(c) => self.heal(*c),
            Op::Churn(n) => self.churn(*n),
            Op::Revoke(t, shape) => self.revoke(*t, *shape),
            Op::RestartUnder(s, t, shape) => self.restart_under(*s, *t, *shape),
            Op::Blocks(t) => self.blocks(*t),
            Op::Hold(ms) => self.hold(*ms),
        }?;
        self.check_log()?;
        self.check_gapless()?;
        self.check_counters()?;
        Ok(r)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        for pid in self.stopped.drain(..) {
            signal(pid, "CONT");
        }
    }
}

/// Run `ops`; the first violation, if any, with the step it happened at.
fn run_ops(ops: &[Op], name: &str, port: u16, verbose: bool) -> (Option<(usize, String)>, Run) {
    let mut run = Run::new(name, port);
    for (i, op) in ops.iter().enumerate() {
        match run.step(op) {
            Ok(result) => run.log.push(format!("{i:4}: {op} -> {result}")),
            Err(v) => {
                run.log.push(format!("{i:4}: {op} -> VIOLATION: {v}"));
                if verbose {
                    println!("{}", run.log.join("\n"));
                }
                return (Some((i, v)), run);
            }
        }
    }
    (None, run)
}

/// Shrink a failing sequence: drop runs of steps while the replay still fails (on a fresh
/// cluster each time), within a budget of replays.
fn shrink(mut ops: Vec<Op>, name: &str, port: u16) -> Vec<Op> {
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut chunk = ops.len().div_ceil(2);
    while chunk >= 1 && Instant::now() < deadline {
        let mut i = 0;
        let mut reduced = false;
        while i < ops.len() && Instant::now() < deadline {
            let mut candidate = ops.clone();
            candidate.drain(i..(i + chunk).min(ops.len()));
            if let (Some((at, _)), _) = run_ops(&candidate, name, port, false) {
                candidate.truncate(at + 1);
                ops = candidate;
                reduced = true;
            } else {
                i += chunk;
            }
        }
        if !reduced {
            chunk /= 2;
        }
    }
    ops
}

fn seeds() -> Vec<u64> {
    std::env::var("SEQGEN_FUZZ_SEEDS")
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|_| vec![1, 2, 3])
}

fn steps() -> usize {
    std::env::var("SEQGEN_FUZZ_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(250)
}

fn fuzz_seed(seed: u64, steps: usize, port: u16) {
    let ops = generate(seed, steps);
    let name = format!("fuzz_{seed}");
    let started = Instant::now();
    let (violation, run) = run_ops(&ops, &name, port, true);
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    let total_ids: usize = run.ids.values().map(HashSet::len).sum();
    let total_texts: usize = run.texts.values().map(HashSet::len).sum();
    // a capital after the template's first letter is a base32 counter's (dates, keys and the
    // other literals have none; its first nine values are digits and not counted)
    let base32_texts =
        run.texts.values().flatten().filter(|t| t.bytes().skip(1).any(|b| b.is_ascii_uppercase())).count();
    // how the steps ended, to see what the seed exercised
    let mut ends: std::collections::BTreeMap<String, usize> = Default::default();
    for line in &run.log {
        let (kind, end) = line.split_once(" -> ").unwrap_or((line, ""));
        let kind = if let Some((_, d)) = kind.split_once(" draws ") {
            // "session 0 (postgres) draws InTurn(2) [Commit]" -> "draw InTurn"
            &format!("draw {}", d.split(['(', ' ']).next().unwrap_or(""))
        } else if kind.contains("fault") {
            "fault"
        } else if kind.contains("heal") {
            "heal"
        } else if let Some(at) = kind.find("seqgen.key_floor_hold") {
            &kind[at..]
        } else {
            // the call: "session 0 (postgres) Apply(1, 2) [Commit]" -> "admin Apply"
            &format!("admin {}", kind.split(") ").nth(1).and_then(|r| r.split(['(', ' ']).next()).unwrap_or(""))
        };
        let end = if end.ends_with(" values") || end == "ok" || end == "done" || end.starts_with("service back") {
            "ok"
        } else {
            end
        };
        *ends.entry(format!("{kind} {end}")).or_default() += 1;
    }
    println!("fuzz seed {seed}: steps by outcome {ends:?}");
    println!(
        "fuzz seed {seed}: {} steps in {:.1} min ({:.0} steps per minute), {} calls, longest {} ms; \
         {total_ids} segment values, {total_texts} order numbers ({base32_texts} with a base32 counter), {} snowflakes, {} UUIDv7s, 0 issued twice so far",
        run.log.len(),
        minutes,
        run.log.len() as f64 / minutes,
        run.calls,
        run.longest.as_millis(),
        run.flakes.len(),
        run.uuids.len()
    );
    drop(run);
    if let Some((at, v)) = violation {
        let failing = ops[..=at].to_vec();
        println!("fuzz seed {seed}: violation at step {at}: {v}\nshrinking ...");
        let small = shrink(failing, &format!("{name}_shrink"), port);
        let (again, run) = run_ops(&small, &format!("{name}_min"), port, false);
        println!("fuzz seed {seed}: shrunk to {} steps:\n{}", small.len(), run.log.join("\n"));
        panic!("fuzz seed {seed}: {}", again.map(|(_, v)| v).unwrap_or(v));
    }
}

/// The seeds in two lanes side by side, each lane on a cluster of its own (ports 57201 and
/// 57203) taking the next seed when it is done with one, in the order given: three seeds take
/// about the time of the longest, or of the other two, not of all three. A violation in either
/// lane fails the test (after both end), with the seed, its steps and the shrunk sequence
/// printed.
#[test]
fn operation_fuzzer_fixed_seeds() {
    // each seed once (a seed's cluster is named after it)
    let mut seen = HashSet::new();
    let seeds: Vec<u64> = seeds().into_iter().filter(|s| seen.insert(*s)).collect();
    let queue = Arc::new(std::sync::Mutex::new(seeds.into_iter()));
    let handles: Vec<_> = [57201u16, 57203]
        .into_iter()
        .map(|port| {
            let queue = queue.clone();
            std::thread::spawn(move || loop {
                let Some(seed) = queue.lock().unwrap().next() else { break };
                fuzz_seed(seed, steps(), port);
            })
        })
        .collect();
    let failed = handles.into_iter().map(|h| h.join()).filter(Result::is_err).count();
    assert_eq!(failed, 0, "a fuzz seed found a violation (above)");
}

/// Opt-in soak: `SEQGEN_FUZZ_SOAK_SECS=3600 cargo test -p seqgen-integration --test fuzz soak
/// -- --ignored --nocapture` draws random seeds for that long.
#[test]
#[ignore]
fn operation_fuzzer_soak() {
    let secs: u64 = std::env::var("SEQGEN_FUZZ_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    let until = Instant::now() + Duration::from_secs(secs);
    let mut rng = StdRng::from_os_rng();
    while Instant::now() < until {
        let seed: u64 = rng.random();
        println!("soak: seed {seed}");
        fuzz_seed(seed, 400, 57202);
    }
}

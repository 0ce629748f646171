//! pg_seqgen 1.0's surface (issue 31), the parts that have landed.

use seqgen_integration::*;

/// Item 1: without `shared_preload_libraries`, `CREATE EXTENSION pg_seqgen` (and any call)
/// ended the connection with `FATAL: cannot create PGC_POSTMASTER variables after startup`.
/// Now every call that needs the preload is an ERROR 55000 whose hint names the setting, and
/// the session goes on.
#[test]
fn without_the_preload_calls_are_refused_and_the_session_lives() {
    let c = Cluster::init("s_nopreload", 57920, &["shared_preload_libraries = ''"]);
    c.start();
    let mut s = c.connect();
    let created = s.batch_execute("CREATE EXTENSION pg_seqgen");
    println!("CREATE EXTENSION without the preload: {created:?}");
    assert!(!s.is_closed(), "the session ended: {created:?}");
    if let Err(e) = &created {
        assert_eq!(sqlstate(e).as_deref(), Some("55000"), "{e:?}");
    }
    let mut refused = 0;
    for sql in [
        "SELECT seqgen_next('x')",
        "SELECT seqgen_snowflake()",
        "SELECT seqgen_uuidv7()",
        "SELECT seqgen_order_no('x')",
    ] {
        let Err(e) = s.batch_execute(sql) else {
            panic!("{sql} answered without the preload");
        };
        // before the extension exists the function is unknown (42883); after, pg_seqgen's 55000
        let state = sqlstate(&e).unwrap_or_default();
        if created.is_ok() {
            assert_eq!(state, "55000", "{sql}: {e:?}");
            let hint = e.as_db_error().and_then(|d| d.hint()).unwrap_or_default().to_string();
            assert!(hint.contains("shared_preload_libraries"), "{sql}: hint {hint:?}");
            refused += 1;
        } else {
            assert_eq!(state, "42883", "{sql}: {e:?}");
        }
        assert!(!s.is_closed(), "{sql} ended the session");
    }
    s.batch_execute("SELECT 1").unwrap();
    println!("without the preload: {refused} calls refused with 55000, the session alive");
}

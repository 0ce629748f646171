//! `#[pg_test]`s of privileges: what a role with only `EXECUTE` may not do, grants per tag and per
//! generator, owners, what `seqgen_status()` shows each role.

#[pgrx::pg_schema]
mod tests {
    use crate::tests::support::*;

    #[pg_test]
    fn execute_only_role_cannot_touch_the_catalog() {
        autonomous("SELECT seqgen_create('t_priv', 10)");
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_app_test NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_next, seqgen_next_batch(text, integer) TO seqgen_app_test",
        );
        Spi::run("SET LOCAL ROLE seqgen_app_test").unwrap();
        // EXECUTE alone does not open the tag; an unknown tag is unknown whoever asks
        assert_eq!(sqlstate("SELECT seqgen_next('t_priv')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_next('t_priv_mistyped')"), Some(ERRCODE_UNDEFINED_OBJECT));
        Spi::run("RESET ROLE").unwrap();
        // the grant commits in another session; this backend sees it at the commit
        autonomous("SELECT seqgen_grant('t_priv', 'seqgen_app_test')");
        Spi::run("SET LOCAL ROLE seqgen_app_test").unwrap();
        assert!(one("SELECT seqgen_next('t_priv')") >= 1);
        assert_eq!(one("SELECT count(*) FROM seqgen_next_batch('t_priv', 3)"), 3);
        for sql in [
            "SELECT seqgen_create('t_priv2')",
            "SELECT seqgen_drop('t_priv')",
            "SELECT * FROM seqgen_status()",
            "SELECT * FROM seqgen.alloc",
            "UPDATE seqgen.alloc SET max_id = max_id + 1",
            "DELETE FROM seqgen.alloc",
            "INSERT INTO seqgen.alloc VALUES ('t_evil', 0, 1)",
            "TRUNCATE seqgen.alloc",
        ] {
            assert_eq!(sqlstate(sql), Some(ERRCODE_INSUFFICIENT_PRIVILEGE), "{sql}");
        }
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one("SELECT count(*) FROM seqgen.alloc WHERE biz_tag IN ('t_priv2', 't_evil')"), 0);
        assert_eq!(one("SELECT count(*) FROM seqgen.alloc WHERE biz_tag = 't_priv'"), 1);
    }

    #[pg_test]
    fn uuidv7_needs_a_grant() {
        Spi::run("CREATE ROLE seqgen_uuid_test NOLOGIN").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_uuid_test").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_uuidv7()"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT * FROM seqgen.uuidv7"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        // the pure helpers stay open
        assert_eq!(sqlstate("SELECT seqgen_uuidv7_at(now()), seqgen_snowflake_at(now())"), None);
        // not only the schema: the table itself is closed
        Spi::run("RESET ROLE").unwrap();
        let closed = Spi::get_one::<bool>(
            "SELECT NOT has_table_privilege('seqgen_uuid_test', 'seqgen.uuidv7', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')",
        )
        .unwrap();
        assert_eq!(closed, Some(true));
    }

    #[pg_test]
    fn snowflake_needs_a_grant() {
        Spi::run("CREATE ROLE seqgen_sf_test NOLOGIN").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_sf_test").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_snowflake()"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT * FROM seqgen.snowflake"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        Spi::run("RESET ROLE").unwrap();
        Spi::run("GRANT EXECUTE ON FUNCTION seqgen_snowflake() TO seqgen_sf_test").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_sf_test").unwrap();
        assert!(one("SELECT seqgen_snowflake()") > 0);
    }

    #[pg_test]
    fn order_numbers_need_grants() {
        autonomous("SELECT seqgen_create('t_tpl_priv')");
        autonomous("SELECT seqgen_set_template('t_tpl_priv', 'P{seq:4}')");
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_ord_test NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_order_no TO seqgen_ord_test; \
             SELECT seqgen_grant('t_tpl_priv', 'seqgen_ord_test')",
        );
        Spi::run("SET LOCAL ROLE seqgen_ord_test").unwrap();
        assert!(text("SELECT seqgen_order_no('t_tpl_priv')").starts_with('P'));
        // the pure helpers are open to everyone
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_check_digit_valid('79927398713')").unwrap(), Some(true));
        for sql in [
            "SELECT seqgen_set_template('t_tpl_priv', 'Q{seq:4}')",
            "UPDATE seqgen.template SET template = 'Q{seq:4}'",
            "SELECT * FROM seqgen.template",
        ] {
            assert_eq!(sqlstate(sql), Some(ERRCODE_INSUFFICIENT_PRIVILEGE), "{sql}");
        }
    }

    #[pg_test]
    fn execute_only_role_cannot_read_the_key_or_reveal() {
        autonomous("SELECT seqgen_create('t_opaque_priv')");
        autonomous("SELECT seqgen_make_opaque('t_opaque_priv')");
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_opaque_app NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_next, seqgen_next_batch(text, integer) TO seqgen_opaque_app; \
             SELECT seqgen_grant('t_opaque_priv', 'seqgen_opaque_app')",
        );
        Spi::run("SET LOCAL ROLE seqgen_opaque_app").unwrap();
        assert!(one("SELECT seqgen_next('t_opaque_priv')") > 0);
        for sql in [
            "SELECT key FROM seqgen.opaque_key",
            "SELECT seqgen_reveal('t_opaque_priv', 1)",
            "SELECT seqgen_reveal_order_no('t_opaque_priv', 'x')",
            "SELECT seqgen_make_opaque('t_opaque_priv')",
        ] {
            assert_eq!(sqlstate(sql), Some(ERRCODE_INSUFFICIENT_PRIVILEGE), "{sql}");
        }
        // even with EXECUTE on the reveal function, the key stays out of reach
        Spi::run("RESET ROLE").unwrap();
        Spi::run("GRANT EXECUTE ON FUNCTION seqgen_reveal(text, bigint) TO seqgen_opaque_app").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_opaque_app").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_reveal('t_opaque_priv', 5)"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
    }

    /// seqgen_status() shows a role granted EXECUTE on it the tags it owns or may draw from
    /// (it failed with "permission denied for schema seqgen"), a member of pg_monitor every
    /// tag, and a role with neither none (issue 31, item 7).
    #[pg_test]
    fn status_shows_each_role_its_tags() {
        autonomous(
            "DO $$ BEGIN CREATE ROLE st_owner NOLOGIN; CREATE ROLE st_drawer NOLOGIN; \
             CREATE ROLE st_watch NOLOGIN IN ROLE pg_monitor; CREATE ROLE st_none NOLOGIN; \
             EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_status(), seqgen_create(text, integer, bigint, text, boolean) \
             TO st_owner, st_drawer, st_watch, st_none; \
             SET ROLE st_owner; SELECT seqgen_create('st_mine'); RESET ROLE; \
             SELECT seqgen_create('st_granted'); SELECT seqgen_grant('st_granted', 'st_drawer'); \
             SELECT seqgen_create('st_hidden')",
        );
        let seen = |role: &str| -> String {
            Spi::run(&format!("SET LOCAL ROLE {role}")).unwrap();
            let tags = Spi::get_one::<String>(
                "SELECT coalesce(string_agg(biz_tag, ',' ORDER BY biz_tag), '') FROM seqgen_status() WHERE biz_tag LIKE 'st\\_%'",
            )
            .unwrap()
            .unwrap_or_default();
            Spi::run("RESET ROLE").unwrap();
            tags
        };
        assert_eq!(seen("st_owner"), "st_mine");
        assert_eq!(seen("st_drawer"), "st_granted");
        assert_eq!(seen("st_watch"), "st_granted,st_hidden,st_mine");
        assert_eq!(seen("st_none"), "");
        // an opaque tag's counters are its owner's only (seqgen_reveal's rule): a role that may
        // draw from it, or pg_monitor, sees NULLs
        autonomous("SELECT seqgen_make_opaque('st_granted')");
        let counters = |role: &str| -> bool {
            Spi::run(&format!("SET LOCAL ROLE {role}")).unwrap();
            let shown =
                Spi::get_one::<bool>("SELECT max_id IS NOT NULL FROM seqgen_status() WHERE biz_tag = 'st_granted'")
                    .unwrap()
                    .unwrap();
            Spi::run("RESET ROLE").unwrap();
            shown
        };
        assert!(!counters("st_drawer"));
        assert!(!counters("st_watch"));
        assert!(Spi::get_one::<bool>("SELECT max_id IS NOT NULL FROM seqgen_status() WHERE biz_tag = 'st_granted'")
            .unwrap()
            .unwrap());
        assert!(Spi::get_one::<bool>("SELECT max_id IS NOT NULL FROM seqgen_status() WHERE biz_tag = 'st_mine'")
            .unwrap()
            .unwrap());
        autonomous("SELECT seqgen_drop('st_mine'); SELECT seqgen_drop('st_granted'); SELECT seqgen_drop('st_hidden')");
    }

    /// Item 8: a tag has an owner, who grants and revokes drawing from it; others get 42501
    /// naming the tag, and may not change it.
    #[pg_test]
    fn tags_have_owners_and_grants() {
        // committed roles and tag: the allocator loads only committed tags
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_team_a NOLOGIN; CREATE ROLE seqgen_team_b NOLOGIN; \
             EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_create(text, integer, bigint, text, boolean), seqgen_next, \
             seqgen_alter(text, integer, text), seqgen_drop(text, boolean), seqgen_grant(text, text), seqgen_revoke(text, text) \
             TO seqgen_team_a, seqgen_team_b; \
             SET ROLE seqgen_team_a; SELECT seqgen_create('t_team_a', 10); RESET ROLE",
        );
        assert_eq!(
            Spi::get_one::<String>("SELECT owner::text FROM seqgen.alloc WHERE biz_tag = 't_team_a'")
                .unwrap()
                .as_deref(),
            Some("seqgen_team_a")
        );
        Spi::run("SET LOCAL ROLE seqgen_team_a").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_a')"), None);
        Spi::run("SET LOCAL ROLE seqgen_team_b").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_a')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_alter('t_team_a', 20)"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_drop('t_team_a')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_grant('t_team_a', 'seqgen_team_b')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_mistyped')"), Some(ERRCODE_UNDEFINED_OBJECT));
        Spi::run("SET LOCAL ROLE seqgen_team_a").unwrap();
        Spi::run("SELECT seqgen_grant('t_team_a', 'seqgen_team_b')").unwrap();
        assert_eq!(
            sqlstate("SELECT seqgen_grant('t_team_a', 'seqgen_no_such_role')"),
            Some(ERRCODE_INVALID_PARAMETER_VALUE)
        );
        Spi::run("SET LOCAL ROLE seqgen_team_b").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_a')"), None);
        // a revoke counts at once in its own transaction (the others at its commit)
        Spi::run("SET LOCAL ROLE seqgen_team_a").unwrap();
        Spi::run("SELECT seqgen_revoke('t_team_a', 'seqgen_team_b')").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_team_b").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_a')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        Spi::run("RESET ROLE").unwrap();
    }
}

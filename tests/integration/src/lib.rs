//! Test harness for pg_seqgen's integration and fault suite: throwaway PostgreSQL clusters
//! (owned by the `postgres` OS user, each with a private port and socket directory), clients,
//! and the bookkeeping that counts duplicates.
//!
//! The PostgreSQL under test is the one whose `pg_config` is in `SEQGEN_PG_CONFIG` (Debian's
//! 15 when unset); the extension must already be installed into it (`cargo pgrx install
//! --release --pg-config ...`). `tests/run.sh` does both, once per major.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub use postgres::{Client, NoTls};

/// The PostgreSQL installation under test, as its `pg_config` describes it.
pub struct Pg {
    pub major: u32,
    pub bindir: String,
    pub pkglibdir: String,
    pub sharedir: String,
}

/// The installation named by `SEQGEN_PG_CONFIG` (default: Debian's PostgreSQL 15).
pub fn pg() -> &'static Pg {
    static PG: std::sync::OnceLock<Pg> = std::sync::OnceLock::new();
    PG.get_or_init(|| {
        let pg_config =
            std::env::var("SEQGEN_PG_CONFIG").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pg_config".into());
        let ask = |flag: &str| {
            let out = Command::new(&pg_config).arg(flag).output().unwrap_or_else(|e| panic!("{pg_config}: {e}"));
            assert!(out.status.success(), "{pg_config} {flag} failed");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        // "PostgreSQL 16.14" -> 16
        let version = ask("--version");
        let major = version
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("cannot read the major from {version:?}"));
        Pg { major, bindir: ask("--bindir"), pkglibdir: ask("--pkglibdir"), sharedir: ask("--sharedir") }
    })
}

/// The bin directory of the PostgreSQL under test.
pub fn pg_bin() -> &'static str {
    &pg().bindir
}

/// The clock-shift preload (`clockshift/clockshift.c`), built once per test run.
fn clock_shift_lib() -> String {
    static LIB: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/clockshift/clockshift.c");
        std::fs::create_dir_all("/tmp/pg_seqgen_it").unwrap();
        let out = format!("/tmp/pg_seqgen_it/clockshift-{}.so", std::process::id());
        let tmp = format!("{out}.tmp");
        let cc = Command::new("cc").args(["-shared", "-fPIC", "-O2", "-o", &tmp, src, "-ldl"]).output().unwrap();
        assert!(cc.status.success(), "building the clock shift: {}", String::from_utf8_lossy(&cc.stderr));
        std::fs::rename(&tmp, &out).unwrap();
        out
    })
    .clone()
}

/// Run a command as the `postgres` OS user (PostgreSQL refuses to run as root).
pub fn as_postgres(program: &str, args: &[&str]) -> Output {
    as_postgres_env(program, args, &[])
}

pub fn as_postgres_env(program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("sudo");
    cmd.arg("-u").arg("postgres");
    if !env.is_empty() {
        cmd.arg("env");
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
    }
    cmd.arg(program).args(args);
    cmd.output().unwrap_or_else(|e| panic!("running {program}: {e}"))
}

fn check(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A throwaway cluster. Stopped (immediately) when dropped.
pub struct Cluster {
    pub name: String,
    pub dir: PathBuf,
    pub port: u16,
    /// Environment the postmaster runs with (e.g. the clock shift's variables).
    pub env: Vec<(String, String)>,
    /// The directory of `pg_ctl` and `postgres` (the system's, or a private tree's).
    pub bin: String,
}

impl Cluster {
    /// initdb a fresh cluster with pg_seqgen preloaded and `extra` lines in postgresql.conf.
    pub fn init(name: &str, port: u16, extra: &[&str]) -> Cluster {
        Cluster::init_in(pg_bin(), name, port, extra, &[])
    }

    /// [`init`](Self::init) with the binaries in `bin` (another major's) and `initdb_args`.
    pub fn init_in(bin: &str, name: &str, port: u16, extra: &[&str], initdb_args: &[&str]) -> Cluster {
        let dir = PathBuf::from(format!("/tmp/pg_seqgen_it/{name}"));
        let c = Cluster { name: name.into(), dir, port, env: vec![], bin: bin.into() };
        c.stop_quietly();
        let _ = std::fs::remove_dir_all(&c.dir);
        std::fs::create_dir_all(&c.dir).unwrap();
        check(Command::new("chown").arg("postgres").arg(&c.dir).output().unwrap(), "chown");
        let data = c.data();
        let mut args = vec!["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"];
        args.extend_from_slice(initdb_args);
        check(as_postgres(&format!("{bin}/initdb"), &args), "initdb");
        let mut conf = vec![
            format!("port = {port}"),
            format!("unix_socket_directories = '{}'", c.dir.display()),
            "listen_addresses = ''".into(),
            "shared_preload_libraries = 'pg_seqgen'".into(),
            "max_connections = 60".into(),
            "fsync = on".into(),
            "log_min_messages = warning".into(),
            // A client that opens a connection during an immediate shutdown and never finishes
            // its startup packet (Citus's coordinator, mid-SSL-handshake) keeps the postmaster
            // waiting for that "dead-end" child up to authentication_timeout (60 s by default;
            // SIGKILL is not sent to it), so a test's immediate stop could take a minute.
            "authentication_timeout = '5s'".into(),
        ];
        conf.extend(extra.iter().map(|s| s.to_string()));
        c.append_conf(&conf.join("\n"));
        c
    }

    /// Run the server with a wall clock the test can shift while it runs
    /// (`set_clock_offset_ms`): every server process, the postmaster and the allocation
    /// worker included, sees the same shifted clock (see `clockshift/clockshift.c` for why
    /// this is not libfaketime). Monotonic clocks stay real (PostgreSQL's timeouts).
    pub fn with_clock_shift(mut self) -> Cluster {
        let file = format!("{}/clock_offset_ms", self.dir.display());
        std::fs::write(&file, "0\n").unwrap();
        check(Command::new("chmod").arg("644").arg(&file).output().unwrap(), "chmod");
        self.env = vec![("LD_PRELOAD".into(), clock_shift_lib()), ("SEQGEN_CLOCK_FILE".into(), file)];
        self
    }

    /// Shift the server's wall clock by `ms` relative to the real clock (negative: behind).
    ///
    /// The new offset applies from 10 ms after the call on, in every process of the server at
    /// the same instant (see clockshift.c); the call returns once it does.
    pub fn set_clock_offset_ms(&self, ms: i64) {
        let file = format!("{}/clock_offset_ms", self.dir.display());
        let real_ms = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        // the offset in force now: "<offset>" or "<offset> <at> <previous>"
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let f: Vec<i64> = text.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        let now_in_force = match f[..] {
            [_, at, prev] if real_ms() < at => prev,
            [v, ..] => v,
            _ => 0,
        };
        let at = real_ms() + 10;
        // write and rename, so the server never reads a half-written file
        let tmp = format!("{file}.tmp");
        std::fs::write(&tmp, format!("{ms} {at} {now_in_force}\n")).unwrap();
        std::fs::rename(&tmp, &file).unwrap();
        while real_ms() <= at + 1 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// A streaming standby of this (running) cluster, made with `pg_basebackup -R`, started.
    pub fn standby(&self, name: &str, port: u16) -> Cluster {
        let s = Cluster {
            name: name.into(),
            dir: format!("/tmp/pg_seqgen_it/{name}").into(),
            port,
            env: vec![],
            bin: self.bin.clone(),
        };
        s.stop_quietly();
        let _ = std::fs::remove_dir_all(&s.dir);
        std::fs::create_dir_all(&s.dir).unwrap();
        check(Command::new("chown").arg("postgres").arg(&s.dir).output().unwrap(), "chown");
        let (host, primary_port) = (self.dir.display().to_string(), self.port.to_string());
        check(
            as_postgres(
                &format!("{}/pg_basebackup", pg_bin()),
                &["-h", &host, "-p", &primary_port, "-U", "postgres", "-D", &s.data(), "-R", "-X", "stream"],
            ),
            "pg_basebackup",
        );
        s.append_conf(&format!("port = {port}\nunix_socket_directories = '{}'", s.dir.display()));
        s.start();
        s
    }

    /// Make every standby synchronous (`synchronous_standby_names = '*'`) and wait until one
    /// is.
    pub fn make_standbys_synchronous(&self) {
        self.sql("ALTER SYSTEM SET synchronous_standby_names = '*'");
        self.sql("SELECT pg_reload_conf()");
        let deadline = Instant::now() + Duration::from_secs(30);
        while self
            .connect()
            .query("SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'", &[])
            .unwrap()
            .is_empty()
        {
            assert!(Instant::now() < deadline, "the standby never became synchronous");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn data(&self) -> String {
        format!("{}/data", self.dir.display())
    }

    pub fn append_conf(&self, text: &str) {
        let path = format!("{}/postgresql.conf", self.data());
        let mut cur = std::fs::read_to_string(&path).unwrap();
        cur.push('\n');
        cur.push_str(text);
        cur.push('\n');
        std::fs::write(&path, cur).unwrap();
    }

    fn env_refs(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    pub fn start(&self) {
        let log = format!("{}/log", self.dir.display());
        let data = self.data();
        check(
            as_postgres_env(
                &format!("{}/pg_ctl", self.bin),
                &["-D", &data, "-l", &log, "-w", "-t", "120", "start"],
                &self.env_refs(),
            ),
            &format!("pg_ctl start ({})", self.log_tail()),
        );
    }

    /// Try to start; `Err(log tail)` when the server refuses to come up.
    pub fn try_start(&self) -> Result<(), String> {
        let log = format!("{}/log", self.dir.display());
        let data = self.data();
        let out = as_postgres_env(
            &format!("{}/pg_ctl", self.bin),
            &["-D", &data, "-l", &log, "-w", "-t", "30", "start"],
            &self.env_refs(),
        );
        if out.status.success() {
            Ok(())
        } else {
            Err(self.log())
        }
    }

    /// `pg_ctl stop -m <mode>`.
    pub fn stop(&self, mode: &str) {
        let data = self.data();
        check(
            as_postgres(&format!("{}/pg_ctl", self.bin), &["-D", &data, "-m", mode, "-w", "-t", "120", "stop"]),
            "pg_ctl stop",
        );
    }

    fn stop_quietly(&self) {
        let data = self.data();
        if Path::new(&format!("{data}/postmaster.pid")).exists() {
            let _ = as_postgres(&format!("{}/pg_ctl", self.bin), &["-D", &data, "-m", "immediate", "-w", "stop"]);
        }
    }

    /// SIGKILL the postmaster, then clean up its orphaned children the way an operator would
    /// after a machine crash (they exit by themselves once they notice the postmaster is gone).
    pub fn kill9(&self) {
        let pid = self.postmaster_pid();
        check(Command::new("kill").arg("-9").arg(pid.to_string()).output().unwrap(), "kill -9");
        // Children of a SIGKILLed postmaster exit on their own, when they notice; until the
        // last one has, its shared memory is in use and a restart would be refused. They are
        // found by their working directory, the data directory (their titles do not name the
        // cluster, and once the postmaster is gone they belong to init); one forked just
        // before the kill is found too. A zombie has exited (and detached); the postmaster
        // itself must be reaped, as a new one refuses to start while the PID in
        // postmaster.pid answers, which a zombie's does.
        let data = std::fs::canonicalize(self.data()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let running: Vec<String> = std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
                .filter(|p| std::fs::read_link(format!("/proc/{p}/cwd")).is_ok_and(|cwd| cwd == data))
                .filter(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/stat"))
                        .map(|st| st.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
                        .unwrap_or(false)
                })
                .collect();
            if running.is_empty() && !Path::new(&format!("/proc/{pid}")).exists() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "kill9 of {}: after 60 s, processes {running:?} still run in its data directory",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn postmaster_pid(&self) -> i32 {
        let text = std::fs::read_to_string(format!("{}/postmaster.pid", self.data())).unwrap();
        text.lines().next().unwrap().trim().parse().unwrap()
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(format!("{}/log", self.dir.display())).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(format!("{}/log", self.dir.display())).unwrap_or_default()
    }

    pub fn conninfo(&self, db: &str) -> String {
        format!("host={} port={} user=postgres dbname={db}", self.dir.display(), self.port)
    }

    pub fn connect(&self) -> Client {
        self.connect_db("postgres")
    }

    /// A new session of role `role` in database `postgres`.
    pub fn connect_as(&self, role: &str) -> Client {
        Client::connect(&format!("{} user={role}", self.conninfo("postgres")), NoTls).unwrap()
    }

    pub fn connect_db(&self, db: &str) -> Client {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match Client::connect(&self.conninfo(db), NoTls) {
                Ok(c) => return c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("connect to {}: {e}\n{}", self.name, self.log_tail()),
            }
        }
    }

    /// Run SQL (several statements allowed) and panic on error.
    pub fn sql(&self, sql: &str) {
        self.connect().batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }

    pub fn one_i64(&self, sql: &str) -> i64 {
        self.connect().query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).get(0)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop_quietly();
    }
}

/// The SQLSTATE of a failed statement, if the error came from the server.
pub fn sqlstate(e: &postgres::Error) -> Option<String> {
    e.code().map(|c| c.code().to_string())
}

/// Counts IDs and duplicates across everything clients were given.
#[derive(Default)]
pub struct Ledger {
    seen: HashMap<i64, u32>,
    pub total: usize,
}

impl Ledger {
    pub fn add(&mut self, ids: impl IntoIterator<Item = i64>) {
        for id in ids {
            *self.seen.entry(id).or_default() += 1;
            self.total += 1;
        }
    }

    pub fn duplicates(&self) -> usize {
        self.seen.values().map(|&n| n as usize - 1).sum()
    }

    pub fn examples(&self) -> Vec<i64> {
        let mut d: Vec<i64> = self.seen.iter().filter(|(_, &n)| n > 1).map(|(&k, _)| k).collect();
        d.sort_unstable();
        d.truncate(10);
        d
    }

    /// Print the figures (CI reads them) and assert there is no duplicate.
    pub fn assert_unique(&self, what: &str) {
        println!("{what}: {} IDs checked, {} duplicates", self.total, self.duplicates());
        assert_eq!(self.duplicates(), 0, "{what}: IDs issued twice, e.g. {:?}", self.examples());
    }

    /// Add everything another ledger counted.
    pub fn merge(&mut self, other: &Ledger) {
        for (&id, &n) in &other.seen {
            *self.seen.entry(id).or_default() += n;
        }
        self.total += other.total;
    }

    pub fn max(&self) -> Option<i64> {
        self.seen.keys().max().copied()
    }
}

/// Assert that no order number was issued twice; prints the figures (CI reads them).
pub fn assert_unique_numbers<S: AsRef<str>>(what: &str, all: &[S]) {
    let mut seen = std::collections::HashSet::new();
    let dups: Vec<&str> = all.iter().map(AsRef::as_ref).filter(|n| !seen.insert(*n)).collect();
    println!("{what}: {} numbers checked, {} duplicates", all.len(), dups.len());
    assert!(dups.is_empty(), "{what}: issued twice, e.g. {:?}", &dups[..dups.len().min(5)]);
}

/// Run `f` on `n` threads at once and collect their results.
pub fn on_threads<T: Send + 'static>(n: usize, f: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let f = std::sync::Arc::new(f);
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let f = f.clone();
            std::thread::spawn(move || f(i))
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("worker thread panicked")).collect()
}

/// How long `f` took, and what it returned.
pub fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let t = Instant::now();
    let r = f();
    (t.elapsed(), r)
}

/// Call `f` every 20 ms until it succeeds (at most `limit`); how long that took. Measures how
/// long service takes to come back after a fault ends.
pub fn recovery_time(limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "service not back after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    t.elapsed()
}

/// Send `signal` (e.g. "STOP", "CONT", "TERM", "KILL") to a process.
pub fn signal(pid: i32, signal: &str) {
    let out = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).output().unwrap();
    assert!(out.status.success(), "kill -{signal} {pid}: {}", String::from_utf8_lossy(&out.stderr));
}

impl Cluster {
    /// The allocation worker's pid (waiting up to 10 s for it to run).
    pub fn worker_pid(&self) -> i32 {
        let mut c = self.connect();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pid: Option<i32> = c
                .query_one("SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_seqgen allocator' AND datname = current_database()", &[])
                .ok()
                .map(|r| r.get(0));
            match pid {
                Some(p) => return p,
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                None => panic!("no pg_seqgen allocator running\n{}", self.log_tail()),
            }
        }
    }
}

/// What one caller got during a fault: how long it waited, and its value or SQLSTATE.
#[derive(Debug, Clone)]
pub struct Answer {
    pub waited: Duration,
    pub result: Result<i64, String>,
}

impl Answer {
    /// Run `sql` (returning one bigint) and time it.
    pub fn of(c: &mut Client, sql: &str) -> Answer {
        let (waited, r) = timed(|| c.query_one(sql, &[]));
        Answer { waited, result: r.map(|row| row.get(0)).map_err(|e| sqlstate(&e).unwrap_or_else(|| e.to_string())) }
    }
}

/// Check a fault's three figures and print them: every caller answered within `bound`, with a
/// value or one of the `allowed` SQLSTATEs.
pub fn assert_answers(what: &str, answers: &[Answer], bound: Duration, allowed: &[&str]) {
    let max = answers.iter().map(|a| a.waited).max().unwrap_or_default();
    let ok = answers.iter().filter(|a| a.result.is_ok()).count();
    let mut states: Vec<&str> = answers.iter().filter_map(|a| a.result.as_ref().err().map(String::as_str)).collect();
    states.sort_unstable();
    states.dedup();
    println!(
        "{what}: {} callers, {ok} got a value, errors {states:?}, longest wait {} ms (bound {} ms)",
        answers.len(),
        max.as_millis(),
        bound.as_millis()
    );
    for a in answers {
        if let Err(s) = &a.result {
            assert!(allowed.contains(&s.as_str()), "{what}: unexpected error {s}");
        }
    }
    assert!(max <= bound, "{what}: a caller waited {max:?}, more than {bound:?}");
}

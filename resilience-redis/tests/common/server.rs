//! A throwaway `redis-server` for the G7 tests: a free loopback port, no persistence, a
//! temporary directory, killed on drop. Never a developer's Redis: without the binary, the
//! tests use `RESILIENCE_REDIS_URL` if set, else they print one loud skip line (and fail
//! under `RESILIENCE_REQUIRE_REDIS`, which CI sets).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    pub url: String,
    dir: Option<PathBuf>,
}

/// The server for one test, or `None` after printing the skip line.
pub fn server() -> Option<RedisServer> {
    if has_binary() {
        return Some(RedisServer::start());
    }
    if let Ok(url) = std::env::var("RESILIENCE_REDIS_URL") {
        return Some(RedisServer {
            child: None,
            port: 0,
            url,
            dir: None,
        });
    }
    skip("no redis-server (install it, or set RESILIENCE_REDIS_URL)");
    None
}

/// Set by `.ci/run`, which installs redis-server: there a missing server fails the test, so a
/// green CI run means the Redis tests ran.
pub const REQUIRE_VAR: &str = "RESILIENCE_REQUIRE_REDIS";

/// The skip line, once per reason and test binary, written to the real stderr: libtest
/// captures `eprintln!` of a passing test, so a skip printed that way would never be seen.
/// Panics instead under [`REQUIRE_VAR`].
pub fn skip(why: &str) {
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    assert!(
        std::env::var_os(REQUIRE_VAR).is_none(),
        "{REQUIRE_VAR} is set, but Redis tests cannot run: {why}"
    );
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !seen.iter().any(|w| w == why) {
        seen.push(why.to_owned());
        let line = format!("\n!!!! skipped: Redis tests of this binary: {why} !!!!\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

fn has_binary() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().expect("local addr").port()
}

/// A unique key prefix per test (tests may share an external Redis).
pub fn prefix(test: &str) -> String {
    format!(
        "t{}-{}-{:06x}",
        std::process::id(),
        test,
        fastrand::u32(..1 << 24)
    )
}

/// The key `k` of resource `core` under prefix `p`.
pub fn state_key(p: &str, k: &str) -> String {
    format!("{{{p}:core}}:{k}")
}

impl RedisServer {
    fn start() -> Self {
        // The port is free when chosen, but another process may take it before the server
        // binds it: then the server exits, and a new port is tried.
        for _ in 0..5 {
            let port = free_port();
            let dir = std::env::temp_dir()
                .join(format!("resilience-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let mut s = Self {
                child: None,
                port,
                url: format!("redis://127.0.0.1:{port}"),
                dir: Some(dir),
            };
            if s.launch() {
                return s;
            }
        }
        panic!("redis-server exited at start on 5 free ports in a row");
    }

    /// Whether this test owns the server (and so may kill it).
    pub fn owned(&self) -> bool {
        self.dir.is_some()
    }

    /// (Re)starts the server on the same port, empty.
    pub fn restart(&mut self) {
        assert!(
            self.launch(),
            "redis-server exited at restart: port {} was taken meanwhile",
            self.port
        );
    }

    /// Starts the server on `self.port`; whether it answers. `false` if it exited first
    /// (its port taken): the server answering then is another one, told apart by its pid.
    fn launch(&mut self) -> bool {
        let dir = self.dir.clone().expect("an owned server");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let ours = format!("process_id:{}\r\n", child.id());
        self.child = Some(child);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            let exited = self
                .child
                .as_mut()
                .is_some_and(|c| c.try_wait().ok().flatten().is_some());
            if exited {
                self.child = None;
                return false;
            }
            if self.cmd("INFO server").is_some_and(|r| r.contains(&ours)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not answer on port {}", self.port);
    }

    /// Stops the server (SIGSTOP) until the guard is dropped: it hangs without closing
    /// connections, as a stalled host would.
    pub fn pause(&self) -> Paused {
        let pid = self
            .child
            .as_ref()
            .expect("an owned server")
            .id()
            .to_string();
        signal(&pid, "-STOP");
        Paused(pid)
    }

    /// Moves the counters of resource `core` under `prefix` (lease epochs, calls, window
    /// ids, and every lease's) `ms` ahead, as a state born that much later (on a host whose
    /// clock was ahead) would have counted them.
    pub fn move_counters_ahead(&self, prefix: &str, ms: u64) {
        let script = "local D = tonumber(ARGV[1]) * 1000 \
            local s = cmsgpack.unpack(redis.call('GET', KEYS[1])) \
            s.seq = s.seq + D s.ops = s.ops + D s.win = s.win + D \
            redis.call('SET', KEYS[1], cmsgpack.pack(s)) \
            for _, n in ipairs(redis.call('HKEYS', KEYS[2])) do \
              local e, r, w, o, x, c = string.match(redis.call('HGET', KEYS[2], n), \
                '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$') \
              redis.call('HSET', KEYS[2], n, string.format('%d:%s:%d:%s:%s:%d', \
                tonumber(e) + D, r, tonumber(w) + D, o, x, tonumber(c) + D)) \
            end \
            return 1";
        let answer = self
            .cmd(&format!(
                "EVAL \"{script}\" 2 {{{prefix}:core}}:q {{{prefix}:core}}:l {ms}"
            ))
            .unwrap_or_default();
        assert_eq!(answer.trim(), ":1", "{answer}");
    }

    /// Kills the server (SIGKILL: no goodbye, data lost).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// One inline command over a raw socket; the whole reply, or `None` if unreachable.
    /// One integer field of resource `core`'s state under prefix `p`, read on the server.
    pub fn state_field(&self, p: &str, field: &str) -> i64 {
        let answer = self
            .cmd(&format!(
                "EVAL \"return cmsgpack.unpack(redis.call('GET', KEYS[1])).{field}\" 1 {}",
                state_key(p, "q")
            ))
            .unwrap_or_default();
        answer
            .trim()
            .trim_start_matches(':')
            .parse()
            .unwrap_or_else(|_| panic!("{field}: {answer}"))
    }

    pub fn cmd(&self, line: &str) -> Option<String> {
        let addr = self.url.trim_start_matches("redis://");
        let addr = addr.rsplit('@').next()?.split('/').next()?;
        let mut s = TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(format!("{line}\r\n").as_bytes()).ok()?;
        let mut r = BufReader::new(s);
        let mut first = String::new();
        r.read_line(&mut first).ok()?;
        if let Some(len) = first.strip_prefix('$') {
            let n: i64 = len.trim().parse().ok()?;
            if n < 0 {
                return Some(first);
            }
            let mut body = vec![0; usize::try_from(n).ok()? + 2];
            r.read_exact(&mut body).ok()?;
            return Some(String::from_utf8_lossy(&body).into_owned());
        }
        Some(first)
    }

    /// `calls` of one command in `INFO commandstats` (0 if never called).
    pub fn calls(&self, command: &str) -> u64 {
        self.stat(command, "calls").map_or(0, |v| v as u64)
    }

    /// One field (`calls`, `usec_per_call`, ...) of a command in `INFO commandstats`.
    pub fn stat(&self, command: &str, field: &str) -> Option<f64> {
        let info = self.cmd("INFO commandstats")?;
        info.lines()
            .find(|l| l.starts_with(&format!("cmdstat_{command}:")))
            .and_then(|l| l.split(&format!("{field}=")).nth(1))
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.trim().parse().ok())
    }
}

/// A stopped server, resumed when dropped (so a failing test still cleans up: the server's
/// own drop then kills it).
pub struct Paused(String);

impl Drop for Paused {
    fn drop(&mut self) {
        signal(&self.0, "-CONT");
    }
}

fn signal(pid: &str, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, pid])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig} {pid}");
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

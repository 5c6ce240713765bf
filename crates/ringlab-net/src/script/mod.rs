//! wrk's Lua scripting API (`-s FILE`), with wrk's semantics: one state for
//! the setup and done phases, one state per client thread for the running
//! phase; `setup(thread)`, `init(args)`, `delay()`, `request()`,
//! `response(status, headers, body)` and `done(summary, latency, requests)`;
//! the `wrk` table with `format`, `lookup` and `connect`.
//!
//! Without `-s` none of this exists: no state is created and the client's
//! hot path only tests an `Option` that is `None`.

mod stats;
pub mod watchdog;

pub use stats::StatsUd;

use crate::http::Captured;
use anyhow::Result;
use mlua::{
    AnyUserData, Function, Lua, MetaMethod, Table, UserData, UserDataFields, UserDataMethods,
    Value, WeakLua,
};
use ringlab_core::usage_error;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The Lua half of the `wrk` table (format, setup, init), run in every state.
const BOOTSTRAP: &str = include_str!("wrk.lua");
/// How long `wrk.connect(addr)` may take.
const CONNECT_PROBE: Duration = Duration::from_secs(2);

/// `-s FILE` and the arguments after `--`, as the plan holds them.
#[derive(Debug, Clone)]
pub struct ScriptSpec {
    pub path: PathBuf,
    pub source: String,
    pub args: Vec<String>,
}

impl ScriptSpec {
    /// Reads and compiles the script once, so a missing file or a syntax
    /// error is a usage error before anything starts.
    pub fn load(path: &str, args: Vec<String>) -> Result<ScriptSpec> {
        let source = std::fs::read_to_string(path).map_err(|e| {
            usage_error(format!(
                "--script {path}: {e}; give the path of a wrk Lua script"
            ))
        })?;
        let lua = Lua::new();
        if let Err(e) = lua
            .load(&source)
            .set_name(format!("@{path}"))
            .into_function()
        {
            return Err(usage_error(format!("--script {path}: {}", one_line(&e))));
        }
        Ok(ScriptSpec {
            path: PathBuf::from(path),
            source,
            args,
        })
    }
}

/// What the `wrk` table is filled with before the script runs.
#[derive(Debug, Clone)]
pub struct WrkTable {
    pub url: String,
    pub scheme: String,
    pub host: String,
    /// The port as the URL wrote it; `None` when the URL has none (wrk).
    pub port: Option<String>,
    pub path: String,
    pub method: String,
    pub body: Option<String>,
    pub headers: Vec<String>,
    pub addr: SocketAddr,
}

/// A Lua error as one line (tracebacks and chunk names are multi-line).
fn one_line(e: &mlua::Error) -> String {
    let s = match e {
        mlua::Error::CallbackError { cause, .. } => return one_line(cause),
        mlua::Error::MemoryError(_) => {
            return format!(
                "not enough memory: a script's Lua state may allocate {} MiB, and this one asked for more (a table that only grows?)",
                LUA_MEMORY_MAX >> 20
            )
        }
        other => other.to_string(),
    };
    s.lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("runtime error: ")
        .trim_start_matches("syntax error: ")
        .to_string()
}

/// A thread as both its own state and the setup state see it.
pub struct ThreadShared {
    lua: WeakLua,
    addr: Mutex<SocketAddr>,
    stop: AtomicBool,
}

impl ThreadShared {
    pub fn addr(&self) -> SocketAddr {
        *self.addr.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `thread` of `setup(thread)` and `wrk.thread`.
#[derive(Clone)]
struct ThreadUd(Arc<ThreadShared>);

/// An address from `wrk.lookup` or `thread.addr`.
#[derive(Clone, Copy)]
struct AddrUd(SocketAddr);

impl UserData for AddrUd {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_meta_method(MetaMethod::ToString, |_, this, ()| Ok(this.0.to_string()));
    }
}

impl UserData for ThreadUd {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("addr", |_, this| Ok(AddrUd(this.0.addr())));
        f.add_field_method_set("addr", |_, this, v: AnyUserData| {
            let a = v.borrow::<AddrUd>()?;
            *this.0.addr.lock().unwrap_or_else(|p| p.into_inner()) = a.0;
            Ok(())
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("get", |lua, this, name: String| {
            let Some(thread_lua) = this.0.lua.try_upgrade() else {
                return Ok(Value::Nil);
            };
            let v: Value = thread_lua.globals().get(name.as_str())?;
            copy_value(&v, lua, 0)
        });
        m.add_method("set", |_, this, (name, v): (String, Value)| {
            let Some(thread_lua) = this.0.lua.try_upgrade() else {
                return Err(mlua::Error::runtime("the thread is gone"));
            };
            let copied = copy_value(&v, &thread_lua, 0)?;
            thread_lua.globals().set(name, copied)
        });
        m.add_method("stop", |_, this, ()| {
            this.0.stop.store(true, Ordering::Relaxed);
            Ok(())
        });
        // wrk's script_thread_index answers any other key with the key
        // itself (`thread.id` is the string "id"); scripts that print it
        // print the same.
        m.add_meta_method(MetaMethod::Index, |_, _, key: Value| Ok(key));
    }
}

/// Copies nil, booleans, numbers, strings and tables of them into `dst`
/// (what wrk lets `thread:get/set` transfer).
fn copy_value(v: &Value, dst: &Lua, depth: u32) -> mlua::Result<Value> {
    if depth > 64 {
        return Err(mlua::Error::runtime(
            "cannot transfer a table nested deeper than 64 levels to a thread",
        ));
    }
    Ok(match v {
        Value::Nil => Value::Nil,
        Value::Boolean(b) => Value::Boolean(*b),
        Value::Integer(i) => Value::Integer(*i),
        Value::Number(n) => Value::Number(*n),
        Value::String(s) => Value::String(dst.create_string(s.as_bytes())?),
        Value::Table(t) => {
            let out = dst.create_table()?;
            for pair in t.clone().pairs::<Value, Value>() {
                let (k, v) = pair?;
                out.raw_set(
                    copy_value(&k, dst, depth + 1)?,
                    copy_value(&v, dst, depth + 1)?,
                )?;
            }
            Value::Table(out)
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "cannot transfer '{}' to thread",
                other.type_name()
            )))
        }
    })
}

/// `wrk.lookup(host, service)`: every address of the pair, as getaddrinfo.
fn lookup(_: &Lua, (host, service): (String, Value)) -> mlua::Result<Vec<AddrUd>> {
    let port: u16 = match &service {
        Value::Integer(i) => u16::try_from(*i).ok(),
        Value::Number(n) => Some(*n as u16),
        Value::String(s) => {
            let s = s.to_str()?.to_string();
            match s.as_str() {
                "http" => Some(80),
                "https" => Some(443),
                p => p.parse().ok(),
            }
        }
        _ => None,
    }
    .ok_or_else(|| mlua::Error::runtime(format!("wrk.lookup: unknown service {service:?}")))?;
    let addrs = (host.as_str(), port).to_socket_addrs().map_err(|e| {
        mlua::Error::runtime(format!("wrk.lookup: unable to resolve {host}:{port}: {e}"))
    })?;
    Ok(addrs.map(AddrUd).collect())
}

/// `wrk.connect(addr)`: whether a connection to `addr` can be made.
fn connect(_: &Lua, addr: AnyUserData) -> mlua::Result<bool> {
    let a = addr.borrow::<AddrUd>()?;
    Ok(TcpStream::connect_timeout(&a.0, CONNECT_PROBE).is_ok())
}

/// A new state with the `wrk` table filled and the script run.
/// The memory one Lua state may allocate: an allocation past it is the
/// script's "not enough memory" error, not the end of the process.
pub const LUA_MEMORY_MAX: usize = 512 << 20;

fn new_state(t: &WrkTable, spec: &ScriptSpec) -> Result<Lua> {
    let lua = Lua::new();
    // Where the Lua build keeps its own allocator the limit is not
    // available; the watchdog still bounds the time.
    let _ = lua.set_memory_limit(LUA_MEMORY_MAX);
    let build = || -> mlua::Result<()> {
        let wrk = lua.create_table()?;
        wrk.set("scheme", t.scheme.as_str())?;
        wrk.set("host", t.host.as_str())?;
        wrk.set("port", t.port.as_deref())?;
        wrk.set("path", t.path.as_str())?;
        wrk.set("method", t.method.as_str())?;
        wrk.set("body", t.body.as_deref())?;
        let headers = lua.create_table()?;
        for h in &t.headers {
            // wrk takes "Name: value" (one space after the colon) only.
            if let Some((name, value)) = h.split_once(": ") {
                headers.set(name, value)?;
            }
        }
        wrk.set("headers", headers)?;
        wrk.set("lookup", lua.create_function(lookup)?)?;
        // os.exit ends the run with its results and exits with the
        // script's code ([`watchdog::exit_requested`]), not the process
        // from inside Lua with nothing said.
        let os: Table = lua.globals().get("os")?;
        os.set(
            "exit",
            lua.create_function(|_, code: Value| -> mlua::Result<()> {
                let code = match code {
                    Value::Nil | Value::Boolean(true) => 0,
                    Value::Boolean(false) => 1,
                    Value::Integer(n) => n,
                    Value::Number(n) if n.is_finite() => n as i64,
                    _ => 1,
                };
                watchdog::request_exit(code);
                Err(mlua::Error::runtime(format!(
                    "os.exit({code}) called: the run stops here"
                )))
            })?,
        )?;
        wrk.set("connect", lua.create_function(connect)?)?;
        lua.load(BOOTSTRAP)
            .set_name("=wrk")
            .call::<()>(wrk.clone())?;
        lua.globals().set("wrk", wrk.clone())?;
        // `require "wrk"` works as in wrk.
        let loaded: Table = lua.globals().get::<Table>("package")?.get("loaded")?;
        loaded.set("wrk", wrk)?;
        Ok(())
    };
    build().map_err(|e| anyhow::anyhow!("setting up the Lua state: {}", one_line(&e)))?;
    let _call = watchdog::Call::enter("the script's top level");
    lua.load(&spec.source)
        .set_name(format!("@{}", spec.path.display()))
        .exec()
        .map_err(|e| {
            usage_error(format!(
                "--script {}: {}",
                spec.path.display(),
                one_line(&e)
            ))
        })?;
    Ok(lua)
}

fn function(lua: &Lua, name: &str) -> Option<Function> {
    match lua.globals().get::<Value>(name) {
        Ok(Value::Function(f)) => Some(f),
        _ => None,
    }
}

/// The script of one run: the setup/done state and each thread's state,
/// set up (setup() and init() called) and ready to hand to the threads.
pub struct ScriptRun {
    main: Lua,
    shared: Vec<Arc<ThreadShared>>,
    /// Taken by the client threads; the states stay alive until done().
    pub threads: Vec<Option<ThreadScript>>,
}

impl ScriptRun {
    /// Creates the states, calls `setup(thread)` for each thread in the
    /// setup state and `init(args)` in each thread's state, as wrk does.
    pub fn prepare(t: &WrkTable, spec: &ScriptSpec, threads: u32) -> Result<ScriptRun> {
        let main = new_state(t, spec)?;
        let mut shared = Vec::new();
        let mut ts = Vec::new();
        let wrk_main: Table = main.globals().get("wrk").map_err(lua_err)?;
        let setup: Function = wrk_main.get("setup").map_err(lua_err)?;
        for _ in 0..threads {
            let lua = new_state(t, spec)?;
            let sh = Arc::new(ThreadShared {
                lua: lua.weak(),
                addr: Mutex::new(t.addr),
                stop: AtomicBool::new(false),
            });
            let wrk: Table = lua.globals().get("wrk").map_err(lua_err)?;
            wrk.set("thread", ThreadUd(sh.clone())).map_err(lua_err)?;
            {
                // Scoped: the first request() below is watched as itself.
                let _call = watchdog::Call::enter("setup()");
                setup
                    .call::<()>(ThreadUd(sh.clone()))
                    .map_err(|e| script_error(spec, "setup()", &e))?;
            }
            // wrk's script_init: each thread's init(args) right after its
            // setup(thread), so their prints interleave as in wrk.
            let args = lua.create_table().map_err(lua_err)?;
            args.raw_set(0, t.url.as_str()).map_err(lua_err)?;
            for (i, a) in spec.args.iter().enumerate() {
                args.raw_set(i + 1, a.as_str()).map_err(lua_err)?;
            }
            let init: Function = wrk.get("init").map_err(lua_err)?;
            {
                let _call = watchdog::Call::enter("init()");
                init.call::<()>(args)
                    .map_err(|e| script_error(spec, "init()", &e))?;
            }
            ts.push(Some(ThreadScript::new(lua, sh.clone(), spec)?));
            shared.push(sh);
        }
        Ok(ScriptRun {
            main,
            shared,
            threads: ts,
        })
    }

    /// The server address of thread `t` (setup() may have changed it).
    pub fn addr_of(&self, t: usize) -> Option<SocketAddr> {
        self.shared.get(t).map(|s| s.addr())
    }

    /// Requests in one `request()` string (wrk's pipelining), from thread 0.
    pub fn requests_per_write(&self) -> u32 {
        self.threads
            .iter()
            .flatten()
            .next()
            .map_or(1, |t| t.per_write)
    }

    pub fn has_done(&self) -> bool {
        function(&self.main, "done").is_some()
    }

    /// Calls `done(summary, latency, requests)` in the setup state.
    pub fn done(&self, summary: &DoneSummary, latency: StatsUd, requests: StatsUd) -> Result<()> {
        let Some(done) = function(&self.main, "done") else {
            return Ok(());
        };
        let lua = &self.main;
        let s = || -> mlua::Result<Table> {
            let t = lua.create_table()?;
            t.set("duration", summary.duration_us)?;
            t.set("requests", summary.requests)?;
            t.set("bytes", summary.bytes)?;
            let e = lua.create_table()?;
            e.set("connect", summary.errors.connect)?;
            e.set("read", summary.errors.read)?;
            e.set("write", summary.errors.write)?;
            e.set("status", summary.errors.status)?;
            e.set("timeout", summary.errors.timeout)?;
            t.set("errors", e)?;
            Ok(t)
        };
        let table = s().map_err(lua_err)?;
        let _call = watchdog::Call::enter("done()");
        done.call::<()>((table, latency, requests))
            .map_err(|e| anyhow::anyhow!("script done(): {}", one_line(&e)))?;
        // done() writes through C stdio; flush it before Rust exits.
        let _ = self.main.load("io.stdout:flush()").exec();
        Ok(())
    }
}

fn lua_err(e: mlua::Error) -> anyhow::Error {
    anyhow::anyhow!("Lua: {}", one_line(&e))
}

fn script_error(spec: &ScriptSpec, phase: &str, e: &mlua::Error) -> anyhow::Error {
    usage_error(format!(
        "--script {}: {phase}: {}",
        spec.path.display(),
        one_line(e)
    ))
}

/// wrk's error counts as `done()` sees them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DoneErrors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    /// Responses with a status above 399.
    pub status: u64,
    pub timeout: u64,
}

/// The `summary` table of `done()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DoneSummary {
    pub duration_us: u64,
    pub requests: u64,
    pub bytes: u64,
    pub errors: DoneErrors,
}

/// The longest delay() may ask for: one day, in milliseconds.
pub const DELAY_MAX_MS: f64 = 86_400_000.0;

/// Whether the note on bodies cut for response() was printed.
static BODY_CUT_SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// One client thread's state and the hooks it defines.
pub struct ThreadScript {
    // Field order is drop order: functions before their state.
    request_fn: Option<Function>,
    delay_fn: Option<Function>,
    response_fn: Option<Function>,
    lua: Lua,
    shared: Arc<ThreadShared>,
    /// The request bytes: static, or the last `request()` returned.
    buf: Vec<u8>,
    /// The first dynamic request, already made to count its requests.
    first: bool,
    /// Requests in one request string.
    pub per_write: u32,
    /// The first Lua error of the running phase; the thread stops on it.
    pub error: Option<String>,
}

impl ThreadScript {
    fn new(lua: Lua, shared: Arc<ThreadShared>, spec: &ScriptSpec) -> Result<ThreadScript> {
        let request_fn = function(&lua, "request");
        let call = watchdog::Call::enter("request()");
        let first: mlua::String = match &request_fn {
            Some(f) => f.call(()),
            None => lua
                .globals()
                .get::<Table>("wrk")
                .and_then(|w| w.get::<Function>("request"))
                .and_then(|f| f.call(())),
        }
        .map_err(|e| script_error(spec, "request()", &e))?;
        drop(call);
        let buf = first.as_bytes().to_vec();
        let per_write = count_requests(&buf).map_err(|m| {
            usage_error(format!(
                "--script {}: request() returned {m}",
                spec.path.display()
            ))
        })?;
        Ok(ThreadScript {
            delay_fn: function(&lua, "delay"),
            response_fn: function(&lua, "response"),
            request_fn,
            lua,
            shared,
            buf,
            first: true,
            per_write,
            error: None,
        })
    }

    /// The request of a static script (no request() function).
    pub fn static_request(&self) -> Option<&[u8]> {
        self.request_fn.is_none().then_some(&self.buf[..])
    }

    pub fn dynamic(&self) -> bool {
        self.request_fn.is_some()
    }

    pub fn has_delay(&self) -> bool {
        self.delay_fn.is_some()
    }

    pub fn wants_response(&self) -> bool {
        self.response_fn.is_some()
    }

    /// thread:stop() was called, or a hook failed.
    #[inline]
    pub fn halted(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn fail(&mut self, hook: &str, e: &mlua::Error) {
        // os.exit is no failure: the run stops with its results
        // ([`watchdog::exit_requested`]).
        if self.error.is_none() && watchdog::exit_requested().is_none() {
            self.error = Some(format!("script {hook}: {}", one_line(e)));
        }
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    /// The next request string (calls request() when the script has one).
    pub fn next_request(&mut self) -> Option<&[u8]> {
        if let Some(f) = &self.request_fn {
            if self.first {
                self.first = false;
            } else {
                let _call = watchdog::Call::enter("request()");
                match f.call::<mlua::String>(()) {
                    Ok(s) => {
                        self.buf.clear();
                        self.buf.extend_from_slice(&s.as_bytes());
                    }
                    Err(e) => {
                        self.fail("request()", &e);
                        return None;
                    }
                }
            }
        }
        Some(&self.buf)
    }

    /// delay() in nanoseconds (the script answers in milliseconds). nil
    /// is no delay; anything but a number of milliseconds from 0 to
    /// [`DELAY_MAX_MS`] is the script's error and stops the thread.
    pub fn delay_ns(&mut self) -> u64 {
        let Some(f) = &self.delay_fn else { return 0 };
        let _call = watchdog::Call::enter("delay()");
        let ms = match f.call::<Value>(()) {
            Ok(Value::Nil) => return 0,
            Ok(Value::Integer(ms)) => ms as f64,
            Ok(Value::Number(ms)) => ms,
            Ok(other) => {
                let e = mlua::Error::runtime(format!(
                    "returned {} {}, not a number of milliseconds",
                    other.type_name(),
                    other.to_string().unwrap_or_default()
                ));
                self.fail("delay()", &e);
                return 0;
            }
            Err(e) => {
                self.fail("delay()", &e);
                return 0;
            }
        };
        if !(0.0..=DELAY_MAX_MS).contains(&ms) {
            let e = mlua::Error::runtime(format!(
                "returned {ms} ms: a delay is a number of milliseconds from 0 to {DELAY_MAX_MS} (one day)"
            ));
            self.fail("delay()", &e);
            return 0;
        }
        (ms * 1e6) as u64
    }

    /// response(status, headers, body).
    pub fn response(&mut self, status: u16, cap: &Captured) {
        let Some(f) = &self.response_fn else { return };
        let _call = watchdog::Call::enter("response()");
        let call = || -> mlua::Result<()> {
            let headers = self.lua.create_table()?;
            for (k, v) in &cap.headers {
                headers.raw_set(k.as_str(), v.as_str())?;
            }
            if cap.body.len() >= crate::http::BODY_KEPT_MAX
                && !BODY_CUT_SAID.swap(true, Ordering::Relaxed)
            {
                eprintln!(
                    "ringlab: note: a response body reached {} MiB: response() gets the first {} MiB of each body (the rest is read and counted, not kept)",
                    crate::http::BODY_KEPT_MAX >> 20,
                    crate::http::BODY_KEPT_MAX >> 20
                );
            }
            let body = self.lua.create_string(&cap.body)?;
            f.call::<()>((status, headers, body))
        };
        if let Err(e) = call() {
            self.fail("response()", &e);
        }
    }
}

/// How many complete HTTP requests `req` holds (wrk's pipelining count);
/// an error says what is wrong with it and where.
pub fn count_requests(req: &[u8]) -> std::result::Result<u32, String> {
    let mut rest = req;
    let mut n = 0u32;
    while !rest.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Request::new(&mut headers);
        let at = req.len() - rest.len();
        let head = match r.parse(rest) {
            Ok(httparse::Status::Complete(h)) => h,
            Ok(httparse::Status::Partial) => {
                return Err(format!("an incomplete request at byte {at}"))
            }
            Err(e) => return Err(format!("an invalid request at byte {at}: {e}")),
        };
        let mut len = 0usize;
        for h in r.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                len = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .ok_or_else(|| format!("a bad Content-Length at byte {at}"))?;
            }
        }
        if rest.len() < head + len {
            return Err(format!(
                "a body shorter than its Content-Length at byte {at}"
            ));
        }
        rest = &rest[head + len..];
        n += 1;
    }
    if n == 0 {
        return Err("an empty string, not a request".to_string());
    }
    Ok(n)
}

#[cfg(test)]
mod tests;

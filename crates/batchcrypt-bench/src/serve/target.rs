//! Where the benchmark's clients find the server, and on which CPUs each side runs.
//!
//! By default the server is started in this process (as `batchcrypt serve` runs it: its
//! connections on threads of their own) and shares the host's CPUs with the clients. With
//! `BATCHCRYPT_BENCH_SERVE_BIN` naming a `batchcrypt` binary, the server is that binary's
//! `batchcrypt serve`, a process of its own with the same settings, as it is deployed; with
//! `BATCHCRYPT_BENCH_SERVER_CPUS` (a list such as `0-7` or `0-3,8-11`) that process runs on those
//! CPUs only, and with `BATCHCRYPT_BENCH_CLIENT_CPUS` the clients' threads run on theirs: on one
//! host, the nearest to clients on other machines, whose work takes nothing from the server's
//! cores. The library's batch, the baseline, keeps every CPU either way.

use batchcrypt::Engine;
use batchcrypt_serve::{Running, ServerConfig};
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// The longest a separate server may take to start listening (it loads its kernels and
/// calibrates its dispatcher first).
const START_TIMEOUT: Duration = Duration::from_secs(300);

/// A running server and its endpoints.
pub struct Target {
    pub addr: SocketAddr,
    pub unix_socket: PathBuf,
    pub frames_socket: PathBuf,
    pub metrics: Option<SocketAddr>,
    /// None once stopped.
    server: Option<Server>,
}

enum Server {
    Here(Running),
    /// A separate process, and the CPUs it is bound to (all if none).
    Process(Child, Option<Cpus>),
}

impl Target {
    /// Starts the server `config` describes (its TCP and metrics addresses on ephemeral ports,
    /// its Unix and frames sockets given), here on `rt` or as a process of its own keeping its
    /// data in `data`.
    pub async fn start(
        engine: Arc<Engine>,
        rt: &tokio::runtime::Handle,
        config: ServerConfig,
        data: &Path,
    ) -> anyhow::Result<Target> {
        let (unix_socket, frames_socket) = match (&config.unix_socket, &config.frames_socket) {
            (Some(u), Some(f)) => (u.clone(), f.clone()),
            _ => anyhow::bail!("the benchmark's server needs a Unix socket and a frames socket"),
        };
        let cpus = setting_cpus("BATCHCRYPT_BENCH_SERVER_CPUS")?;
        let Some(bin) = std::env::var_os("BATCHCRYPT_BENCH_SERVE_BIN") else {
            anyhow::ensure!(
                cpus.is_none(),
                "BATCHCRYPT_BENCH_SERVER_CPUS needs the server in a process of its own: set BATCHCRYPT_BENCH_SERVE_BIN to a batchcrypt binary"
            );
            let running = rt
                .spawn(batchcrypt_serve::start(engine, config))
                .await?
                .map_err(anyhow::Error::msg)?;
            return Ok(Target {
                addr: running.addr,
                metrics: running.metrics_addr,
                unix_socket,
                frames_socket,
                server: Some(Server::Here(running)),
            });
        };
        let b = &config.batch;
        let mut cmd = Command::new(&bin);
        cmd.arg("serve")
            .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .arg("--unix-socket")
            .arg(&unix_socket)
            .arg("--frames-socket")
            .arg(&frames_socket)
            .arg("--data")
            .arg(data.join("server"))
            .arg(format!(
                "--max-delay-ms={}",
                b.max_delay.as_secs_f64() * 1e3
            ))
            .arg(format!("--max-batch={}", b.max_items))
            .arg(format!("--max-hash-batch={}", b.max_hash_items))
            .arg(format!("--in-flight={}", b.in_flight))
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(dir) = &config.shared_memory {
            cmd.arg(format!("--shared-memory={}", dir.display()));
        }
        // Unless told, a server on CPUs of its own has a connection thread per CPU it has (its
        // default), not per CPU of the host.
        if cpus.is_none() || std::env::var_os("BATCHCRYPT_BENCH_SERVER_THREADS").is_some() {
            cmd.arg(format!("--io-threads={}", config.io_threads));
        }
        if let Some(cpus) = cpus.clone() {
            use std::os::unix::process::CommandExt;
            // SAFETY: between fork and exec the closure only makes a system call on a set built
            // before the fork.
            unsafe {
                cmd.pre_exec(move || cpus.apply());
            }
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {}: {e}", Path::new(&bin).display()))?;
        let started = listening(&mut child);
        let (addr, metrics) = match started {
            Ok(at) => at,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        };
        Ok(Target {
            addr,
            metrics,
            unix_socket,
            frames_socket,
            server: Some(Server::Process(child, cpus)),
        })
    }

    /// The server's process id where it runs apart from this one.
    pub fn pid(&self) -> Option<u32> {
        match &self.server {
            Some(Server::Process(c, _)) => Some(c.id()),
            _ => None,
        }
    }

    /// Where a separate server runs, in words (its process id and CPUs); None for one here.
    pub fn apart(&self) -> Option<String> {
        match &self.server {
            Some(Server::Process(c, cpus)) => Some(format!(
                "pid {}{}",
                c.id(),
                cpus.as_ref()
                    .map(|c| format!(", on CPUs {c}"))
                    .unwrap_or_default()
            )),
            _ => None,
        }
    }

    /// Stops the server gracefully (a separate one by SIGTERM, as a service manager does) and
    /// waits until it has.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        match self.server.take() {
            None => Ok(()),
            Some(Server::Here(running)) => running.shutdown().await.map_err(anyhow::Error::msg),
            Some(Server::Process(mut child, _)) => {
                // SAFETY: signals the child this process started and has not yet waited for.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                let status = tokio::task::spawn_blocking(move || child.wait()).await??;
                anyhow::ensure!(status.success(), "the server exited with {status}");
                Ok(())
            }
        }
    }
}

impl Drop for Target {
    /// A separate server does not outlive a benchmark that failed before stopping it.
    fn drop(&mut self) {
        if let Some(Server::Process(child, _)) = &mut self.server {
            if child.try_wait().ok().flatten().is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Reads the separate server's standard error until it says where it listens: its gRPC and
/// metrics addresses. What it writes afterwards goes on to this process's standard error.
fn listening(child: &mut Child) -> anyhow::Result<(SocketAddr, Option<SocketAddr>)> {
    const SAYS: &str = "batchcrypt serve: gRPC on ";
    let err = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = Vec::new();
        let mut tx = Some(tx);
        for line in std::io::BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            match &tx {
                Some(t) if line.starts_with(SAYS) => {
                    let _ = t.send(Ok(line));
                    tx = None;
                }
                Some(_) => said.push(line),
                None => eprintln!("{line}"),
            }
        }
        if let Some(t) = tx {
            let _ = t.send(Err(said.join("\n")));
        }
    });
    let line = match rx.recv_timeout(START_TIMEOUT) {
        Ok(Ok(line)) => line,
        Ok(Err(said)) => anyhow::bail!(
            "the server exited before listening ({}):\n{said}",
            child.wait().map_or("?".into(), |s| s.to_string())
        ),
        Err(_) => anyhow::bail!(
            "the server did not say where it listens within {} s",
            START_TIMEOUT.as_secs()
        ),
    };
    let rest = &line[SAYS.len()..];
    let addr = rest
        .split([' ', ';'])
        .next()
        .unwrap_or_default()
        .parse()
        .map_err(|e| anyhow::anyhow!("reading the server's address from {line:?}: {e}"))?;
    let metrics = match rest.split_once("metrics on http://") {
        Some((_, m)) => Some(
            m.split('/')
                .next()
                .unwrap_or_default()
                .parse()
                .map_err(|e| anyhow::anyhow!("reading the metrics address from {line:?}: {e}"))?,
        ),
        None => None,
    };
    Ok((addr, metrics))
}

/// A set of CPUs, as `taskset -c` writes one (`0-7`, `0-3,8-11`).
#[derive(Clone)]
pub struct Cpus {
    list: String,
    set: libc::cpu_set_t,
}

impl Cpus {
    pub fn parse(list: &str) -> anyhow::Result<Cpus> {
        // SAFETY: an all-zero cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let most = 8 * std::mem::size_of::<libc::cpu_set_t>();
        let bad = || anyhow::anyhow!("{list:?} is not a CPU list such as 0-7 or 0-3,8-11");
        for part in list.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b): (usize, usize) = (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            );
            anyhow::ensure!(a <= b && b < most, bad());
            for cpu in a..=b {
                // SAFETY: cpu is below the set's size.
                unsafe { libc::CPU_SET(cpu, &mut set) };
            }
        }
        Ok(Cpus {
            list: list.to_string(),
            set,
        })
    }

    /// Binds the calling thread (and the threads it starts later) to the set.
    fn apply(&self) -> std::io::Result<()> {
        // SAFETY: the set is a valid cpu_set_t of the size given.
        let r = unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.set)
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Runs `f` with the calling thread bound to the set, so that the threads `f` starts are
    /// bound to it; the thread's own binding is restored after.
    pub fn around<T>(&self, f: impl FnOnce() -> T) -> std::io::Result<T> {
        // SAFETY: reads the calling thread's set into a zeroed cpu_set_t of the size given.
        let mut was: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if unsafe { libc::sched_getaffinity(0, size, &mut was) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.apply()?;
        let out = f();
        // SAFETY: as above, the set read before.
        unsafe { libc::sched_setaffinity(0, size, &was) };
        Ok(out)
    }
}

impl std::fmt::Display for Cpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.list)
    }
}

/// The CPU set the environment variable `var` gives, if it is set.
pub fn setting_cpus(var: &str) -> anyhow::Result<Option<Cpus>> {
    match std::env::var(var) {
        Ok(v) => Cpus::parse(&v)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{var}: {e}")),
        Err(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        let c = Cpus::parse("0-2,5").unwrap();
        let has = |i| unsafe { libc::CPU_ISSET(i, &c.set) };
        assert!(has(0) && has(1) && has(2) && !has(3) && !has(4) && has(5) && !has(6));
        for bad in ["", "a", "3-1", "0-", "1,,2", "99999"] {
            assert!(Cpus::parse(bad).is_err(), "{bad:?} was taken");
        }
    }

    /// The set of the calling thread, as a list of CPUs.
    fn own() -> Vec<usize> {
        let mut s: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut s) }, 0);
        (0..8 * size)
            .filter(|&i| unsafe { libc::CPU_ISSET(i, &s) })
            .collect()
    }

    #[test]
    fn threads_started_inside_keep_the_set() {
        let before = own();
        let first = before[0];
        let c = Cpus::parse(&first.to_string()).unwrap();
        let inside = c
            .around(|| std::thread::spawn(own).join().unwrap())
            .unwrap();
        assert_eq!(inside, [first]);
        // The caller's own set is back.
        assert_eq!(own(), before);
    }

    /// A child that writes `text` to standard error, then waits a while.
    fn saying(text: &str) -> Child {
        Command::new("sh")
            .args(["-c", &format!("printf '{text}' >&2; exec sleep 30")])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_separate_server_says_where_it_listens() {
        let mut c = saying("loading kernels\\nbatchcrypt serve: gRPC on 127.0.0.1:7700 and unix:/s.sock, frames on /f.sock, metrics on http://127.0.0.1:7701/metrics; data in d\\n");
        let (addr, metrics) = listening(&mut c).unwrap();
        assert_eq!(addr, "127.0.0.1:7700".parse().unwrap());
        assert_eq!(metrics, Some("127.0.0.1:7701".parse().unwrap()));
        let _ = c.kill();
        let mut c = saying("batchcrypt serve: gRPC on 127.0.0.1:7700; data in d\\n");
        assert_eq!(listening(&mut c).unwrap().1, None);
        let _ = c.kill();
        // One that stops first: its words, in the error.
        let mut c = Command::new("sh")
            .args(["-c", "echo 'error: address in use' >&2; exit 3"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let e = listening(&mut c).unwrap_err().to_string();
        assert!(
            e.contains("address in use") && e.contains("exit status: 3"),
            "{e}"
        );
    }
}

//! What the service benchmark reads besides its own clocks: the server's stages from its
//! metrics, and the CPU each group of threads used (the clients', the server's).

/// The server's own view of an operation, cumulative over its life, from its metrics: per stage
/// (`run`: each batch; `queue`: each request's wait for its batch; `total`: each request in the
/// server, to its batch's end; `sent`: a request stream's message from its reading to its reply
/// handed to the connection) the count, the seconds, and the latency histogram's cumulative
/// buckets; and the seconds its batches ran on each backend (the dispatcher's choice, which a
/// server's own calibration makes), and how many times their estimates each backend's recent
/// batches took (what its dispatcher weighs that choice by, for every library operation).
#[derive(Default)]
pub(super) struct Stages {
    stages: std::collections::HashMap<&'static str, Stage>,
    /// Seconds by backend name.
    busy: std::collections::BTreeMap<String, f64>,
    /// Factors by `operation on backend`.
    slowdowns: std::collections::BTreeMap<String, f64>,
}

#[derive(Default, Clone)]
struct Stage {
    count: f64,
    sum: f64,
    /// (upper bound in seconds, requests at or under it)
    buckets: Vec<(f64, f64)>,
}

const STAGES: [&str; 4] = ["run", "queue", "total", "sent"];

pub(super) async fn stages(metrics: Option<std::net::SocketAddr>, op: &str) -> Stages {
    let Some(m) = metrics else {
        return Stages::default();
    };
    parse_stages(&http_get(m).await.unwrap_or_default(), op)
}

fn parse_stages(text: &str, op: &str) -> Stages {
    let mut out = Stages::default();
    let op_is = |l: &[(&str, &str)]| label(l, "op") == Some(op);
    for stage in STAGES {
        let here = |l: &[(&str, &str)]| op_is(l) && label(l, "stage") == Some(stage);
        let value = |name: &str| -> f64 {
            samples(text, name)
                .find(|(l, _)| here(l))
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0.0)
        };
        let buckets = samples(text, "batchcrypt_stage_seconds_bucket")
            .filter(|(l, _)| here(l))
            .filter_map(|(l, n)| {
                let le = label(&l, "le")?.parse().unwrap_or(f64::INFINITY);
                Some((le, n.parse().ok()?))
            })
            .collect();
        out.stages.insert(
            stage,
            Stage {
                count: value("batchcrypt_stage_seconds_count"),
                sum: value("batchcrypt_stage_seconds_sum"),
                buckets,
            },
        );
    }
    for (l, v) in samples(text, "batchcrypt_busy_seconds_total").filter(|(l, _)| op_is(l)) {
        if let Some(backend) = label(&l, "backend") {
            out.busy
                .insert(backend.to_string(), v.parse().unwrap_or(0.0));
        }
    }
    for (l, v) in samples(text, "batchcrypt_backend_slowdown") {
        if let (Some(op), Some(backend), Ok(v)) = (label(&l, "op"), label(&l, "backend"), v.parse())
        {
            out.slowdowns.insert(format!("{op} on {backend}"), v);
        }
    }
    out
}

/// The samples of metric `name` in Prometheus' text format (`name{key="value",...} value`, or
/// `name value` without labels): each one's labels, in the order written, and its value as
/// written.
pub(super) fn samples<'a>(
    text: &'a str,
    name: &'a str,
) -> impl Iterator<Item = (Vec<(&'a str, &'a str)>, &'a str)> + 'a {
    text.lines().filter_map(move |l| {
        let l = l.strip_prefix(name)?;
        let (labels, value) = match l.strip_prefix('{') {
            Some(l) => l.split_once("} ")?,
            None => ("", l.strip_prefix(' ')?),
        };
        let labels = labels
            .split(',')
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                Some((k, v.strip_prefix('"')?.strip_suffix('"')?))
            })
            .collect();
        Some((labels, value.trim()))
    })
}

/// The value of label `key` among `labels`.
fn label<'a>(labels: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    labels.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// The server's view between two readings of [`stages`]: batches, and per stage the mean and
/// the bucket bound under which 99% of the requests fell (so where a tail arises: in the wait for
/// a batch, the batch's run, or outside the server).
pub(super) fn stages_between(before: &Stages, after: &Stages) -> String {
    let d = |stage: &str| -> Stage {
        let (a, b) = (
            after.stages.get(stage).cloned().unwrap_or_default(),
            before.stages.get(stage).cloned().unwrap_or_default(),
        );
        Stage {
            count: a.count - b.count,
            sum: a.sum - b.sum,
            buckets: a
                .buckets
                .iter()
                .map(|&(le, n)| {
                    let was = b.buckets.iter().find(|x| x.0 == le).map_or(0.0, |x| x.1);
                    (le, n - was)
                })
                .collect(),
        }
    };
    let p99 = |s: &Stage| -> f64 {
        s.buckets
            .iter()
            .find(|&&(_, n)| n >= 0.99 * s.count)
            .map_or(f64::NAN, |&(le, _)| le)
    };
    let (run, queue, total, sent) = (d("run"), d("queue"), d("total"), d("sent"));
    if run.count == 0.0 && total.count == 0.0 {
        return "server: no batches (nothing batched)".into();
    }
    let busy: Vec<(&String, f64)> = (after.busy.iter())
        .map(|(b, s)| (b, s - before.busy.get(b).copied().unwrap_or(0.0)))
        .filter(|&(_, s)| s > 0.0)
        .collect();
    let all: f64 = busy.iter().map(|b| b.1).sum();
    let on = busy
        .iter()
        .map(|(b, s)| format!("{b} {:.0}%", 100.0 * s / all))
        .collect::<Vec<_>>()
        .join(", ");
    let slowdowns = (after.slowdowns.iter())
        .map(|(k, f)| format!("{k} {f:.2}x"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "server: {:.0} batches{}, run {:.2} ms on average (p99 <= {:.1} ms); requests waited {:.2} ms for their batch (p99 <= {:.1} ms), {:.2} ms in the server (p99 <= {:.1} ms){}{}",
        run.count,
        if on.is_empty() {
            String::new()
        } else {
            format!(" (their run's seconds: {on})")
        },
        1e3 * run.sum / run.count.max(1.0),
        1e3 * p99(&run),
        1e3 * queue.sum / queue.count.max(1.0),
        1e3 * p99(&queue),
        1e3 * total.sum / total.count.max(1.0),
        1e3 * p99(&total),
        if sent.count == 0.0 {
            String::new()
        } else {
            format!(
                ", {:.2} ms from a stream's reading to the connection (p99 <= {:.1} ms)",
                1e3 * sent.sum / sent.count,
                1e3 * p99(&sent)
            )
        },
        if slowdowns.is_empty() {
            String::new()
        } else {
            format!("; batches against their estimates now: {slowdowns}")
        },
    )
}

/// CPU seconds (user and system) each group of this process's threads has used, by thread name
/// with its number dropped (`serve`, `bench-client`, `batchcrypt-transfer`; the rest carry the
/// process's name), and those of the server's process `server` where it runs apart (named
/// `server:` and theirs). Threads that ended are not counted. Empty where /proc is not there.
pub(super) fn thread_cpu(server: Option<u32>) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    let tick = clock_ticks();
    let ours = std::iter::once(("/proc/self/task".to_string(), ""));
    let theirs = server.map(|pid| (format!("/proc/{pid}/task"), "server:"));
    for (dir, prefix) in ours.chain(theirs) {
        let Ok(tasks) = std::fs::read_dir(dir) else {
            continue;
        };
        for t in tasks.flatten() {
            let (Ok(comm), Ok(stat)) = (
                std::fs::read_to_string(t.path().join("comm")),
                std::fs::read_to_string(t.path().join("stat")),
            ) else {
                continue;
            };
            // Fields after the parenthesised name: state is the first, utime and stime the 12th
            // and 13th.
            let Some(rest) = stat.rsplit_once(')').map(|r| r.1) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks: f64 = f.get(11..13).map_or(0.0, |v| {
                v.iter().filter_map(|x| x.parse::<f64>().ok()).sum()
            });
            let name = comm
                .trim()
                .trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
            *out.entry(format!("{prefix}{name}")).or_insert(0.0) += ticks / tick;
        }
    }
    out
}

/// CPU seconds the hypervisor gave the host's virtual CPUs' time to others (steal, summed over
/// the CPUs) since boot; None where /proc/stat is not there or has no such field (not a virtual
/// machine's kernel). A run's latency tail follows it: a virtual CPU taken away mid-batch holds
/// every request of that batch.
pub(super) fn steal_seconds() -> Option<f64> {
    parse_steal(&std::fs::read_to_string("/proc/stat").ok()?, clock_ticks())
}

/// The kernel's clock ticks per second, the unit of /proc's CPU times.
fn clock_ticks() -> f64 {
    // SAFETY: sysconf reads a constant.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// Steal seconds from /proc/stat's text: the first line's (all CPUs') eighth field.
fn parse_steal(stat: &str, tick: f64) -> Option<f64> {
    let mut f = stat.lines().next()?.split_whitespace();
    (f.next()? == "cpu").then_some(())?;
    Some(f.nth(7)?.parse::<f64>().ok()? / tick)
}

/// The host's transparent huge page mode (`always`, `madvise` or `never`: the bracketed word of
/// /sys/kernel/mm/transparent_hugepage/enabled); None where the kernel has no such file. The
/// binaries' allocator asks for no huge pages, but under `always` the kernel backs its heap
/// with them anyway, and zeroing 2 MiB at each fault took a fifth of the server's CPU on the
/// development machine (docs/performance.md).
pub(super) fn huge_pages() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let (_, rest) = s.split_once('[')?;
    Some(rest.split_once(']')?.0.to_string())
}

/// The cores' time taken by the hypervisor over `secs` since `before` ([`steal_seconds`]), as a
/// line of its own; empty where it cannot be read.
pub(super) fn steal_since(before: Option<f64>, secs: f64) -> String {
    match (before, steal_seconds()) {
        (Some(b), Some(a)) if secs > 0.0 => format!(
            "  host: {:.2} cores' time taken by the hypervisor on average (steal)\n",
            (a - b) / secs
        ),
        _ => String::new(),
    }
}

/// The threads' busy cores over `secs` between two readings of [`thread_cpu`], by group.
pub(super) fn cpu_between(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
    secs: f64,
) -> String {
    let mut parts: Vec<(String, f64)> = after
        .iter()
        .map(|(k, v)| (k.clone(), (v - before.get(k).unwrap_or(&0.0)) / secs))
        .collect();
    // Every group counts toward the total; only those of a twentieth of a core or more are named.
    let total: f64 = parts.iter().map(|p| p.1).sum();
    parts.retain(|(_, c)| *c >= 0.05);
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    // The host's, whatever set of them the clients or the server run on.
    // SAFETY: sysconf reads a constant.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    format!(
        "CPU: {total:.1} of {cores} cores busy on average ({})",
        parts
            .iter()
            .map(|(k, c)| format!("{k} {c:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

pub(super) async fn http_get(addr: std::net::SocketAddr) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_read_from_the_first_line_of_proc_stat() {
        let stat = "cpu  100 2 30 4000 5 0 6 250 0 0\ncpu0 50 1 15 2000 2 0 3 125 0 0\n";
        assert_eq!(parse_steal(stat, 100.0), Some(2.5));
        // Not /proc/stat's shape, or a kernel without the field: nothing, not zero.
        assert_eq!(parse_steal("cpu0 1 2 3\n", 100.0), None);
        assert_eq!(parse_steal("cpu  100 2 30 4000\n", 100.0), None);
        assert_eq!(parse_steal("", 100.0), None);
        // Where the host has /proc, the reading is a count that only grows.
        if let Some(a) = steal_seconds() {
            assert!(a >= 0.0 && steal_seconds().unwrap() >= a);
        }
    }

    #[test]
    fn stages_read_from_the_servers_metrics() {
        let text = |runs: [u32; 3]| {
            format!(
                "batchcrypt_stage_seconds_sum{{op=\"hash\",stage=\"run\"}} 0.5\n\
                 batchcrypt_stage_seconds_count{{op=\"hash\",stage=\"run\"}} {}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"0.001\",op=\"hash\",stage=\"run\"}} {}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"0.002\",op=\"hash\",stage=\"run\"}} {}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"+Inf\",op=\"hash\",stage=\"run\"}} {}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"0.001\",op=\"verify_ecdsa\",stage=\"run\"}} 9\n\
                 batchcrypt_busy_seconds_total{{op=\"hash\",backend=\"cuda\"}} {}\n\
                 batchcrypt_busy_seconds_total{{op=\"hash\",backend=\"cpu-avx512\"}} {}\n\
                 batchcrypt_busy_seconds_total{{op=\"verify_ecdsa\",backend=\"cuda\"}} 7\n\
                 batchcrypt_backend_slowdown{{op=\"sha256d-64\",backend=\"cuda\"}} {}\n\
                 batchcrypt_backend_slowdown{{op=\"sha256d-64\",backend=\"cpu-avx512\"}} 3.5\n\
                 batchcrypt_stage_seconds_sum{{op=\"hash\",stage=\"sent\"}} {sent}\n\
                 batchcrypt_stage_seconds_count{{op=\"hash\",stage=\"sent\"}} {n}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"0.004\",op=\"hash\",stage=\"sent\"}} {n}\n",
                runs[2],
                runs[0],
                runs[1],
                runs[2],
                runs[0] * 3,
                runs[0] / 10,
                1.0 + runs[0] as f64 / 100.0,
                sent = 0.003 * runs[2] as f64,
                n = runs[2],
            )
        };
        let before = parse_stages(&text([0, 0, 0]), "hash");
        let after = parse_stages(&text([90, 99, 100]), "hash");
        assert_eq!(after.stages["run"].buckets.len(), 3);
        let s = stages_between(&before, &after);
        assert!(
            s.starts_with("server: 100 batches (their run's seconds: cpu-avx512 3%, cuda 97%)"),
            "{s}"
        );
        assert!(s.contains("(p99 <= 2.0 ms)"), "{s}");
        // The time from a stream's reading to the connection, where a stream served them.
        assert!(
            s.contains(", 3.00 ms from a stream's reading to the connection (p99 <= 4.0 ms)"),
            "{s}"
        );
        // The dispatcher's factors as they are at the end, not differences.
        assert!(
            s.ends_with(
                "; batches against their estimates now: sha256d-64 on cpu-avx512 3.50x, sha256d-64 on cuda 1.90x"
            ),
            "{s}"
        );
        // Nothing batched in between (an echo): said so, not a NaN percentile.
        let s = stages_between(&after, &after);
        assert_eq!(s, "server: no batches (nothing batched)");
    }

    #[test]
    fn samples_are_read_with_and_without_labels_by_their_whole_name() {
        let text = "batchcrypt_key_evictions_total 3\n\
                    batchcrypt_key_evictions_total_extra 9\n\
                    batchcrypt_busy_seconds_total{op=\"hash\",backend=\"cuda\"} 1.5\n";
        let evictions: Vec<_> = samples(text, "batchcrypt_key_evictions_total").collect();
        assert_eq!(evictions, vec![(vec![], "3")]);
        let busy: Vec<_> = samples(text, "batchcrypt_busy_seconds_total").collect();
        assert_eq!(
            busy,
            vec![(vec![("op", "hash"), ("backend", "cuda")], "1.5")]
        );
        assert_eq!(samples(text, "batchcrypt_busy_seconds").count(), 0);
    }

    #[test]
    fn cpu_counts_a_separate_servers_threads_by_name() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        // Until it has exec'd, the child carries the forking thread's name.
        let comm = format!("/proc/{}/comm", child.id());
        for _ in 0..500 {
            if std::fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "sleep") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let cpu = thread_cpu(Some(child.id()));
        let _ = child.kill();
        let _ = child.wait();
        // This process's threads under their names, the other's under `server:` and theirs.
        assert!(cpu.contains_key("server:sleep"), "{cpu:?}");
        assert!(!cpu.keys().any(|k| k == "sleep"), "{cpu:?}");
        assert!(thread_cpu(None).keys().all(|k| !k.starts_with("server:")));
    }
}

//! The loops the service benchmark drives its clients in: closed (each client sends, waits for
//! its reply, sends again) and open (each client sends on schedule, whatever the replies), and
//! the window both count requests in.

use super::calls::{Duplex, Streamed};
use crate::report::Report;
use batchcrypt_serve::client::Client;
use std::time::{Duration, Instant};

/// The report's group: every case of the service benchmark.
pub(super) const GROUP: &str = "serve";

pub(super) fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Latencies in ms: (p50, p99, max); NaN for none.
pub(super) fn latencies(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    (
        1e3 * percentile(&v, 0.5),
        1e3 * percentile(&v, 0.99),
        1e3 * v[v.len() - 1],
    )
}

/// A client's connection and the thread (a single-threaded runtime) its calls run on: clients
/// are spread over threads as separate client processes would be over cores, each connection's
/// tasks on one thread.
#[derive(Clone)]
pub(super) struct Conn<C = Client> {
    pub(super) client: C,
    pub(super) rt: tokio::runtime::Handle,
}

/// A closed loop's measure: how long it runs and, after the clients' first requests have settled,
/// the window over which completions are counted.
#[derive(Clone, Copy)]
pub(super) struct Window {
    /// From the clients' start to the window's start: the burst of every client's first request
    /// and the pipeline's filling, which a sustained load does not have.
    pub(super) settle: Duration,
    /// The window: requests completed in it are counted, and their latencies.
    pub(super) measure: Duration,
    /// At most this many requests per client (a bound on the count as well as on the time).
    pub(super) most: usize,
}

impl Window {
    /// When the window closes, from the loop's start.
    pub(super) fn end(&self) -> Duration {
        self.settle + self.measure
    }

    /// Whether a request answered `at` after the loop's start is counted: closed and open loops
    /// count by the same rule.
    pub(super) fn holds(&self, at: Duration) -> bool {
        at >= self.settle && at < self.end()
    }

    /// An open loop's rounds at `interval`: enough for every client to send until the window
    /// closes, at most `most`.
    pub(super) fn rounds(&self, interval: Duration) -> usize {
        let through = self.end().as_secs_f64();
        let rounds = (through / interval.as_secs_f64()).ceil() as usize + 1;
        rounds.min(self.most)
    }
}

/// What a closed loop measured: the window's seconds, the latencies of the requests completed in
/// it (so items = latencies × items per request), and the mean items per batch formed for them.
pub(super) struct Measured {
    pub(super) secs: f64,
    /// The whole loop's wall time, settling and the last replies included.
    pub(super) wall: f64,
    /// Requests completed over the whole loop.
    pub(super) all: usize,
    pub(super) lat: Vec<f64>,
    pub(super) mean_batch: f64,
}

/// Every client sends its request, waits for the reply and sends the next, from the start until
/// the window ends (or `most` requests each); counts the requests completed within the window. A
/// request in flight when the window ends is awaited (the next case starts with nothing pending)
/// but not counted, so all clients are at work throughout the window: none has finished early
/// and left the server fewer to batch, as a fixed count of rounds per client ends.
pub(super) async fn closed_loop<C, F, Fut>(clients: Vec<Conn<C>>, w: Window, call: F) -> Measured
where
    C: Clone + Send + 'static,
    F: Fn(C, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = u64> + Send,
{
    let start = Instant::now();
    let to = start + w.end();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(c, Conn { client, rt })| {
            let call = call.clone();
            rt.spawn(async move {
                let (mut lat, mut batch, mut all) = (Vec::new(), 0u64, 0usize);
                for _ in 0..w.most {
                    let s = Instant::now();
                    if s >= to {
                        break;
                    }
                    let b = call(client.clone(), c).await;
                    let done = Instant::now();
                    all += 1;
                    if w.holds(done - start) {
                        lat.push((done - s).as_secs_f64());
                        batch += b;
                    }
                }
                (lat, batch, all)
            })
        })
        .collect();
    let (mut lat, mut batch, mut all) = (Vec::new(), 0u64, 0);
    for t in tasks {
        let (l, b, a) = t.await.expect("client task");
        lat.extend(l);
        batch += b;
        all += a;
    }
    Measured::new(start, w, lat, batch, all)
}

impl Measured {
    /// A closed loop started at `start` over window `w`, its clients' work done: the latencies
    /// and batch sizes of the requests answered in the window, and every request answered.
    pub(super) fn new(
        start: Instant,
        w: Window,
        lat: Vec<f64>,
        batch: u64,
        all: usize,
    ) -> Measured {
        let (from, to) = (start + w.settle, start + w.end());
        // Bounded by `most`, the clients may all stop before the window ends.
        let secs = (to.min(Instant::now()) - from.min(to)).as_secs_f64();
        Measured {
            secs,
            wall: start.elapsed().as_secs_f64(),
            all,
            mean_batch: batch as f64 / lat.len().max(1) as f64,
            lat,
        }
    }
}

/// Open loop: each client sends a request every `interval` (the clients' phases spread evenly
/// over one interval) until `w`'s window has closed, whether or not its earlier ones were
/// answered.
pub(super) async fn open_loop<C, F, Fut>(
    clients: Vec<Conn<C>>,
    w: Window,
    interval: Duration,
    call: F,
) -> Paced
where
    C: Clone + Send + 'static,
    F: Fn(C, usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = u64> + Send + 'static,
{
    let t = Instant::now();
    let (n, rounds) = (clients.len(), w.rounds(interval));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(c, Conn { client, rt })| {
            let call = call.clone();
            rt.spawn(async move {
                let start = tokio::time::Instant::now() + interval.mul_f64(c as f64 / n as f64);
                let mut sent = Vec::with_capacity(rounds);
                for r in 0..rounds {
                    tokio::time::sleep_until(start + interval * r as u32).await;
                    let (call, client) = (call.clone(), client.clone());
                    sent.push(tokio::spawn(async move {
                        let s = Instant::now();
                        call(client, c).await;
                        Done::since(t, s)
                    }));
                }
                let mut done = Vec::with_capacity(rounds);
                for h in sent {
                    done.push(h.await.expect("request task"));
                }
                done
            })
        })
        .collect();
    Paced::gather(t, tasks, interval, w).await
}

/// A request of an open loop: when its reply came (from the loop's start) and its latency in
/// seconds.
pub(super) struct Done {
    pub(super) at: Duration,
    pub(super) lat: f64,
}

impl Done {
    /// A request sent at `sent`, its reply in now, of a loop started at `t`.
    pub(super) fn since(t: Instant, sent: Instant) -> Done {
        let now = Instant::now();
        Done {
            at: now - t,
            lat: (now - sent).as_secs_f64(),
        }
    }
}

/// Open loop over a stream per client: client `c` opens its stream, then sends its request every
/// `interval` (the clients' phases spread evenly over one interval) until `w`'s window has
/// closed, without waiting for replies, while reading and checking them as they come (each
/// latency from the request's send to its reply).
pub(super) async fn open_loop_streams<S: Streamed, C: Duplex<S>>(
    clients: Vec<Conn<C>>,
    w: Window,
    interval: Duration,
    calls: S,
) -> Paced {
    let n = clients.len();
    let mut streams = Vec::with_capacity(n);
    for (c, Conn { client, rt }) in clients.into_iter().enumerate() {
        let calls = calls.clone();
        let opened = rt.spawn(async move { client.open(&calls, c).await });
        streams.push((opened.await.expect("stream"), rt));
    }
    let (t, rounds) = (Instant::now(), w.rounds(interval));
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(c, ((mut tx, mut replies), rt))| {
            let calls = calls.clone();
            rt.spawn(async move {
                let start = tokio::time::Instant::now() + interval.mul_f64(c as f64 / n as f64);
                let (sent_tx, mut sent) = tokio::sync::mpsc::unbounded_channel();
                let sending = async {
                    for r in 0..rounds {
                        tokio::time::sleep_until(start + interval * r as u32).await;
                        let _ = sent_tx.send(Instant::now());
                        C::send(&mut tx, &calls, c).await;
                    }
                };
                let reading = async {
                    let mut done = Vec::with_capacity(rounds);
                    for _ in 0..rounds {
                        calls.check(c, C::reply(&mut replies).await);
                        let at = sent.recv().await.expect("sent before its reply");
                        done.push(Done::since(t, at));
                    }
                    done
                };
                tokio::join!(sending, reading).1
            })
        })
        .collect();
    Paced::gather(t, tasks, interval, w).await
}

/// An open loop's outcome: its wall time, its requests, the clients' interval, its window.
pub(super) struct Paced {
    pub(super) secs: f64,
    pub(super) done: Vec<Done>,
    pub(super) interval: Duration,
    pub(super) window: Window,
}

impl Paced {
    /// Waits for the clients' tasks, each giving its requests; the wall time from `t`.
    pub(super) async fn gather(
        t: Instant,
        tasks: Vec<tokio::task::JoinHandle<Vec<Done>>>,
        interval: Duration,
        window: Window,
    ) -> Paced {
        let mut done = Vec::new();
        for task in tasks {
            done.extend(task.await.expect("client task"));
        }
        Paced {
            secs: t.elapsed().as_secs_f64(),
            done,
            interval,
            window,
        }
    }

    /// The latencies of the requests answered in the window.
    pub(super) fn in_window(&self) -> Vec<f64> {
        (self.done.iter())
            .filter(|d| self.window.holds(d.at))
            .map(|d| d.lat)
            .collect()
    }

    /// Reports against the library's batch (`per` items a request) the requests answered in the
    /// window, as a closed loop counts them: the rate the server sustained once the load had
    /// settled and their latencies (a server that falls behind answers fewer, later).
    pub(super) fn report(
        self,
        rep: &mut Report,
        case: &str,
        base: &str,
        label: &str,
        per: usize,
        bytes: u64,
    ) {
        let (all, lat) = (self.done.len(), self.in_window());
        let secs = self.window.measure.as_secs_f64();
        let items = (lat.len() * per) as u64;
        rep.add(GROUP, case, label, items, bytes * items, secs, Some(base));
        let (p50, p99, max) = latencies(lat);
        println!(
            "  open loop: each client every {:.1} ms; in the window latency p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms; the whole loop (first request to last reply) {:.3} M items/s",
            1e3 * self.interval.as_secs_f64(),
            (all * per) as f64 / self.secs / 1e6,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batchcrypt_serve::shards::Shards;

    /// Ten clients on two client threads (which live as long as the shards).
    fn ten_clients() -> (Shards, Vec<Conn<()>>) {
        let shards = Shards::start(2, "test-client").unwrap();
        let conns = (0..10)
            .map(|i| Conn {
                client: (),
                rt: shards.handle(i % 2).clone(),
            })
            .collect();
        (shards, conns)
    }

    /// Ten clients whose every call takes at least 5 ms, in a closed loop.
    fn slow_loop(w: Window) -> Measured {
        let (_shards, conns) = ten_clients();
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(closed_loop(conns, w, |(), _| async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            7
        }))
    }

    #[test]
    fn a_closed_loop_counts_only_its_window() {
        let w = Window {
            settle: Duration::from_millis(30),
            measure: Duration::from_millis(150),
            most: 100_000,
        };
        let m = slow_loop(w);
        // The window's own length, however the calls fell.
        assert!((m.secs - 0.150).abs() < 1e-3, "{}", m.secs);
        // Requests done while settling, or after the window, are not counted.
        assert!(
            !m.lat.is_empty() && m.all > m.lat.len(),
            "{} {}",
            m.all,
            m.lat.len()
        );
        // At most one call in 5 ms per client fits in the window.
        assert!(m.lat.len() <= 10 * 30, "{}", m.lat.len());
        assert!(m.lat.iter().all(|&l| l >= 0.005));
        assert_eq!(m.mean_batch, 7.0);
        assert!(m.wall >= 0.180);
    }

    #[test]
    fn a_closed_loop_stops_at_its_count() {
        let w = Window {
            settle: Duration::ZERO,
            measure: Duration::from_secs(60),
            most: 3,
        };
        let m = slow_loop(w);
        assert_eq!((m.all, m.lat.len()), (30, 30));
        // The window ends with the last reply, not the minute it was given.
        assert!(m.secs >= 0.015 && m.secs < 30.0, "{}", m.secs);
    }

    #[test]
    fn an_open_loop_runs_through_its_window_and_counts_only_it() {
        let w = Window {
            settle: Duration::from_millis(30),
            measure: Duration::from_millis(150),
            most: 100_000,
        };
        let (_shards, conns) = ten_clients();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let every = Duration::from_millis(10);
        let p = rt.block_on(open_loop(conns, w, every, |(), _| async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            7
        }));
        // Every client sent until the window closed: 19 rounds of 10 ms cover its 180 ms.
        assert_eq!(w.rounds(every), 19);
        assert_eq!(p.done.len(), 10 * 19);
        assert!(p
            .done
            .iter()
            .all(|d| d.lat >= 0.005 && d.at.as_secs_f64() >= d.lat));
        assert!(p.secs >= 0.180, "{}", p.secs);
        // Of them, those answered in the window: one per client each 10 ms of its 150, give or
        // take a round each for the phases and late timers on a busy machine.
        let counted = p.in_window();
        assert!((100..=170).contains(&counted.len()), "{}", counted.len());
        // A window longer than `most` rounds allow stops at `most`.
        let w = Window { most: 4, ..w };
        assert_eq!(w.rounds(every), 4);
    }
}

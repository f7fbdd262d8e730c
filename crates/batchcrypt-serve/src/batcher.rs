//! Dynamic batching: requests of one operation from every client merged into one batch for the
//! engine, then split back into one reply per request.
//!
//! A batch forms when the first request arrives. Under no load (no batch of the operation
//! running) it runs at once with whatever is already queued, so a lone small request does not
//! wait. Under load it gathers more requests until `max_delay` after its first one or until
//! `max_items`, then waits for one of `in_flight` slots; requests that arrive meanwhile join it.
//! A request larger than `max_items` runs alone. Requests whose client went away before their
//! batch ran are dropped from it. Within a batch, requests are grouped by their options (a
//! signature format, a PSI party's scalar) and each group runs as one engine call, handed the
//! requests' items as they arrived (packed columns stay packed: nothing is made per item).
//!
//! Nothing is woken per request across threads while batches are busy: a batch gathering under
//! load sleeps until its delay ends or a full batch's items are queued, and a batch's replies go
//! back to each serving thread ([`crate::shards`]) in one task. Woken per request, the batching
//! task and the serving threads each paid a system call, often a context switch, per request
//! (docs/performance.md has the counts).

use crate::metrics::Metrics;
use crate::shards::Home;
use prometheus_client::metrics::gauge::Gauge;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, Notify, Semaphore};
use tonic::Status;

/// How batches form; the same for every operation.
#[derive(Clone, Copy, Debug)]
pub struct BatchConfig {
    /// Under load, the longest a request waits for others to join its batch. 1 ms served
    /// 1,000 closed-loop clients as much as 2 and 3 ms did, at a lower paced latency
    /// (docs/performance.md).
    pub max_delay: Duration,
    /// Items at which a batch stops gathering.
    pub max_items: usize,
    /// The same for hash batches (SHA-256, SHA256d, SM3), whose items cost little each: smaller
    /// batches let one batch's host work run beside another's (the sweep behind the default is
    /// in docs/performance.md).
    pub max_hash_items: usize,
    /// Batches of one operation running at once: more than one overlaps a batch's host work with
    /// another's GPU work; with 1,000 closed-loop clients' ECDSA requests, four served a little
    /// more than three (docs/performance.md).
    pub in_flight: usize,
    /// Items queued per operation beyond which requests are refused (RESOURCE_EXHAUSTED).
    pub max_queued_items: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            max_delay: Duration::from_millis(1),
            max_items: 1 << 20,
            max_hash_items: 1 << 15,
            in_flight: 4,
            max_queued_items: 1 << 24,
        }
    }
}

/// An operation the batcher can merge: the items of many requests with the same `Group` run as
/// one call.
pub trait Batched: Send + Sync + 'static {
    type Group: Eq + Hash + Clone + Send + 'static;
    /// One request's items, as the operation keeps them (a list, or packed columns that a batch
    /// reads in place).
    type Items: Send + 'static;
    type Out: Send + Sync + 'static;
    /// How many items a request holds.
    fn count(items: &Self::Items) -> usize;
    /// Runs the requests of one group as one call; exactly one output per item, in the requests'
    /// order, and the backend.
    fn run(
        &self,
        group: &Self::Group,
        requests: Vec<Self::Items>,
    ) -> Result<Ran<Self::Out>, String>;
    /// Starts a batch's work (which calls [`Self::run`]) on a thread that may block: tokio's
    /// blocking threads unless the operation runs its batches in a pool of its own.
    fn spawn(job: impl FnOnce() + Send + 'static) {
        tokio::task::spawn_blocking(job);
    }
}

pub struct Ran<O> {
    pub outs: Outputs<O>,
    pub backend: String,
}

/// A batch's outputs where the operation left them: a vector, or memory the GPU wrote them into
/// (a hash batch's digests, page-locked), which the batch's replies share until the last is sent.
pub struct Outputs<O>(Box<dyn std::ops::Deref<Target = [O]> + Send + Sync>);

impl<O> Outputs<O> {
    pub fn new(outs: impl std::ops::Deref<Target = [O]> + Send + Sync + 'static) -> Self {
        Outputs(Box::new(outs))
    }
}

impl<O: Send + Sync + 'static> From<Vec<O>> for Outputs<O> {
    fn from(outs: Vec<O>) -> Self {
        Outputs::new(outs)
    }
}

impl<O> std::ops::Deref for Outputs<O> {
    type Target = [O];
    fn deref(&self) -> &[O] {
        &self.0
    }
}

/// What a request gets back.
pub struct Reply<O> {
    pub outs: Outs<O>,
    pub backend: String,
    /// Items in the group the request ran in.
    pub batch_items: usize,
}

/// A request's outputs: its range of its batch's, which all the batch's replies share. The batch
/// thread hands each request a range, copying nothing: each request's thread reads its own part
/// into its reply, in parallel.
pub struct Outs<O> {
    all: Arc<Outputs<O>>,
    range: std::ops::Range<usize>,
}

impl<O> std::ops::Deref for Outs<O> {
    type Target = [O];
    fn deref(&self) -> &[O] {
        &self.all[self.range.clone()]
    }
}

/// Outputs of fixed-size byte strings (digests) as bytes: a reply can share them, not copy them.
impl<const N: usize> AsRef<[u8]> for Outs<[u8; N]> {
    fn as_ref(&self) -> &[u8] {
        self.as_flattened()
    }
}

struct Request<B: Batched> {
    group: B::Group,
    items: B::Items,
    arrived: Instant,
    reply: oneshot::Sender<Result<Reply<B::Out>, Status>>,
    /// The serving thread that waits for the reply, if one does.
    home: Option<Home>,
}

pub struct Batcher<B: Batched> {
    op: &'static str,
    tx: mpsc::UnboundedSender<Request<B>>,
    queued: Arc<AtomicUsize>,
    /// Told when the queued items reach a full batch.
    full: Arc<Notify>,
    config: BatchConfig,
    /// The operation's queue depth, looked up once (a lookup per request locks the family and
    /// allocates its labels).
    queued_gauge: Gauge,
}

impl<B: Batched> Batcher<B> {
    /// Starts the operation's batching task on the current tokio runtime.
    pub fn start(op: &'static str, inner: B, config: BatchConfig, metrics: Arc<Metrics>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let full = Arc::new(Notify::new());
        let queued_gauge = metrics.queued_items.get_or_create(&Metrics::op(op)).clone();
        tokio::spawn(form_batches(
            op,
            Arc::new(inner),
            rx,
            queued.clone(),
            full.clone(),
            queued_gauge.clone(),
            config,
            metrics.clone(),
        ));
        Batcher {
            op,
            tx,
            queued,
            full,
            config,
            queued_gauge,
        }
    }

    /// Whether more items wait than two rounds of full batches (`in_flight` of them, twice):
    /// then reading requests further ahead of their batches only holds memory (page-locked
    /// blocks among it, whose pool then runs out) and lengthens the wait, so request streams
    /// read one at a time until it clears ([`crate::grpc_streams`]).
    pub fn backlogged(&self) -> bool {
        self.queued.load(Ordering::Relaxed) >= 2 * self.config.in_flight * self.config.max_items
    }

    /// Queues `items` and waits for their outputs.
    pub async fn submit(&self, group: B::Group, items: B::Items) -> Result<Reply<B::Out>, Status> {
        let n = B::count(&items);
        if n == 0 {
            return Ok(Reply {
                outs: Outs {
                    all: Arc::new(Vec::new().into()),
                    range: 0..0,
                },
                backend: String::new(),
                batch_items: 0,
            });
        }
        let before = self.queued.fetch_add(n, Ordering::SeqCst);
        if before + n > self.config.max_queued_items {
            self.queued.fetch_sub(n, Ordering::SeqCst);
            return Err(Status::resource_exhausted(format!(
                "{}: {before} items already queued (limit {}); retry later",
                self.op, self.config.max_queued_items
            )));
        }
        if before < self.config.max_items && before + n >= self.config.max_items {
            self.full.notify_waiters();
        }
        self.queued_gauge.set((before + n) as i64);
        let (reply, rx) = oneshot::channel();
        let request = Request {
            group,
            items,
            arrived: Instant::now(),
            reply,
            home: crate::shards::home(),
        };
        if self.tx.send(request).is_err() {
            self.queued.fetch_sub(n, Ordering::SeqCst);
            return Err(Status::unavailable("the server is shutting down"));
        }
        rx.await
            .unwrap_or_else(|_| Err(Status::internal("the batch was dropped before it ran")))
    }
}

/// The operation's loop: forms batches and hands them to blocking threads.
async fn form_batches<B: Batched>(
    op: &'static str,
    inner: Arc<B>,
    mut rx: mpsc::UnboundedReceiver<Request<B>>,
    queued: Arc<AtomicUsize>,
    full: Arc<Notify>,
    queued_gauge: Gauge,
    config: BatchConfig,
    metrics: Arc<Metrics>,
) {
    let slots = Arc::new(Semaphore::new(config.in_flight.max(1)));
    let running = Arc::new(AtomicUsize::new(0));
    let mut carry: Option<Request<B>> = None;
    loop {
        let first = match carry.take() {
            Some(r) => r,
            None => match rx.recv().await {
                Some(r) => r,
                None => break, // every sender gone: the server stopped
            },
        };
        let mut items = B::count(&first.items);
        let until = first.arrived + config.max_delay;
        let mut batch = vec![first];
        // Whatever is queued already joins.
        while items < config.max_items {
            match rx.try_recv() {
                Ok(r) => take(&mut batch, &mut items, &mut carry, r, config.max_items),
                Err(_) => break,
            }
            if carry.is_some() {
                break;
            }
        }
        // Under load, wait a little for more: until the delay ends or a full batch is queued,
        // not woken by each request that comes meanwhile.
        if running.load(Ordering::SeqCst) > 0 && carry.is_none() && items < config.max_items {
            let filled = full.notified();
            tokio::pin!(filled);
            filled.as_mut().enable();
            if queued.load(Ordering::SeqCst) < config.max_items {
                tokio::select! {
                    () = filled => {}
                    () = tokio::time::sleep_until(until.into()) => {}
                }
            }
        }
        let permit = slots.clone().acquire_owned().await.expect("never closed");
        // Requests that came while gathering or waiting for a slot join.
        while items < config.max_items && carry.is_none() {
            match rx.try_recv() {
                Ok(r) => take(&mut batch, &mut items, &mut carry, r, config.max_items),
                Err(_) => break,
            }
        }
        queued.fetch_sub(items, Ordering::SeqCst);
        queued_gauge.set(queued.load(Ordering::SeqCst) as i64);
        running.fetch_add(1, Ordering::SeqCst);
        let (inner, running, metrics) = (inner.clone(), running.clone(), metrics.clone());
        B::spawn(move || {
            run_batch(op, &*inner, batch, &metrics);
            running.fetch_sub(1, Ordering::SeqCst);
            drop(permit);
        });
    }
}

/// Adds `r` to the batch, or keeps it for the next one when it would overflow a batch that has
/// items already.
fn take<B: Batched>(
    batch: &mut Vec<Request<B>>,
    items: &mut usize,
    carry: &mut Option<Request<B>>,
    r: Request<B>,
    max_items: usize,
) {
    let n = B::count(&r.items);
    if *items + n > max_items && *items > 0 {
        *carry = Some(r);
    } else {
        *items += n;
        batch.push(r);
    }
}

/// Runs one batch group by group and answers each request.
fn run_batch<B: Batched>(op: &'static str, inner: &B, batch: Vec<Request<B>>, metrics: &Metrics) {
    let started = Instant::now();
    let (queue, total_seconds) = (
        metrics.stage_histogram(op, "queue"),
        metrics.stage_histogram(op, "total"),
    );
    let mut groups: HashMap<B::Group, Vec<Request<B>>> = HashMap::new();
    for r in batch {
        if r.reply.is_closed() {
            continue; // its client went away: nothing to compute
        }
        queue.observe((started - r.arrived).as_secs_f64());
        groups.entry(r.group.clone()).or_default().push(r);
    }
    for (group, requests) in groups {
        let counts: Vec<usize> = requests.iter().map(|r| B::count(&r.items)).collect();
        let total: usize = counts.iter().sum();
        let mut parts = Vec::with_capacity(requests.len());
        let mut replies = Vec::with_capacity(requests.len());
        for r in requests {
            parts.push(r.items);
            replies.push((r.reply, r.arrived, r.home));
        }
        metrics
            .batch_items
            .get_or_create(&Metrics::op(op))
            .observe(total as f64);
        let t = Instant::now();
        let ran = inner.run(&group, parts);
        let seconds = t.elapsed().as_secs_f64();
        metrics.stage(op, "run", seconds);
        match ran {
            Ok(ran) if ran.outs.len() == total => {
                metrics
                    .busy_seconds
                    .get_or_create(&vec![
                        ("op", op.to_string()),
                        ("backend", ran.backend.clone()),
                    ])
                    .inc_by(seconds);
                let all = Arc::new(ran.outs);
                let mut at = 0;
                let mut homes = Homes::default();
                for ((reply, arrived, home), n) in replies.into_iter().zip(counts) {
                    total_seconds.observe(arrived.elapsed().as_secs_f64());
                    let r = Reply {
                        outs: Outs {
                            all: all.clone(),
                            range: at..at + n,
                        },
                        backend: ran.backend.clone(),
                        batch_items: total,
                    };
                    homes.answer(home, reply, Ok(r));
                    at += n;
                }
                homes.deliver();
            }
            Ok(ran) => {
                let why = format!("{op}: {} outputs for {total} items", ran.outs.len());
                for (reply, _, _) in replies {
                    let _ = reply.send(Err(Status::internal(why.clone())));
                }
            }
            Err(why) => {
                // A batch of checked requests fails only on an engine fault (a GPU error): every
                // request in it gets the error, none a wrong answer.
                for (reply, _, _) in replies {
                    let _ = reply.send(Err(Status::internal(format!("{op}: {why}"))));
                }
            }
        }
    }
}

type Answer<O> = (
    oneshot::Sender<Result<Reply<O>, Status>>,
    Result<Reply<O>, Status>,
);

/// A batch's replies gathered by the serving thread that waits for them, then handed to each in
/// one task: sent one by one from the batch's thread, each reply woke its thread on its own.
struct Homes<O> {
    by_id: HashMap<usize, (Home, Vec<Answer<O>>)>,
}

impl<O> Default for Homes<O> {
    fn default() -> Self {
        Homes {
            by_id: HashMap::new(),
        }
    }
}

impl<O: Send + Sync + 'static> Homes<O> {
    /// Keeps the reply for its home's task; one without a home is sent at once.
    fn answer(
        &mut self,
        home: Option<Home>,
        tx: oneshot::Sender<Result<Reply<O>, Status>>,
        r: Result<Reply<O>, Status>,
    ) {
        match home {
            Some(h) => self
                .by_id
                .entry(h.id())
                .or_insert_with(|| (h, Vec::new()))
                .1
                .push((tx, r)),
            None => {
                let _ = tx.send(r);
            }
        }
    }

    /// A task on each home sends its replies. A home whose runtime has stopped drops them, and
    /// their requests, which ran there, are gone with it.
    fn deliver(self) {
        for (_, (home, answers)) in self.by_id {
            home.handle().spawn(async move {
                for (tx, r) in answers {
                    let _ = tx.send(r);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// An operation that doubles numbers, holding each batch until the test opens its gate.
    struct Gated {
        gate: Mutex<std::sync::mpsc::Receiver<()>>,
        started: Mutex<std::sync::mpsc::Sender<()>>,
    }

    impl Batched for Gated {
        type Group = u8;
        type Items = Vec<u32>;
        type Out = u32;
        fn count(items: &Vec<u32>) -> usize {
            items.len()
        }
        fn run(&self, g: &u8, requests: Vec<Vec<u32>>) -> Result<Ran<u32>, String> {
            let items: Vec<u32> = requests.into_iter().flatten().collect();
            let _ = self.started.lock().unwrap().send(());
            self.gate
                .lock()
                .unwrap()
                .recv()
                .map_err(|e| e.to_string())?;
            Ok(Ran {
                outs: (items.iter().map(|x| 2 * x + *g as u32))
                    .collect::<Vec<_>>()
                    .into(),
                backend: "test".into(),
            })
        }
    }

    type Started = std::sync::mpsc::Receiver<()>;

    /// The batcher, the gate's key, and a signal for each batch that started.
    fn gated(config: BatchConfig) -> (Arc<Batcher<Gated>>, std::sync::mpsc::Sender<()>, Started) {
        let (open, gate) = std::sync::mpsc::channel();
        let (started, signal) = std::sync::mpsc::channel();
        let op = Gated {
            gate: Mutex::new(gate),
            started: Mutex::new(started),
        };
        (
            Arc::new(Batcher::start("test", op, config, Arc::default())),
            open,
            signal,
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_that_arrive_while_a_batch_runs_merge() {
        let (b, open, started) = gated(BatchConfig {
            max_delay: Duration::from_secs(30),
            max_items: 6,
            in_flight: 1,
            max_queued_items: 100,
            ..BatchConfig::default()
        });
        let submit = |group: u8, items: Vec<u32>| {
            let b = b.clone();
            tokio::spawn(async move { b.submit(group, items).await })
        };
        let first = submit(0, vec![1]);
        // The first runs, held at the gate; the others queue behind it.
        tokio::task::spawn_blocking(move || started.recv())
            .await
            .unwrap()
            .unwrap();
        let two = submit(0, vec![10, 11]);
        let three = submit(0, vec![20, 21, 22]);
        let four = submit(1, vec![30]);
        while b.queued.load(Ordering::SeqCst) < 6 {
            tokio::task::yield_now().await;
        }
        // Six items wait: not yet two rounds of full batches (twelve items).
        assert!(!b.backlogged());
        let five = submit(0, vec![7; 6]);
        while b.queued.load(Ordering::SeqCst) < 12 {
            tokio::task::yield_now().await;
        }
        assert!(b.backlogged());
        // The first batch, the second's two groups, then the third (five's).
        for _ in 0..4 {
            open.send(()).unwrap();
        }
        let first = first.await.unwrap().unwrap();
        assert_eq!((&*first.outs, first.batch_items), (&[2][..], 1));
        // Well within the 30 s delay: the batch stopped gathering once it was full.
        let within = |t| tokio::time::timeout(Duration::from_secs(10), t);
        let (two, three, four) = (
            within(two).await.unwrap().unwrap().unwrap(),
            within(three).await.unwrap().unwrap().unwrap(),
            within(four).await.unwrap().unwrap().unwrap(),
        );
        assert_eq!(*two.outs, [20, 22]);
        assert_eq!(*three.outs, [40, 42, 44]);
        assert_eq!(*four.outs, [61]);
        let five = within(five).await.unwrap().unwrap().unwrap();
        assert_eq!(*five.outs, [14; 6]);
        assert!(!b.backlogged());
        // Two and three ran as one call of five items; four, with other options, as its own.
        assert_eq!(
            (two.batch_items, three.batch_items, four.batch_items),
            (5, 5, 1)
        );
    }

    /// Doubles numbers, at once.
    struct Double;

    impl Batched for Double {
        type Group = ();
        type Items = Vec<u32>;
        type Out = u32;
        fn count(items: &Vec<u32>) -> usize {
            items.len()
        }
        fn run(&self, _: &(), requests: Vec<Vec<u32>>) -> Result<Ran<u32>, String> {
            Ok(Ran {
                outs: (requests.into_iter().flatten().map(|x| 2 * x))
                    .collect::<Vec<_>>()
                    .into(),
                backend: "test".into(),
            })
        }
    }

    #[test]
    fn replies_reach_requests_waiting_on_serving_threads() {
        let shards = crate::shards::Shards::start(2, "batcher-test").unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let b = Arc::new(rt.block_on(async {
            Batcher::start("test", Double, BatchConfig::default(), Arc::default())
        }));
        let calls: Vec<_> = (0..12u32)
            .map(|i| {
                let b = b.clone();
                shards.handle(i as usize).spawn(async move {
                    assert!(crate::shards::home().is_some());
                    let r = b.submit((), vec![i, i + 100]).await.unwrap();
                    r.outs.to_vec()
                })
            })
            .collect();
        rt.block_on(async {
            for (i, c) in calls.into_iter().enumerate() {
                let outs = tokio::time::timeout(Duration::from_secs(10), c)
                    .await
                    .expect("every reply delivered")
                    .unwrap();
                assert_eq!(outs, [2 * i as u32, 2 * (i as u32 + 100)]);
            }
        });
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lone_request_does_not_wait_for_the_delay() {
        let (b, open, _) = gated(BatchConfig {
            max_delay: Duration::from_secs(30),
            ..BatchConfig::default()
        });
        open.send(()).unwrap();
        let t = Instant::now();
        let r = tokio::time::timeout(Duration::from_secs(10), b.submit(3, vec![4, 5]))
            .await
            .expect("ran without waiting for the 30 s delay")
            .unwrap();
        assert_eq!(*r.outs, [11, 13]);
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_refuses_with_resource_exhausted() {
        let (b, _open, started) = gated(BatchConfig {
            max_queued_items: 4,
            in_flight: 1,
            ..BatchConfig::default()
        });
        let _held = tokio::spawn({
            let b = b.clone();
            async move { b.submit(0, vec![1]).await }
        });
        tokio::task::spawn_blocking(move || started.recv())
            .await
            .unwrap()
            .unwrap();
        let _queued = tokio::spawn({
            let b = b.clone();
            async move { b.submit(0, vec![1, 2, 3]).await }
        });
        while b.queued.load(Ordering::SeqCst) < 3 {
            tokio::task::yield_now().await;
        }
        let e = b.submit(0, vec![0; 2]).await.err().expect("refused");
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
    }
}

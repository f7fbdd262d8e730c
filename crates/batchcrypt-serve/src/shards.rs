//! Threads that each run a single-threaded tokio runtime. The server hands every connection it
//! accepts to one of them for the connection's whole life, so the connection's tasks (its HTTP/2
//! driver, its streams' bodies, the handlers) wake one another on one thread instead of across a
//! work-stealing pool: no cross-core wake-ups and no contention on the connection's state per
//! message. Work that outlives a call (the batchers, the prover) stays on the runtime that
//! started the server.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// A shard as seen from work it started: which shard (an id unique in the process) and its
/// runtime, so that results computed elsewhere can be handed back to it in one task.
#[derive(Clone)]
pub struct Home {
    id: usize,
    handle: Handle,
}

impl Home {
    pub fn id(&self) -> usize {
        self.id
    }

    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

thread_local! {
    static HOME: std::cell::RefCell<Option<Home>> = const { std::cell::RefCell::new(None) };
}

/// The shard the calling thread runs, if it runs one.
pub fn home() -> Option<Home> {
    HOME.with(|h| h.borrow().clone())
}

/// The threads and their runtimes; dropping it stops and joins them (after their tasks end).
pub struct Shards {
    handles: Vec<Handle>,
    stops: Vec<oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Shards {
    /// `n` threads (at least one) named `name-<i>`.
    pub fn start(n: usize, name: &str) -> std::io::Result<Shards> {
        let mut shards = Shards {
            handles: Vec::new(),
            stops: Vec::new(),
            threads: Vec::new(),
        };
        for i in 0..n.max(1) {
            let (handle_tx, handle_rx) = std_mpsc::channel();
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let rt = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt,
                        Err(e) => {
                            let _ = handle_tx.send(Err(e));
                            return;
                        }
                    };
                    static IDS: AtomicUsize = AtomicUsize::new(0);
                    HOME.with(|h| {
                        *h.borrow_mut() = Some(Home {
                            id: IDS.fetch_add(1, Ordering::Relaxed),
                            handle: rt.handle().clone(),
                        })
                    });
                    let _ = handle_tx.send(Ok(rt.handle().clone()));
                    rt.block_on(async {
                        let _ = stop_rx.await;
                    });
                })?;
            let handle = handle_rx
                .recv()
                .map_err(|_| std::io::Error::other("a serving thread ended at start"))??;
            shards.handles.push(handle);
            shards.stops.push(stop_tx);
            shards.threads.push(thread);
        }
        Ok(shards)
    }

    pub fn len(&self) -> usize {
        self.handles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// The runtime of shard `i` (modulo their number).
    pub fn handle(&self, i: usize) -> &Handle {
        &self.handles[i % self.handles.len()]
    }
}

impl Drop for Shards {
    fn drop(&mut self) {
        for s in self.stops.drain(..) {
            let _ = s.send(());
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_id() -> Option<usize> {
        home().map(|h| h.id())
    }

    #[test]
    fn each_shard_runs_its_tasks_on_its_own_thread_and_stops_when_dropped() {
        let shards = Shards::start(3, "shard-test").unwrap();
        assert_eq!(shards.len(), 3);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let names: Vec<String> = rt.block_on(async {
            let mut names = Vec::new();
            for i in 0..6 {
                let name = shards.handle(i).spawn(async {
                    // A task spawned from a shard's task stays on that shard.
                    tokio::spawn(async {
                        std::thread::current()
                            .name()
                            .unwrap_or_default()
                            .to_string()
                    })
                    .await
                    .unwrap()
                });
                names.push(name.await.unwrap());
            }
            names
        });
        assert_eq!(
            names,
            ["shard-test-0", "shard-test-1", "shard-test-2"].repeat(2)
        );
        // Each shard knows itself: its id, distinct from the others', and its runtime.
        let ids: Vec<usize> = rt.block_on(async {
            let mut ids = Vec::new();
            for i in 0..3 {
                let home = shards.handle(i).spawn(async { home().unwrap() });
                let home = home.await.unwrap();
                let again = home.handle().spawn(async { home_id() });
                assert_eq!(again.await.unwrap(), Some(home.id()));
                ids.push(home.id());
            }
            ids
        });
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
        assert!(home().is_none(), "the test's thread runs no shard");
        let handle = shards.handle(0).clone();
        drop(shards);
        // The runtime is gone with its thread: nothing more runs there.
        let late = handle.spawn(async {});
        assert!(rt.block_on(late).is_err());
    }
}

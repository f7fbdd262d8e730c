//! The durable proof queue: circuits and jobs in SQLite (write-ahead log, full sync), so a job
//! is accepted only once it is on disk, and a crash loses none.
//!
//! Exactly once: a job moves QUEUED → RUNNING → DONE by guarded updates (`WHERE state = ...`),
//! so a result is recorded only by the run that holds the job; on opening, jobs left RUNNING by a
//! crash go back to QUEUED and run again (their earlier run recorded nothing). `completions`
//! counts recorded results (1 for every done job); the tests hold the store to it.

use crate::proto::JobState;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::Mutex;

pub struct Store {
    conn: Mutex<Connection>,
}

#[derive(Clone, Debug)]
pub struct JobRow {
    pub id: String,
    pub circuit: String,
    pub state: JobState,
    pub error: String,
    pub priority: i32,
    pub attempts: u32,
    pub deadline_ms: i64,
    pub submitted_ms: i64,
    pub completions: u32,
}

pub struct JobResult {
    pub proof: String,
    pub public: String,
    pub trace: String,
}

type Sql<T> = Result<T, String>;

fn sql<T>(r: rusqlite::Result<T>) -> Sql<T> {
    r.map_err(|e| format!("job store: {e}"))
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

const JOB_COLUMNS: &str =
    "id, circuit, state, error, priority, attempts, deadline_ms, submitted_ms, completions";

fn job_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobRow> {
    Ok(JobRow {
        id: r.get(0)?,
        circuit: r.get(1)?,
        state: JobState::try_from(r.get::<_, i32>(2)?).unwrap_or(JobState::Failed),
        error: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
        priority: r.get(4)?,
        attempts: r.get(5)?,
        deadline_ms: r.get(6)?,
        submitted_ms: r.get(7)?,
        completions: r.get(8)?,
    })
}

impl Store {
    /// Opens (or creates) the store; jobs a crash left running are queued again. Returns the
    /// store and how many jobs were requeued.
    pub fn open(path: &Path) -> Sql<(Store, usize)> {
        let conn = sql(Connection::open(path))?;
        sql(conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             PRAGMA busy_timeout = 5000;
             CREATE TABLE IF NOT EXISTS circuits (
                 id TEXT PRIMARY KEY, name TEXT NOT NULL, path TEXT NOT NULL,
                 registered_ms INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS jobs (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 id TEXT NOT NULL UNIQUE,
                 request_id TEXT UNIQUE,
                 circuit TEXT NOT NULL,
                 witness BLOB NOT NULL,
                 priority INTEGER NOT NULL,
                 deadline_ms INTEGER NOT NULL,
                 submitted_ms INTEGER NOT NULL,
                 state INTEGER NOT NULL,
                 attempts INTEGER NOT NULL DEFAULT 0,
                 completions INTEGER NOT NULL DEFAULT 0,
                 error TEXT, proof TEXT, public TEXT, trace TEXT);
             CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (state, priority DESC, seq);",
        ))?;
        let requeued = sql(conn.execute(
            "UPDATE jobs SET state = ?1 WHERE state = ?2",
            params![JobState::Queued as i32, JobState::Running as i32],
        ))?;
        Ok((
            Store {
                conn: Mutex::new(conn),
            },
            requeued,
        ))
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn add_circuit(&self, id: &str, name: &str, path: &Path) -> Sql<()> {
        sql(self.conn().execute(
            "INSERT OR REPLACE INTO circuits (id, name, path, registered_ms) VALUES (?1, ?2, ?3, ?4)",
            params![id, name, path.to_string_lossy(), now_ms()],
        ))
        .map(drop)
    }

    /// Every registered circuit: (id, name, path of its .zkey).
    pub fn circuits(&self) -> Sql<Vec<(String, String, String)>> {
        let conn = self.conn();
        let mut st = sql(conn.prepare("SELECT id, name, path FROM circuits"))?;
        let rows = sql(st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))))?;
        sql(rows.collect())
    }

    /// Queues a job, or returns the one already submitted under `request_id` (`false`: not new).
    pub fn submit(
        &self,
        request_id: &str,
        circuit: &str,
        witness: &[u8],
        priority: i32,
        deadline_ms: i64,
    ) -> Sql<(JobRow, bool)> {
        let mut conn = self.conn();
        let tx = sql(conn.transaction())?;
        let rid = (!request_id.is_empty()).then_some(request_id);
        if let Some(rid) = rid {
            let q = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE request_id = ?1");
            if let Some(row) = sql(tx.query_row(&q, [rid], job_row).optional())? {
                return Ok((row, false));
            }
        }
        let id = hex::encode(rand::random::<[u8; 12]>());
        sql(tx.execute(
            "INSERT INTO jobs (id, request_id, circuit, witness, priority, deadline_ms, submitted_ms, state)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![id, rid, circuit, witness, priority, deadline_ms, now_ms(), JobState::Queued as i32],
        ))?;
        let q = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1");
        let row = sql(tx.query_row(&q, [&id], job_row))?;
        sql(tx.commit())?;
        Ok((row, true))
    }

    pub fn job(&self, id: &str) -> Sql<Option<JobRow>> {
        let q = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1");
        sql(self.conn().query_row(&q, [id], job_row).optional())
    }

    /// Queued jobs in the order they should start: priority, then submission.
    pub fn queued(&self, limit: usize) -> Sql<Vec<JobRow>> {
        let conn = self.conn();
        let q = format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE state = ?1 ORDER BY priority DESC, seq LIMIT ?2"
        );
        let mut st = sql(conn.prepare(&q))?;
        let rows = sql(st.query_map(params![JobState::Queued as i32, limit as i64], job_row))?;
        sql(rows.collect())
    }

    /// QUEUED → RUNNING; the witness, or None when the job is no longer queued.
    pub fn start(&self, id: &str) -> Sql<Option<Vec<u8>>> {
        let mut conn = self.conn();
        let tx = sql(conn.transaction())?;
        let n = sql(tx.execute(
            "UPDATE jobs SET state = ?1, attempts = attempts + 1 WHERE id = ?2 AND state = ?3",
            params![JobState::Running as i32, id, JobState::Queued as i32],
        ))?;
        if n == 0 {
            return Ok(None);
        }
        let w: Vec<u8> =
            sql(tx.query_row("SELECT witness FROM jobs WHERE id = ?1", [id], |r| r.get(0)))?;
        sql(tx.commit())?;
        Ok(Some(w))
    }

    /// RUNNING → DONE with the result; false when the job was cancelled meanwhile.
    pub fn finish(&self, id: &str, result: &JobResult) -> Sql<bool> {
        let n = sql(self.conn().execute(
            "UPDATE jobs SET state = ?1, proof = ?2, public = ?3, trace = ?4, witness = x'',
                 completions = completions + 1
             WHERE id = ?5 AND state = ?6",
            params![
                JobState::Done as i32,
                result.proof,
                result.public,
                result.trace,
                id,
                JobState::Running as i32
            ],
        ))?;
        Ok(n == 1)
    }

    /// Ends a job that has not finished: FAILED, CANCELLED or EXPIRED, with why.
    pub fn end(&self, id: &str, state: JobState, error: &str) -> Sql<bool> {
        let n = sql(self.conn().execute(
            "UPDATE jobs SET state = ?1, error = ?2, witness = x''
             WHERE id = ?3 AND state IN (?4, ?5)",
            params![
                state as i32,
                error,
                id,
                JobState::Queued as i32,
                JobState::Running as i32
            ],
        ))?;
        Ok(n == 1)
    }

    pub fn result(&self, id: &str) -> Sql<Option<JobResult>> {
        sql(self
            .conn()
            .query_row(
                "SELECT proof, public, trace FROM jobs WHERE id = ?1 AND state = ?2",
                params![id, JobState::Done as i32],
                |r| {
                    Ok(JobResult {
                        proof: r.get(0)?,
                        public: r.get(1)?,
                        trace: r.get(2)?,
                    })
                },
            )
            .optional())
    }

    /// Jobs per state.
    pub fn counts(&self) -> Sql<Vec<(JobState, i64)>> {
        let conn = self.conn();
        let mut st = sql(conn.prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state"))?;
        let rows = sql(st.query_map([], |r| {
            Ok((
                JobState::try_from(r.get::<_, i32>(0)?).unwrap_or(JobState::Failed),
                r.get(1)?,
            ))
        }))?;
        sql(rows.collect())
    }

    /// Every job, for tests and inspection.
    pub fn jobs(&self) -> Sql<Vec<JobRow>> {
        let conn = self.conn();
        let q = format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY seq");
        let mut st = sql(conn.prepare(&q))?;
        let rows = sql(st.query_map([], job_row))?;
        sql(rows.collect())
    }
}

//! `BATCHCRYPT_BENCH_PROFILE=file`: where the run spends its CPU time, sampled over all of its
//! threads, written when it ends as collapsed stacks (a line per stack: the thread's name, then
//! its frames from the outermost, `;` between them, and the count of samples), which flame graph
//! tools read. Needs the build's feature `profile`.

pub struct Profile {
    #[cfg(feature = "profile")]
    running: Option<(pprof::ProfilerGuard<'static>, String)>,
}

impl Profile {
    /// Starts sampling where the variable names a file.
    pub fn start() -> anyhow::Result<Profile> {
        let path = std::env::var("BATCHCRYPT_BENCH_PROFILE").ok();
        #[cfg(feature = "profile")]
        {
            let running = match path {
                Some(path) => Some((
                    pprof::ProfilerGuardBuilder::default()
                        .frequency(499)
                        // Unwinding out of these can deadlock or crash.
                        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
                        .build()?,
                    path,
                )),
                None => None,
            };
            Ok(Profile { running })
        }
        #[cfg(not(feature = "profile"))]
        match path {
            Some(_) => anyhow::bail!(
                "BATCHCRYPT_BENCH_PROFILE needs a build with the feature profile (cargo build --release -p batchcrypt-bench --features profile)"
            ),
            None => Ok(Profile {}),
        }
    }

    /// Writes the samples taken, if any.
    pub fn finish(self) -> anyhow::Result<()> {
        #[cfg(feature = "profile")]
        if let Some((guard, path)) = self.running {
            use std::fmt::Write;
            let report = guard.report().build()?;
            let mut out = String::new();
            for (frames, count) in &report.data {
                let mut line = frames.thread_name_or_id();
                for frame in frames.frames.iter().rev() {
                    for symbol in frame.iter().rev() {
                        line.push(';');
                        line.push_str(&symbol.name());
                    }
                }
                writeln!(out, "{line} {count}")?;
            }
            std::fs::write(&path, out)?;
            println!("CPU samples written to {path}");
        }
        Ok(())
    }
}

//! Connections as both ends of the service read them.

/// A connection read through a buffer of its own. HTTP/2's reader asks for at most 8 KiB at a
/// time (its frame buffer's size), so a message of 16 KiB took two reads and a third that found
/// nothing: three system calls where one read into a larger buffer takes it all, and, being
/// short, tells the reactor to wait for more instead of trying again. Both ends read through it.
pub struct ReadBuffered<S>(tokio::io::BufReader<S>);

impl<S: tokio::io::AsyncRead> ReadBuffered<S> {
    /// Bytes read at once: a message of a few hundred items with room to spare.
    const BUFFER: usize = 32 << 10;

    pub fn new(s: S) -> Self {
        ReadBuffered(tokio::io::BufReader::with_capacity(Self::BUFFER, s))
    }
}

impl<S: tonic::transport::server::Connected + tokio::io::AsyncRead>
    tonic::transport::server::Connected for ReadBuffered<S>
{
    type ConnectInfo = S::ConnectInfo;
    fn connect_info(&self) -> S::ConnectInfo {
        self.0.get_ref().connect_info()
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for ReadBuffered<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite
    for ReadBuffered<S>
{
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// The open-files limit a server asks for: Linux's default ceiling per process (`fs.nr_open`),
/// past which raising the limit fails.
pub(crate) const OPEN_FILES_WANTED: u64 = 1 << 20;

/// Raises this process's soft limit on open files toward `want` (at most the hard limit) and
/// gives the limit in force. Every connection and shared-memory region holds a descriptor, and
/// the usual soft limit, 1,024, is fewer than the clients a server is built for: past it, new
/// connections are refused.
pub fn raise_open_files(want: u64) -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 1024;
        }
        if r.rlim_cur < want {
            let raised = libc::rlimit {
                rlim_cur: want.min(r.rlim_max),
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                r = raised;
            }
        }
    }
    r.rlim_cur
}

/// This process's soft limit on open files.
pub(crate) fn open_files_limit() -> u64 {
    raise_open_files(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_open_files_limit_rises_to_what_is_asked_within_the_hard_limit() {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes only the struct it is given.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
        let want = r.rlim_max.min(4096);
        assert_eq!(super::raise_open_files(want), want.max(r.rlim_cur));
        assert_eq!(super::open_files_limit(), want.max(r.rlim_cur));
    }
}

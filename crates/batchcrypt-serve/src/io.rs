//! Connections as both ends of the service read them.

/// A connection read through a buffer of its own. HTTP/2's reader asks for at most 8 KiB at a
/// time (its frame buffer's size), so a message of 16 KiB took two reads and a third that found
/// nothing: three system calls where one read into a larger buffer takes it all, and, being
/// short, tells the reactor to wait for more instead of trying again. Both ends read through it.
pub struct ReadBuffered<S>(tokio::io::BufReader<S>);

impl<S: tokio::io::AsyncRead> ReadBuffered<S> {
    /// Bytes a client reads at once: a reply of a few hundred items with room to spare.
    const BUFFER: usize = 32 << 10;
    /// Bytes a server reads at once: a connection may carry many clients' streams (a process's
    /// callers sharing its channel), and a read then takes several of their requests. Only the
    /// pages a read fills are touched.
    const SERVER_BUFFER: usize = 256 << 10;

    pub fn new(s: S) -> Self {
        ReadBuffered(tokio::io::BufReader::with_capacity(Self::BUFFER, s))
    }

    /// A server's end of a connection.
    pub(crate) fn serving(s: S) -> Self {
        ReadBuffered(tokio::io::BufReader::with_capacity(Self::SERVER_BUFFER, s))
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

/// A connection whose writes are gathered until a flush that follows no new write.
///
/// HTTP/2's writer holds one large DATA frame at a time and writes it (a system call, and a
/// wake-up of the peer's reader) before it takes the next, so a connection replying on many
/// streams made a call per reply. Here each write is copied into a buffer, and a flush right
/// after writes only asks for the task to be polled again: the writer's next pass, or that
/// poll, flushes with nothing new (or reads), and the whole buffer goes out in one call.
pub struct WriteGathered<S> {
    io: S,
    buf: Vec<u8>,
    /// How much of `buf` is written.
    sent: usize,
    /// Bytes were buffered since the last flush.
    fresh: bool,
}

impl<S> WriteGathered<S> {
    /// Bytes held before they are written whether or not a flush asked.
    const MOST: usize = 256 << 10;

    pub fn new(io: S) -> Self {
        WriteGathered {
            io,
            buf: Vec::new(),
            sent: 0,
            fresh: false,
        }
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> WriteGathered<S> {
    /// Writes out what is held.
    fn poll_drain(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        while self.sent < self.buf.len() {
            let n = std::task::ready!(
                std::pin::Pin::new(&mut self.io).poll_write(cx, &self.buf[self.sent..])
            )?;
            if n == 0 {
                return std::task::Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.buf.clear();
        self.sent = 0;
        std::task::Poll::Ready(Ok(()))
    }

    /// Makes room for `len` more bytes: what is held goes out first if they would not fit.
    fn poll_room(
        &mut self,
        cx: &mut std::task::Context<'_>,
        len: usize,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.buf.len() + len > Self::MOST {
            std::task::ready!(self.poll_drain(cx))?;
        }
        std::task::Poll::Ready(Ok(()))
    }
}

impl<S: tonic::transport::server::Connected> tonic::transport::server::Connected
    for WriteGathered<S>
{
    type ConnectInfo = S::ConnectInfo;
    fn connect_info(&self) -> S::ConnectInfo {
        self.io.connect_info()
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> tokio::io::AsyncRead
    for WriteGathered<S>
{
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let s = self.get_mut();
        // What a put-off flush holds goes out before a read: a reader that flushes once and then
        // waits for the answer (a TLS handshake) would otherwise wait for ever.
        if let std::task::Poll::Ready(Err(e)) = s.poll_drain(cx) {
            return std::task::Poll::Ready(Err(e));
        }
        std::pin::Pin::new(&mut s.io).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WriteGathered<S> {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.poll_write_vectored(cx, &[std::io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let s = self.get_mut();
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        std::task::ready!(s.poll_room(cx, len))?;
        if s.buf.is_empty() && len > Self::MOST {
            return std::pin::Pin::new(&mut s.io).poll_write_vectored(cx, bufs);
        }
        for b in bufs {
            s.buf.extend_from_slice(b);
        }
        s.fresh = true;
        std::task::Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let s = self.get_mut();
        if std::mem::take(&mut s.fresh) {
            // More may follow in this pass of the writer; a flush with nothing new sends it all.
            cx.waker().wake_by_ref();
            return std::task::Poll::Ready(Ok(()));
        }
        std::task::ready!(s.poll_drain(cx))?;
        std::pin::Pin::new(&mut s.io).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let s = self.get_mut();
        s.fresh = false;
        std::task::ready!(s.poll_drain(cx))?;
        std::pin::Pin::new(&mut s.io).poll_shutdown(cx)
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
    use super::WriteGathered;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

    struct Wakes(AtomicUsize);
    impl futures_util::task::ArcWake for Wakes {
        fn wake_by_ref(me: &Arc<Self>) {
            me.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// What `b` has to read now, without waiting.
    fn ready_bytes(b: &mut tokio::io::DuplexStream) -> Vec<u8> {
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut out = vec![0u8; 1 << 16];
        let mut buf = ReadBuf::new(&mut out);
        match Pin::new(b).poll_read(&mut cx, &mut buf) {
            Poll::Ready(Ok(())) => buf.filled().to_vec(),
            _ => Vec::new(),
        }
    }

    #[tokio::test]
    async fn writes_wait_for_a_flush_with_nothing_new_or_a_read() {
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let mut w = WriteGathered::new(a);
        let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
        let waker = futures_util::task::waker(wakes.clone());
        let mut cx = Context::from_waker(&waker);

        // A flush right after writes sends nothing and asks to be polled again.
        w.write_all(b"one ").await.unwrap();
        w.write_all(b"two").await.unwrap();
        assert!(matches!(
            Pin::new(&mut w).poll_flush(&mut cx),
            Poll::Ready(Ok(()))
        ));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert!(ready_bytes(&mut b).is_empty());
        // The next flush, with nothing new, sends both writes at once.
        assert!(matches!(
            Pin::new(&mut w).poll_flush(&mut cx),
            Poll::Ready(Ok(()))
        ));
        assert_eq!(ready_bytes(&mut b), b"one two");

        // A read sends what a put-off flush held.
        w.write_all(b"three").await.unwrap();
        assert!(matches!(
            Pin::new(&mut w).poll_flush(&mut cx),
            Poll::Ready(Ok(()))
        ));
        let mut into = [0u8; 8];
        let mut buf = ReadBuf::new(&mut into);
        assert!(Pin::new(&mut w).poll_read(&mut cx, &mut buf).is_pending());
        assert_eq!(ready_bytes(&mut b), b"three");

        // A write larger than the buffer holds goes straight out; shutdown sends what is held.
        let large = vec![7u8; WriteGathered::<()>::MOST + 1];
        w.write_all(&large).await.unwrap();
        w.write_all(b"four").await.unwrap();
        w.shutdown().await.unwrap();
        let mut rest = Vec::new();
        b.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest.len(), large.len() + 4);
        assert_eq!(&rest[large.len()..], b"four");
    }

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

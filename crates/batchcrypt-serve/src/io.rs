//! Connections as both ends of the service read them.

/// A connection read through a buffer of its own. HTTP/2's reader asks for at most 8 KiB at a
/// time (its frame buffer's size), so a message of 16 KiB took two reads and a third that found
/// nothing: three system calls where one read into a larger buffer takes it all, and, being
/// short, tells the reactor to wait for more instead of trying again. Both ends read through it.
pub(crate) struct ReadBuffered<S>(tokio::io::BufReader<S>);

impl<S: tokio::io::AsyncRead> ReadBuffered<S> {
    /// Bytes read at once: a message of a few hundred items with room to spare.
    const BUFFER: usize = 32 << 10;

    pub(crate) fn new(s: S) -> Self {
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

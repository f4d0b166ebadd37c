//! [`PhaseTimer`]: the stream adapter under one SOCKS5 handshake that enforces the per-phase deadlines.
//!
//! It watches the bytes the client reads to know where the handshake is (greeting reply = 2 bytes; RFC 1929 reply
//! = 2 bytes when the server picked method 0x02; then the CONNECT reply: 4 bytes, then the bound address by its
//! type, then the port). While a phase is open, a read or write that is still pending when the phase's deadline
//! (or the whole chain's, whichever comes first) passes fails with `io::ErrorKind::TimedOut` carrying a
//! [`PhaseTimeout`], so the caller can tell which phase hung. Once the CONNECT reply is complete the adapter is a
//! plain pass-through with no timer.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::{Deadlines, Phase};

/// The error inside the `io::Error` (kind `TimedOut`) a [`PhaseTimer`] fails with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PhaseTimeout {
    pub phase: Phase,
    /// the phase's own deadline was `limit`; `true` when the chain's deadline came first
    pub chain_limited: bool,
    pub limit: Duration,
}

impl fmt::Display for PhaseTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.chain_limited {
            write!(f, "chain deadline passed during {}", self.phase)
        } else {
            write!(f, "no {} within {:?}", self.phase, self.limit)
        }
    }
}

impl std::error::Error for PhaseTimeout {}

impl PhaseTimeout {
    /// The [`PhaseTimeout`] inside `e`, if `e` is one.
    pub fn of(e: &io::Error) -> Option<Self> {
        if e.kind() != io::ErrorKind::TimedOut {
            return None;
        }
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<PhaseTimeout>())
            .copied()
    }
}

/// Where the handshake is, from the bytes read so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// method selection reply: `got` of 2 bytes
    Greeting {
        got: u8,
    },
    /// RFC 1929 reply: `got` of 2 bytes
    Auth {
        got: u8,
    },
    /// CONNECT reply: `got` of `need` bytes (`need` grows once the address type / domain length is known)
    Reply {
        got: usize,
        need: usize,
    },
    Done,
}

/// A deadline-enforcing pass-through around the stream one SOCKS5 handshake runs on.
pub(super) struct PhaseTimer<S> {
    inner: S,
    state: State,
    deadlines: Deadlines,
    chain_deadline: Instant,
    sleep: Option<Pin<Box<Sleep>>>,
    /// the current phase's timeout, returned when `sleep` fires
    pending: PhaseTimeout,
}

impl<S> PhaseTimer<S> {
    /// Wraps `inner`; the greeting phase starts now.
    pub fn new(inner: S, deadlines: Deadlines, chain_deadline: Instant) -> Self {
        let mut t = Self {
            inner,
            state: State::Greeting { got: 0 },
            deadlines,
            chain_deadline,
            sleep: None,
            pending: PhaseTimeout {
                phase: Phase::Greeting,
                chain_limited: false,
                limit: deadlines.greeting,
            },
        };
        t.start_phase(Phase::Greeting);
        t
    }

    fn start_phase(&mut self, phase: Phase) {
        let limit = match phase {
            Phase::Connect => self.deadlines.connect,
            Phase::Greeting => self.deadlines.greeting,
            Phase::Auth => self.deadlines.auth,
            Phase::ConnectReply => self.deadlines.connect_reply,
        };
        let own = Instant::now()
            .checked_add(limit)
            .unwrap_or(self.chain_deadline);
        let chain_limited = self.chain_deadline <= own;
        let at = if chain_limited {
            self.chain_deadline
        } else {
            own
        };
        self.pending = PhaseTimeout {
            phase,
            chain_limited,
            limit,
        };
        match &mut self.sleep {
            Some(s) => s.as_mut().reset(at),
            None => self.sleep = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    /// Advances the state machine over bytes the client has just read.
    fn observe(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match self.state {
                State::Greeting { got } => {
                    if got == 1 {
                        if b == 0x02 {
                            self.state = State::Auth { got: 0 };
                            self.start_phase(Phase::Auth);
                        } else {
                            self.state = State::Reply { got: 0, need: 4 };
                            self.start_phase(Phase::ConnectReply);
                        }
                    } else {
                        self.state = State::Greeting { got: got + 1 };
                    }
                }
                State::Auth { got } => {
                    if got == 1 {
                        self.state = State::Reply { got: 0, need: 4 };
                        self.start_phase(Phase::ConnectReply);
                    } else {
                        self.state = State::Auth { got: got + 1 };
                    }
                }
                State::Reply { got, need } => {
                    let need = match got {
                        // ATYP: IPv4 = 4 + 4 + 2, IPv6 = 4 + 16 + 2, domain = 4 + 1 (its length byte) first
                        3 => match b {
                            0x01 => 10,
                            0x04 => 22,
                            0x03 => 5,
                            // unknown type: the client fails on it; nothing more to time
                            _ => 4,
                        },
                        4 if need == 5 => 5 + usize::from(b) + 2,
                        _ => need,
                    };
                    let got = got + 1;
                    if got >= need {
                        self.state = State::Done;
                        self.sleep = None;
                    } else {
                        self.state = State::Reply { got, need };
                    }
                }
                State::Done => return,
            }
        }
    }

    /// `Ready(err)` when the current phase's deadline has passed (registers the waker otherwise).
    fn expired(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let Some(s) = &mut self.sleep else {
            return Poll::Pending;
        };
        match s.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(io::Error::new(io::ErrorKind::TimedOut, self.pending)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The phase the handshake is in (`None` once it is complete).
    #[cfg(test)]
    pub fn phase(&self) -> Option<Phase> {
        match self.state {
            State::Greeting { .. } => Some(Phase::Greeting),
            State::Auth { .. } => Some(Phase::Auth),
            State::Reply { .. } => Some(Phase::ConnectReply),
            State::Done => None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for PhaseTimer<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.state == State::Done {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.observe(buf.filled().get(before..).unwrap_or_default());
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.expired(cx).map(Err),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for PhaseTimer<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Pending if this.state != State::Done => this.expired(cx).map(Err),
            other => other,
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending if this.state != State::Done => this.expired(cx).map(Err),
            other => other,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Pending if this.state != State::Done => this.expired(cx).map(Err),
            other => other,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer() -> PhaseTimer<tokio::io::Empty> {
        let d = Deadlines::default();
        PhaseTimer::new(tokio::io::empty(), d, Instant::now() + d.chain)
    }

    #[tokio::test]
    async fn follows_no_auth_handshake_with_ipv4_reply() {
        let mut t = timer();
        assert_eq!(t.phase(), Some(Phase::Greeting));
        t.observe(&[0x05]);
        assert_eq!(t.phase(), Some(Phase::Greeting));
        t.observe(&[0x00]);
        assert_eq!(t.phase(), Some(Phase::ConnectReply));
        t.observe(&[0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0]);
        assert_eq!(t.phase(), Some(Phase::ConnectReply));
        t.observe(&[80]);
        assert_eq!(t.phase(), None);
        assert!(
            t.sleep.is_none(),
            "timer released once the reply is complete"
        );
    }

    #[tokio::test]
    async fn follows_auth_then_domain_reply() {
        let mut t = timer();
        t.observe(&[0x05, 0x02]);
        assert_eq!(t.phase(), Some(Phase::Auth));
        t.observe(&[0x01, 0x00]);
        assert_eq!(t.phase(), Some(Phase::ConnectReply));
        // domain "ab" (length 2) + port
        t.observe(&[0x05, 0x00, 0x00, 0x03, 2, b'a', b'b', 0]);
        assert_eq!(t.phase(), Some(Phase::ConnectReply));
        t.observe(&[1]);
        assert_eq!(t.phase(), None);
    }

    #[tokio::test]
    async fn ipv6_reply_needs_22_bytes() {
        let mut t = timer();
        t.observe(&[0x05, 0x00]);
        t.observe(&[0x05, 0x00, 0x00, 0x04]);
        t.observe(&[0u8; 17]);
        assert_eq!(t.phase(), Some(Phase::ConnectReply));
        t.observe(&[0]);
        assert_eq!(t.phase(), None);
    }

    #[test]
    fn timeout_display_names_the_phase() {
        let t = PhaseTimeout {
            phase: Phase::Auth,
            chain_limited: false,
            limit: Duration::from_millis(250),
        };
        assert_eq!(t.to_string(), "no auth reply within 250ms");
        let e = io::Error::new(io::ErrorKind::TimedOut, t);
        assert_eq!(PhaseTimeout::of(&e), Some(t));
        assert_eq!(PhaseTimeout::of(&io::Error::other("x")), None);
    }
}

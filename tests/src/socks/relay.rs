//! Relaying a tunnel's bytes both ways, plainly, one byte per interval, or until a byte budget runs out and then
//! cutting the client off with a reset.

use std::io;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// How target → client bytes flow (client → target is always plain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Plain,
    /// one byte, then a pause
    Trickle(Duration),
    /// after this many bytes the tunnel is reset
    CutAfter(u64),
}

/// How one direction ended.
enum End {
    Eof,
    Cut,
}

/// Relays until both directions end (or the budget of [`Style::CutAfter`] is spent: then both sides are dropped
/// at once and the client gets a reset). Adds every relayed byte to `bytes` (before writing it, so a client that has read it sees it counted).
pub(super) async fn relay(
    client: TcpStream,
    target: TcpStream,
    style: Style,
    bytes: &AtomicU64,
) -> io::Result<()> {
    let _ = client.set_nodelay(true);
    if matches!(style, Style::CutAfter(_)) {
        client.set_zero_linger()?;
    }
    let (mut cr, mut cw) = client.into_split();
    let (mut tr, mut tw) = target.into_split();
    let mut up = pin!(pump(&mut cr, &mut tw, Style::Plain, bytes));
    let mut down = pin!(pump(&mut tr, &mut cw, style, bytes));
    tokio::select! {
        d = &mut down => {
            if let End::Cut = d? {
                return Ok(());
            }
            up.await?;
        }
        u = &mut up => {
            // the client is done sending (or gone); finish the other way
            let _ = u;
            down.await?;
        }
    }
    Ok(())
}

async fn pump<R, W>(r: &mut R, w: &mut W, style: Style, bytes: &AtomicU64) -> io::Result<End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    let mut budget = match style {
        Style::CutAfter(n) => n,
        _ => u64::MAX,
    };
    loop {
        if budget == 0 {
            return Ok(End::Cut);
        }
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = w.shutdown().await;
                return Ok(End::Eof);
            }
            Ok(n) => n,
        };
        let n = usize::try_from(budget).map_or(n, |b| n.min(b));
        let chunk = buf.get(..n).unwrap_or_default();
        match style {
            Style::Trickle(every) => {
                for b in chunk {
                    bytes.fetch_add(1, Ordering::SeqCst);
                    w.write_all(std::slice::from_ref(b)).await?;
                    w.flush().await?;
                    tokio::time::sleep(every).await;
                }
            }
            Style::Plain | Style::CutAfter(_) => {
                bytes.fetch_add(n as u64, Ordering::SeqCst);
                w.write_all(chunk).await?;
                w.flush().await?;
            }
        }
        budget = budget.saturating_sub(n as u64);
    }
}

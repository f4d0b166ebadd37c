//! Request bodies read under `[api] max_body_bytes`: a declared `Content-Length` above it is refused before a byte
//! is read, and a body without one (chunked) is cut off as soon as it passes the cap.

use super::answer::ErrorAnswer;
use bytes::{Buf as _, Bytes, BytesMut};
use http::StatusCode;
use http::header::{CONTENT_LENGTH, HeaderMap};
use http_body::Body;
use http_body_util::BodyExt as _;

/// The 413 for a body above `max` bytes.
pub fn too_large(max: u64) -> ErrorAnswer {
    ErrorAnswer::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("the body is larger than {max} bytes (api.max_body_bytes)"),
    )
}

/// The declared length is above `max` (a declared length that is not a number is a 400).
pub fn check_declared(headers: &HeaderMap, max: u64) -> Result<(), ErrorAnswer> {
    let Some(v) = headers.get(CONTENT_LENGTH) else {
        return Ok(());
    };
    let len = v
        .to_str()
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .ok_or_else(|| ErrorAnswer::bad_request("bad_request", "Content-Length is not a number"))?;
    if len > max {
        return Err(too_large(max));
    }
    Ok(())
}

/// The whole body, at most `max` bytes.
pub async fn read_capped<B>(headers: &HeaderMap, body: B, max: u64) -> Result<Bytes, ErrorAnswer>
where
    B: Body,
    B::Error: std::fmt::Display,
{
    check_declared(headers, max)?;
    let mut body = std::pin::pin!(body);
    let mut out = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ErrorAnswer::bad_request("bad_request", format!("cannot read the body: {e}"))
        })?;
        if let Ok(mut data) = frame.into_data() {
            let n = data.remaining();
            if (out.len() + n) as u64 > max {
                return Err(too_large(max));
            }
            out.extend_from_slice(&data.copy_to_bytes(n));
        }
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use http_body_util::Full;
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A body of several frames and no declared length, as a chunked request has; counts the frames taken.
    struct Chunks {
        left: VecDeque<Bytes>,
        taken: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Body for Chunks {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
            let next = self.left.pop_front();
            if next.is_some() {
                self.taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            Poll::Ready(next.map(|b| Ok(http_body::Frame::data(b))))
        }
    }

    fn chunks(n: usize, size: usize) -> (Chunks, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let taken = std::sync::Arc::default();
        let body = Chunks {
            left: (0..n).map(|_| Bytes::from(vec![b'x'; size])).collect(),
            taken: std::sync::Arc::clone(&taken),
        };
        (body, taken)
    }

    #[tokio::test]
    async fn a_declared_length_above_the_cap_is_refused_unread() {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_LENGTH, HeaderValue::from_static("11"));
        let (body, taken) = chunks(3, 4);
        let e = read_capped(&h, body, 10).await.unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (413, "payload_too_large"));
        assert_eq!(taken.load(std::sync::atomic::Ordering::SeqCst), 0);
        h.insert(CONTENT_LENGTH, HeaderValue::from_static("ten"));
        let e = read_capped(&h, Full::new(Bytes::new()), 10)
            .await
            .unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        h.insert(CONTENT_LENGTH, HeaderValue::from_static("10"));
        let b = read_capped(&h, Full::new(Bytes::from_static(b"0123456789")), 10)
            .await
            .unwrap();
        assert_eq!(&b[..], b"0123456789");
    }

    #[tokio::test]
    async fn a_chunked_body_is_cut_off_once_past_the_cap() {
        let none = HeaderMap::new();
        // 1000 chunks of 100 bytes: refused after the 11th, the rest never read.
        let (body, taken) = chunks(1000, 100);
        let e = read_capped(&none, body, 1000).await.unwrap_err();
        assert_eq!(e.status.as_u16(), 413);
        assert_eq!(taken.load(std::sync::atomic::Ordering::SeqCst), 11);
        let (body, _) = chunks(10, 100);
        assert_eq!(read_capped(&none, body, 1000).await.unwrap().len(), 1000);
    }
}

//! Whether a collector that failed an export speaks the other OTLP protocol, told by how it opens a conversation:
//! an HTTP/2 server (OTLP/gRPC) sends its SETTINGS frame as soon as a connection is open, before it reads
//! anything; an HTTP/1 server (OTLP/HTTP) answers an HTTP/1.1 request with a status line. An endpoint given with
//! the wrong protocol (a gRPC collector on a port other than 4317, now that OTLP/HTTP is the default) fails every
//! export with a transport error that does not say why; this names the fix.

use super::Protocol;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// How long the probe waits to connect, and then for the collector's first bytes.
const PROBE_WAIT: Duration = Duration::from_millis(700);

/// The fix to name when the collector at `uri` (`http://`: a TLS endpoint is not probed) speaks the other
/// protocol than `protocol`; None when it speaks `protocol`, cannot be reached or does not tell.
pub(crate) async fn other_protocol(uri: &http::Uri, protocol: Protocol) -> Option<String> {
    if uri.scheme_str() != Some("http") {
        return None;
    }
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let connect = tokio::net::TcpStream::connect((host, port));
    let mut stream = tokio::time::timeout(PROBE_WAIT, connect).await.ok()?.ok()?;
    // An HTTP/1 server answers it; an HTTP/2 one has sent its SETTINGS already and reads it as a broken preface.
    let ask = format!("OPTIONS * HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let _ = stream.write_all(ask.as_bytes()).await;
    let mut first = [0u8; 9];
    let mut got = 0;
    // The first bytes, as many as come within the wait (a status line's first 9, or a frame header).
    let _ = tokio::time::timeout(PROBE_WAIT, async {
        while got < first.len() {
            match stream.read(&mut first[got..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
    })
    .await;
    let first = &first[..got];
    let speaks_other = match protocol {
        Protocol::HttpProtobuf => is_settings_frame(first),
        Protocol::Grpc => first.starts_with(b"HTTP/1."),
    };
    speaks_other.then(|| fix(protocol))
}

/// A frame header of HTTP/2's SETTINGS (type 4) on the connection's stream (0): a server's preface.
fn is_settings_frame(header: &[u8]) -> bool {
    header.len() == 9 && header[3] == 0x04 && header[5..9] == [0, 0, 0, 0]
}

/// What to do when traces go over `protocol` to a collector of the other one.
fn fix(protocol: Protocol) -> String {
    let other = protocol.other();
    let spoken = match other {
        Protocol::Grpc => "HTTP/2 only, as an OTLP/gRPC endpoint does",
        Protocol::HttpProtobuf => "HTTP/1, as an OTLP/HTTP endpoint does",
    };
    let own_port = protocol.well_known_port();
    format!(
        "traces are sent over {} but the collector speaks {spoken}: set [observability] otlp_protocol = \"{}\" \
         (or OTEL_EXPORTER_OTLP_PROTOCOL), or give the collector's {} endpoint (its port {own_port})",
        protocol.as_str(),
        other.as_str(),
        protocol.as_str(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_frame_is_told_from_other_bytes() {
        assert!(is_settings_frame(&[0, 0, 6, 4, 0, 0, 0, 0, 0]));
        assert!(is_settings_frame(&[0, 0, 0, 4, 1, 0, 0, 0, 0]), "an ack");
        assert!(!is_settings_frame(b"HTTP/1.1 "));
        assert!(!is_settings_frame(&[0, 0, 8, 7, 0, 0, 0, 0, 0]), "a GOAWAY");
        assert!(
            !is_settings_frame(&[0, 0, 6, 4, 0, 0, 0, 0, 1]),
            "not stream 0"
        );
        assert!(!is_settings_frame(&[0, 0, 6, 4]), "cut short");
    }

    #[test]
    fn the_fix_names_the_protocol_to_set_and_the_port_to_use() {
        let f = fix(Protocol::HttpProtobuf);
        assert!(f.contains("otlp_protocol = \"grpc\""), "{f}");
        assert!(f.contains("HTTP/2 only") && f.contains("port 4318"), "{f}");
        let f = fix(Protocol::Grpc);
        assert!(f.contains("otlp_protocol = \"http/protobuf\""), "{f}");
        assert!(f.contains("HTTP/1,") && f.contains("port 4317"), "{f}");
    }
}

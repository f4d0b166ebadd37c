//! The OTLP protocols and compressions the exporter speaks, named as `OTEL_EXPORTER_OTLP_PROTOCOL` and
//! `OTEL_EXPORTER_OTLP_COMPRESSION` name them.

/// How spans go to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/gRPC (tonic): the collector's port 4317.
    Grpc,
    /// OTLP/HTTP with protobuf bodies, POSTed to `/v1/traces` (hyper): port 4318.
    HttpProtobuf,
}

impl Protocol {
    /// The protocol named as `OTEL_EXPORTER_OTLP_PROTOCOL` names it (`grpc`, `http/protobuf`).
    pub fn parse(name: &str) -> Option<Protocol> {
        match name.trim() {
            "grpc" => Some(Protocol::Grpc),
            "http/protobuf" => Some(Protocol::HttpProtobuf),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        }
    }

    /// The collectors' well-known port of the protocol: 4317 takes OTLP/gRPC, 4318 OTLP/HTTP.
    pub fn well_known_port(self) -> u16 {
        match self {
            Protocol::Grpc => 4317,
            Protocol::HttpProtobuf => 4318,
        }
    }

    /// The other of the two protocols.
    pub fn other(self) -> Protocol {
        match self {
            Protocol::Grpc => Protocol::HttpProtobuf,
            Protocol::HttpProtobuf => Protocol::Grpc,
        }
    }
}

/// How export requests are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Sent as they are.
    None,
    /// gzip: `Content-Encoding: gzip` over OTLP/HTTP, `grpc-encoding: gzip` over gRPC.
    Gzip,
}

impl Compression {
    /// The compression named as `OTEL_EXPORTER_OTLP_COMPRESSION` names it (`none`, `gzip`).
    pub fn parse(name: &str) -> Option<Compression> {
        match name.trim() {
            "none" => Some(Compression::None),
            "gzip" => Some(Compression::Gzip),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
        }
    }
}

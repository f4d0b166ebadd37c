use super::*;
use std::time::{Instant, SystemTime};

#[test]
fn ratio_rule_matches_edges_and_is_monotonic() {
    let low = TraceId::from_bytes([0; 16]);
    let high = TraceId::from_bytes([0xff; 16]);
    assert!(ratio_admits(low, 0.000_001));
    assert!(!ratio_admits(high, 0.999));
    assert!(ratio_admits(high, 1.0));
    assert!(!ratio_admits(low, 0.0));
    let mut admitted = 0;
    for i in 0..10_000u64 {
        let mut b = [0u8; 16];
        b[8..16].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
        if ratio_admits(TraceId::from_bytes(b), 0.25) {
            admitted += 1;
        }
    }
    assert!((2_200..2_800).contains(&admitted), "{admitted}");
}

#[test]
fn a_sampled_trace_exports_its_root_and_children() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value;
    use prost::Message as _;
    set_sample_ratio(1.0);
    let batches = Batches::new(64, 64);
    let tracer = Tracer::Export(batches);
    let t0 = SystemTime::now();
    let mut t = root_with(
        Some(tracer),
        "crawl.url",
        t0.into(),
        &[Attr::new("crawl.depth", 2_i64)],
    );
    assert!(t.is_sampled());
    t.set_attributes(&[Attr::new("crawl.outcome", "failed")]);
    t.set_error("refused");
    // The children are added through the context the other actors get (a copy of the ids).
    let ctx = t.ctx();
    ctx.span("frontier.wait", t0, t0 + Duration::from_millis(3), &[]);
    ctx.failed_span("parse", t0, t0, &[], "parser panicked");
    let mut open = ctx.start("dns.resolve", &[Attr::new("dns.name", "a.test")]);
    open.set(Attr::new("dns.source", "cache"));
    drop(open);
    let id = t.trace_id().expect("id");
    assert_eq!(ctx.trace_id().as_deref(), Some(id.as_str()));
    t.end(t0 + Duration::from_millis(9));
    // A child that ends after the root is still exported, with the root as parent.
    ctx.span("late", t0, t0 + Duration::from_secs(9), &[]);
    let (bytes, n) = batches.take(true).expect("spans");
    assert_eq!(n, 5);
    let header = wire::Header::new(&[Attr::new("service.name", "t")], SCOPE);
    let req = ExportTraceServiceRequest::decode(header.request(&bytes.concat()).as_slice())
        .expect("decodes");
    let spans = &req.resource_spans[0].scope_spans[0].spans;
    let names: Vec<_> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["frontier.wait", "parse", "dns.resolve", "crawl.url", "late"]
    );
    let root = &spans[3];
    assert!(root.parent_span_id.is_empty());
    for s in spans {
        assert_eq!(hex(&s.trace_id), id);
    }
    for child in spans[..3].iter().chain(&spans[4..]) {
        assert_eq!(child.parent_span_id, root.span_id);
    }
    let values = |s: &opentelemetry_proto::tonic::trace::v1::Span| -> Vec<(String, Option<any_value::Value>)> {
        s.attributes
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.as_ref().and_then(|v| v.value.clone())))
            .collect()
    };
    // The root's attributes in the order they were set (at its start, then later), and the open span's.
    assert_eq!(
        values(root),
        [
            (
                "crawl.depth".to_owned(),
                Some(any_value::Value::IntValue(2))
            ),
            (
                "crawl.outcome".to_owned(),
                Some(any_value::Value::StringValue("failed".into()))
            ),
        ]
    );
    assert_eq!(root.status.as_ref().expect("status").message, "refused");
    assert_eq!(
        root.end_time_unix_nano - root.start_time_unix_nano,
        9_000_000
    );
    assert_eq!(
        spans[1].status.as_ref().expect("status").message,
        "parser panicked"
    );
    assert_eq!(
        values(&spans[2]),
        [
            (
                "dns.name".to_owned(),
                Some(any_value::Value::StringValue("a.test".into()))
            ),
            (
                "dns.source".to_owned(),
                Some(any_value::Value::StringValue("cache".into()))
            ),
        ]
    );
    assert!(batches.take(true).is_none());
}

#[test]
fn a_trace_dropped_in_a_thread_local_destructor_is_still_exported() {
    set_sample_ratio(1.0);
    let batches = Batches::new(64, 64);
    let tracer = Tracer::Export(batches);
    thread_local! {
        static HELD: std::cell::RefCell<Option<Trace>> = const { std::cell::RefCell::new(None) };
    }
    std::thread::spawn(move || {
        // Registered first, so torn down after the thread-locals the child span below brings into use: the
        // root then ends with them gone.
        let t = root_with(Some(tracer), "crawl.url", Stamp::now(), &[]);
        let ctx = t.ctx();
        HELD.with(|h| *h.borrow_mut() = Some(t));
        ctx.span("frontier.wait", SystemTime::now(), SystemTime::now(), &[]);
    })
    .join()
    .expect("the thread ends without a panic");
    let (_, n) = batches.take(true).expect("spans");
    assert_eq!(n, 2, "the child and the root");
}

#[test]
fn a_trace_dropped_before_its_end_exports_its_root_then() {
    set_sample_ratio(1.0);
    let batches = Batches::new(64, 64);
    let before = Stamp::now();
    let mut t = root_with(Some(Tracer::Export(batches)), "crawl.url", before, &[]);
    t.set_attributes(&[Attr::new("crawl.attempt", 1_i64)]);
    let ctx = t.ctx();
    drop(t);
    let after = Stamp::now();
    // A child ended after the drop is exported on its own, under the root already sent.
    ctx.span("late", before, after, &[]);
    let (bytes, n) = batches.take(true).expect("spans");
    assert_eq!(n, 2, "the root at its drop, and the late child");
    let spans = decode(&bytes.concat());
    assert_eq!(spans[0].name, "crawl.url");
    assert!(spans[0].end_time_unix_nano >= before.unix_nanos());
    assert!(spans[0].end_time_unix_nano <= after.unix_nanos());
    assert_eq!(spans[0].attributes.len(), 1);
    assert_eq!(spans[1].parent_span_id, spans[0].span_id);
}

/// The installed tracer is read again by a thread that had its own copy, once another is installed.
#[test]
fn a_thread_sees_the_tracer_installed_after_its_first_root() {
    set_sample_ratio(1.0);
    let batches = Batches::new(64, 64);
    std::thread::spawn(move || {
        install(Tracer::Ids);
        let ids = root("crawl.url", Stamp::now(), &[]);
        assert!(ids.trace_id().is_some());
        assert!(!ids.is_sampled());
        install(Tracer::Export(batches));
        let exported = root("crawl.url", Stamp::now(), &[]);
        assert!(exported.is_sampled());
        exported.end(Stamp::now());
    })
    .join()
    .expect("the thread ends without a panic");
    assert_eq!(batches.take(true).map(|(_, n)| n), Some(1));
}

/// A root that ended leaves its attributes' buffer to the next root on its thread: the next root carries none of
/// the earlier one's attributes; a buffer grown past a few roots' worth is not kept, and the thread keeps a
/// bounded number.
#[test]
fn a_root_reuses_the_buffer_of_an_ended_root_and_only_its_own_attributes() {
    set_sample_ratio(1.0);
    let batches = Batches::new(64, 64);
    std::thread::spawn(move || {
        let tracer = Some(Tracer::Export(batches));
        let mut first = root_with(
            tracer,
            "crawl.url",
            Stamp::now(),
            &[Attr::new("url.full", "a")],
        );
        first.set_attributes(&[Attr::new("crawl.attempt", 2i64)]);
        first.end(Stamp::now());
        let kept = ROOT_BUFFERS.with(|pool| pool.borrow().len());
        assert_eq!(kept, 1, "the ended root's buffer is kept");
        let second = root_with(
            tracer,
            "crawl.url",
            Stamp::now(),
            &[Attr::new("url.full", "b")],
        );
        assert_eq!(
            ROOT_BUFFERS.with(|pool| pool.borrow().len()),
            0,
            "and taken by the next root"
        );
        second.end(Stamp::now());
        assert_eq!(ROOT_BUFFERS.with(|pool| pool.borrow().len()), 1);
        // A root with a long URL takes that buffer and grows it: then it is freed, not kept.
        let long = "x".repeat(8 * ROOT_ATTRIBUTE_BYTES);
        root_with(
            tracer,
            "crawl.url",
            Stamp::now(),
            &[Attr::new("url.full", &long)],
        )
        .end(Stamp::now());
        assert_eq!(
            ROOT_BUFFERS.with(|pool| pool.borrow().len()),
            0,
            "the grown buffer is not kept"
        );
        // Many roots ended at once: the thread keeps a bounded number of buffers.
        let many: Vec<_> = (0..POOLED_ROOT_BUFFERS + 10)
            .map(|_| root_with(tracer, "crawl.url", Stamp::now(), &[]))
            .collect();
        for t in many {
            t.end(Stamp::now());
        }
        assert_eq!(
            ROOT_BUFFERS.with(|pool| pool.borrow().len()),
            POOLED_ROOT_BUFFERS
        );
    })
    .join()
    .expect("the thread ends without a panic");
    let mut roots = Vec::new();
    while let Some((bytes, _)) = batches.take(true) {
        roots.extend(decode(&bytes.concat()));
        if roots.len() >= 2 {
            break;
        }
    }
    let url = |s: &opentelemetry_proto::tonic::trace::v1::Span| {
        s.attributes
            .iter()
            .map(|a| a.key.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(url(&roots[0]), ["url.full", "crawl.attempt"]);
    assert_eq!(
        url(&roots[1]),
        ["url.full"],
        "nothing of the first root's attributes"
    );
}

fn decode(bytes: &[u8]) -> Vec<opentelemetry_proto::tonic::trace::v1::Span> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;
    let header = wire::Header::new(&[Attr::new("service.name", "t")], SCOPE);
    let req = ExportTraceServiceRequest::decode(header.request(bytes).as_slice()).expect("decodes");
    req.resource_spans[0].scope_spans[0].spans.clone()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn hex_ids_match_display() {
    for id in [
        TraceId::from_bytes([0; 16]),
        TraceId::from_bytes([0xab; 16]),
        TraceId::from_bytes(*b"0123456789abcdef"),
    ] {
        assert_eq!(hex_id(id), id.to_string());
    }
}

#[test]
fn ids_only_traces_are_not_sampled() {
    set_sample_ratio(1.0);
    let t = root_with(Some(Tracer::Ids), "crawl.url", Stamp::now(), &[]);
    assert!(!t.is_sampled());
    assert_eq!(t.trace_id().map(|s| s.len()), Some(32));
    assert_eq!(t.ctx().trace_id(), t.trace_id());
    assert!(!t.ctx().start("x", &[]).is_recording());
}

#[test]
fn without_tracer_everything_is_a_no_op() {
    let mut t = Trace::default();
    assert_eq!(t.trace_id(), None);
    t.ctx().span("x", SystemTime::now(), SystemTime::now(), &[]);
    let mut span = t.ctx().start("y", &[Attr::new("k", 1_i64)]);
    assert!(!span.is_recording());
    span.set(Attr::new("k", "v"));
    span.end();
    t.set_attributes(&[Attr::new("k", true)]);
    t.set_error("e");
    t.end(SystemTime::now());
    assert_eq!(TraceCtx::default().trace_id(), None);
}

/// Spans ended on several threads (each thread encodes into a chunk of its own and hands it over when it holds
/// CHUNK_SPANS) all reach a batch once: full chunks as they fill, the rest of every thread's chunk at a partial
/// take, even after the thread has ended; after close, a span is given back and not taken.
#[test]
fn spans_ended_on_many_threads_all_reach_a_batch_once() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;
    const PER_THREAD: u16 = (export::CHUNK_SPANS * 2 + 22) as u16;
    let batches = Batches::new(100_000, 10_000);
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let b = batches;
            std::thread::spawn(move || {
                for n in 0..PER_THREAD {
                    b.push(&wire::SpanRef::numbered(t, n));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("the thread ends without a panic");
    }
    assert!(batches.take(false).is_none(), "no batch is full yet");
    let (bytes, n) = batches.take(true).expect("spans");
    assert_eq!(n, 4 * usize::from(PER_THREAD));
    let header = wire::Header::new(&[Attr::new("service.name", "t")], SCOPE);
    let req = ExportTraceServiceRequest::decode(header.request(&bytes.concat()).as_slice())
        .expect("decodes");
    let spans = &req.resource_spans[0].scope_spans[0].spans;
    assert_eq!(spans.len(), n);
    let mut seen: Vec<(u8, u16)> = spans
        .iter()
        .map(|s| {
            (
                s.trace_id[0],
                u16::from_be_bytes([s.span_id[0], s.span_id[1]]),
            )
        })
        .collect();
    seen.sort_unstable();
    let all: Vec<(u8, u16)> = (0..4u8)
        .flat_map(|t| (0..PER_THREAD).map(move |n| (t, n)))
        .collect();
    assert_eq!(seen, all, "every span once");
    assert!(batches.take(true).is_none());

    batches.push(&wire::SpanRef::numbered(9, 1));
    batches.close();
    batches.push(&wire::SpanRef::numbered(9, 2));
    let (bytes, n) = batches.take(true).expect("the span from before close");
    assert_eq!(n, 1);
    let req = ExportTraceServiceRequest::decode(header.request(&bytes.concat()).as_slice())
        .expect("decodes");
    assert_eq!(
        req.resource_spans[0].scope_spans[0].spans[0].span_id[..2],
        [0, 1]
    );
    assert_eq!(batches.loss().accepted(), 4 * u64::from(PER_THREAD) + 1);
}

/// With a batch smaller than a chunk, a thread's spans make a full batch as soon as there are enough of them.
#[test]
fn a_batch_smaller_than_a_chunk_fills_at_once() {
    let batches = Batches::new(1_000, 3);
    for n in 0..7 {
        batches.push(&wire::SpanRef::numbered(1, n));
    }
    assert_eq!(batches.take(false).map(|(_, n)| n), Some(3));
    assert_eq!(batches.take(false).map(|(_, n)| n), Some(3));
    assert!(batches.take(false).is_none());
    assert_eq!(batches.take(true).map(|(_, n)| n), Some(1));
}

/// With a batch of two chunks, a thread's first two full chunks make a full batch at once (each handed over as it
/// fills, with no partial take), and what is past them stays with the thread until a partial take.
#[test]
fn full_chunks_are_handed_over_as_they_fill() {
    let chunk = export::CHUNK_SPANS;
    let batches = Batches::new(10_000, 2 * chunk);
    for n in 0..2 * chunk + 5 {
        batches.push(&wire::SpanRef::numbered(1, n as u16));
    }
    assert_eq!(batches.take(false).map(|(_, n)| n), Some(2 * chunk));
    assert!(batches.take(false).is_none(), "the rest is not a batch");
    assert_eq!(batches.take(true).map(|(_, n)| n), Some(5));
}

/// Span ids are never zero and never repeat: 200,000 from one thread, and 10,000 from each of four more.
#[test]
fn span_ids_are_unique_and_never_zero() {
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200_000 {
        let id = new_span_id();
        assert_ne!(id, [0; 8]);
        assert!(seen.insert(id), "a span id repeated");
    }
    let others: Vec<Vec<[u8; 8]>> = (0..4)
        .map(|_| std::thread::spawn(|| (0..10_000).map(|_| new_span_id()).collect()))
        .map(|h| h.join().expect("thread"))
        .collect();
    for id in others.into_iter().flatten() {
        assert_ne!(id, [0; 8]);
        assert!(seen.insert(id), "a span id of another thread repeated");
    }
}

#[test]
fn a_stamp_and_a_duration_make_the_stamp_of_the_later_instant() {
    let at = Instant::now();
    for d in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_micros(1_234_567),
        Duration::from_secs(86_400),
    ] {
        assert_eq!(Stamp::from(at) + d, Stamp::from(at + d), "{d:?}");
    }
    assert_eq!(
        (Stamp::from(at) + Duration::MAX).unix_nanos(),
        u64::MAX,
        "saturates"
    );
}

/// One round of the tracing calls of 256 URLs, as the crawl makes them: each URL's root and `frontier.wait` when
/// it is leased, its fetch's three children and the root's outcome attributes, then every URL's `frontier.commit`
/// and root end together (the scheduler ends a group commit's records at once). Returns the spans handed over.
fn trace_round(tracer: Option<Tracer>, batches: &Batches, round: usize) -> Vec<Vec<u8>> {
    let url = "http://127.0.0.30:41234/p/1234.html";
    let mut traces = Vec::with_capacity(256);
    for i in 0..256 {
        let t0 = Stamp::from_unix_nanos(1_700_000_000_000_000_000 + (round * 256 + i) as u64);
        let mut t = root_with(tracer, "crawl.url", t0, &[]);
        t.set_attributes(&[
            Attr::new("url.full", url),
            crate::preset_str!("crawl.kind", "page"),
            Attr::new("crawl.depth", 3_i64),
        ]);
        let wait = [
            Attr::new("crawl.host", "127.0.0.30:41234"),
            crate::preset_str!("robots.verdict", "allowed"),
        ];
        t.ctx()
            .span("frontier.wait", t0, t0 + Duration::from_micros(50), &wait);
        traces.push((t, i, t0));
    }
    for (t, _, s) in &mut traces {
        let (ctx, s) = (t.ctx(), *s);
        let reused = [crate::preset_bool!("net.connection.reused", true)];
        ctx.span(
            "http.first_byte",
            s,
            s + Duration::from_micros(100),
            &reused,
        );
        let body = [
            Attr::new("http.response.body.size", 4100_i64),
            crate::preset_str!("network.protocol.version", "HTTP/1.1"),
            Attr::new("crawl.decoded_bytes", 4000_i64),
        ];
        ctx.span("http.body", s, s + Duration::from_micros(200), &body);
        let links = [
            Attr::new("crawl.links_found", 12_i64),
            Attr::new("crawl.links_followed", 10_i64),
        ];
        ctx.span("parse", s, s + Duration::from_micros(300), &links);
        t.set_attributes(&[
            crate::preset_str!("crawl.outcome", "fetched"),
            Attr::new("crawl.attempt", 1_i64),
            Attr::new("http.response.status_code", 200_i64),
        ]);
    }
    let from = Stamp::from_unix_nanos(1_800_000_000_000_000_000 + round as u64);
    let mut commit = Alike::new("frontier.commit", from, from + Duration::from_micros(900));
    for (t, _, _) in &traces {
        commit.add(&t.ctx());
    }
    for (mut t, i, _) in traces {
        let line = (round * 256 + i) as i64;
        t.set_attributes(&[Attr::new("crawl.jsonl_line", line)]);
        t.end(from + Duration::from_micros(1000));
    }
    let mut pieces = Vec::new();
    while let Some((mut batch, _)) = batches.take(true) {
        pieces.append(&mut batch);
    }
    pieces
}

/// Rounds of a crawl's tracing calls (see [`trace_round`]) reach the batches whole: six spans a URL, each child
/// under its root, each root with its seven attributes. `TRACE_ROUNDS` sets the rounds (default 2): run under
/// callgrind with two counts of rounds, the difference of the two counts over the URLs between them is what one
/// URL's tracing costs in instructions, a count that does not move from run to run as a whole crawl's does (the
/// spans of the rounds after the first are counted, not decoded).
#[test]
fn the_tracing_calls_of_many_urls_arrive_whole() {
    use std::collections::HashMap;
    let rounds: usize = std::env::var("TRACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    set_sample_ratio(1.0);
    let batches = Batches::new(1 << 40, 2048);
    let tracer = Some(Tracer::Export(batches));
    for round in 0..rounds {
        let pieces = trace_round(tracer, batches, round);
        if round > 0 {
            assert!(pieces.iter().map(Vec::len).sum::<usize>() > 256 * 6 * 60);
            continue;
        }
        let spans = decode(&pieces.concat());
        assert_eq!(spans.len(), 256 * 6);
        let mut traces: HashMap<Vec<u8>, Vec<&opentelemetry_proto::tonic::trace::v1::Span>> =
            HashMap::new();
        for s in &spans {
            traces.entry(s.trace_id.clone()).or_default().push(s);
        }
        assert_eq!(traces.len(), 256, "one trace a URL");
        for spans in traces.values() {
            let roots: Vec<_> = spans
                .iter()
                .filter(|s| s.parent_span_id.is_empty())
                .collect();
            assert_eq!(roots.len(), 1);
            let root = roots[0];
            assert_eq!(root.name, "crawl.url");
            let keys: Vec<&str> = root.attributes.iter().map(|kv| kv.key.as_str()).collect();
            assert_eq!(
                keys,
                [
                    "url.full",
                    "crawl.kind",
                    "crawl.depth",
                    "crawl.outcome",
                    "crawl.attempt",
                    "http.response.status_code",
                    "crawl.jsonl_line"
                ]
            );
            let mut names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
            names.sort_unstable();
            assert_eq!(
                names,
                [
                    "crawl.url",
                    "frontier.commit",
                    "frontier.wait",
                    "http.body",
                    "http.first_byte",
                    "parse"
                ]
            );
            for child in spans.iter().filter(|s| !s.parent_span_id.is_empty()) {
                assert_eq!(child.parent_span_id, root.span_id);
            }
            let commit = spans.iter().find(|s| s.name == "frontier.commit");
            let times = commit.map(|s| (s.start_time_unix_nano, s.end_time_unix_nano));
            let from = 1_800_000_000_000_000_000;
            assert_eq!(times, Some((from, from + 900_000)), "the group's times");
        }
        let ids: std::collections::HashSet<&[u8]> =
            spans.iter().map(|s| s.span_id.as_slice()).collect();
        assert_eq!(ids.len(), spans.len(), "every span has an id of its own");
    }
}

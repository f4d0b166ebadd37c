//! The SDK's batch span processor and OTLP exporter, wrapped so that every span they could not take or deliver is
//! counted ([`Loss`]): [`Admit`] bounds the spans handed over and not yet settled by an export (the batch
//! processor's own queue is as large, so it never drops a span unseen), and [`Counted`] settles each export's
//! spans, counting those of a failed one. [`Counted`] also runs each export on the exporter's runtime, whose
//! tasks carry the connections (the batch processor calls it from a thread of its own).

use super::loss::Loss;
use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use std::sync::Arc;
use std::time::Duration;

/// A span processor that passes a span on to `inner` only while fewer than `limit` spans are pending; a span
/// past the bound is dropped and counted.
#[derive(Debug)]
pub(crate) struct Admit<P> {
    pub(crate) inner: P,
    pub(crate) loss: Arc<Loss>,
    pub(crate) limit: u64,
}

impl<P: SpanProcessor> SpanProcessor for Admit<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.loss.admit(1, self.limit) {
            self.inner.on_end(span);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// A span exporter that runs `inner`'s exports on `runtime` and settles their spans in `loss`.
#[derive(Debug)]
pub(crate) struct Counted<E> {
    pub(crate) inner: Arc<E>,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) loss: Arc<Loss>,
}

impl<E: SpanExporter + 'static> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let inner = self.inner.clone();
        let result = match self
            .runtime
            .spawn(async move { inner.export(batch).await })
            .await
        {
            Ok(result) => result,
            Err(e) => Err(OTelSdkError::InternalFailure(e.to_string())),
        };
        let error = result.as_ref().err().map(ToString::to_string);
        self.loss.settle(spans, error.as_deref());
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        // Set when the provider is built, before any export holds a reference.
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.set_resource(resource);
        }
    }
}

//! The trace export's outbound guard: every text a span carries out of the process (its name,
//! attribute values, its events' names and attributes, its status) is scrubbed (invisible
//! characters, then secrets) just before the exporter sends it, as `guard::sink` does for every
//! line written to stdout and stderr. The spans themselves are built from scrubbed text already;
//! this is the last step, so nothing reaches a collector unguarded.

use std::borrow::Cow;
use std::time::Duration;

use opentelemetry::trace::Status;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// An exporter whose every span is scrubbed before `E` sends it.
#[derive(Debug)]
pub struct Guarded<E>(pub E);

impl<E: SpanExporter> SpanExporter for Guarded<E> {
    fn export(&self, mut batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        batch.iter_mut().for_each(guard_span);
        self.0.export(batch)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.0.set_resource(resource);
    }
}

/// Scrubs every text of `span`.
fn guard_span(span: &mut SpanData) {
    guard_name(&mut span.name);
    span.attributes.iter_mut().for_each(guard_pair);
    for event in span.events.events.iter_mut() {
        guard_name(&mut event.name);
        event.attributes.iter_mut().for_each(guard_pair);
    }
    if let Status::Error { description } = &mut span.status {
        guard_name(description);
    }
}

/// Scrubs a name, replacing it only when the scrub changed it.
fn guard_name(name: &mut Cow<'static, str>) {
    if let Cow::Owned(clean) = crate::guard::scrub(name) {
        *name = Cow::Owned(clean);
    }
}

/// Scrubs an attribute's value.
fn guard_pair(pair: &mut KeyValue) {
    match &mut pair.value {
        Value::String(text) => guard_text(text),
        Value::Array(Array::String(texts)) => texts.iter_mut().for_each(guard_text),
        _ => {}
    }
}

/// Scrubs a string value, replacing it only when the scrub changed it.
fn guard_text(text: &mut StringValue) {
    if let Cow::Owned(clean) = crate::guard::scrub(text.as_str()) {
        *text = StringValue::from(clean);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use opentelemetry::trace::{Span, Tracer, TracerProvider};

    use super::*;

    const KEY: &str = "sk-test-4eC39HqLyjWDarjtT1zdp7dc";

    /// An exporter that keeps what it is given, as a collector would receive it.
    #[derive(Debug, Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<SpanData>>>);

    impl SpanExporter for Recorder {
        fn export(&self, batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).extend(batch);
            std::future::ready(Ok(()))
        }
    }

    /// One span made with the SDK from text nobody scrubbed, through `Guarded`: what the
    /// collector receives, as text.
    fn exported(make: impl FnOnce(&opentelemetry_sdk::trace::SdkTracer)) -> String {
        let recorder = Recorder::default();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_simple_exporter(Guarded(recorder.clone()))
            .build();
        make(&provider.tracer("test"));
        let _ = provider.shutdown();
        let spans = recorder.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(spans.len(), 1, "one span exported");
        format!("{spans:?}")
    }

    /// The exporter's own last step scrubs attributes and events, whatever the span holds.
    #[test]
    fn a_span_made_from_unscrubbed_text_leaves_with_its_attributes_and_events_scrubbed() {
        let sent = exported(|tracer| {
            let mut span = tracer.start("execute_tool search_docs");
            span.set_attribute(KeyValue::new("gen_ai.tool.call.arguments", format!("{{\"query\": \"{KEY}\"}}")));
            span.add_event("gen_ai.choice", vec![KeyValue::new("content", format!("the key is {KEY}"))]);
            span.end();
        });
        assert!(!sent.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{sent}");
        assert!(sent.contains("[REDACTED]") && sent.contains("gen_ai.tool.call.arguments"), "{sent}");
    }

    /// The span's name and its error status leave scrubbed too.
    #[test]
    fn a_span_named_with_a_secret_and_failing_with_one_leaves_scrubbed() {
        let sent = exported(|tracer| {
            let mut span = tracer.start(format!("chat {KEY}"));
            span.set_status(opentelemetry::trace::Status::error(format!("the server said: Bearer {KEY}")));
            span.end();
        });
        assert!(!sent.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{sent}");
        assert!(sent.contains("chat [REDACTED]") && sent.contains("the server said"), "{sent}");
    }

    #[test]
    fn every_text_of_a_span_is_scrubbed() {
        let mut names: Cow<'static, str> = Cow::Owned(format!("chat {KEY}"));
        guard_name(&mut names);
        assert!(!names.contains(KEY) && names.starts_with("chat "), "{names}");

        let mut pairs = vec![
            KeyValue::new("gen_ai.tool.call.arguments", format!("{{\"query\": \"{KEY}\"}}")),
            KeyValue::new("list", Value::Array(Array::String(vec![StringValue::from(KEY.to_string())]))),
            KeyValue::new("count", 3_i64),
            KeyValue::new("plain", "refund window"),
        ];
        pairs.iter_mut().for_each(guard_pair);
        let shown = format!("{pairs:?}");
        assert!(!shown.contains("4eC39HqLyjWDarjtT1zdp7dc") && shown.contains("[REDACTED"), "{shown}");
        assert_eq!(pairs[2].value, Value::I64(3));
        assert_eq!(pairs[3].value.as_str(), "refund window", "clean text is left as it is");
    }
}

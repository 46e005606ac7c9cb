//! Traces exported over OTLP (HTTP/protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: the spans of `session::spans` and
//! `serve::requests`, as the `opentelemetry` crates send them.
//!
//! The exporter starts threads (its batch processor, its HTTP client), and a process enters
//! its kernel sandbox only while it has one thread. So the subscriber gets a [`Deferred`] layer
//! at start, empty, and [`start`] fills it once the sandbox is entered (whose plan lets the
//! process connect to the collector's port). [`finish`] sends what is left before the process
//! exits.
//!
//! Every span passes `guarded::Guarded` on its way out: its texts are scrubbed last, as every
//! line on stdout and stderr is.
//!
//! Only docs-agent's own spans at `info` and above are exported, never another crate's. Span
//! attributes hold names, ids, counts and decisions; message content (the question, the answer,
//! tool arguments and results) is added only when
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, and then scrubbed and clipped
//! (`session::spans`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::span;
use tracing::subscriber::Interest;
use tracing_subscriber::Registry;
use tracing_subscriber::layer::{Context, Filter, Layer};

/// The layer `start` puts in place.
type OtelLayer = tracing_opentelemetry::OpenTelemetryLayer<Registry, SdkTracer>;

/// The longest the exporter may take to send what is left when the process ends.
const FLUSH: Duration = Duration::from_secs(5);

/// What the environment asks of the export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtelSettings {
    /// The endpoint's URL as given (the exporter reads the variables itself).
    pub endpoint: String,
    /// Whether message content goes into span attributes (guarded).
    pub capture_content: bool,
}

/// Why the OpenTelemetry variables cannot be used: each message names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OtelEnvError {
    /// The endpoint is not a URL.
    #[error("{var}: `{endpoint}` is not a URL ({source}); write e.g. http://collector:4318")]
    NotAUrl {
        /// The variable.
        var: &'static str,
        /// Its value.
        endpoint: String,
        /// What the URL parser said.
        source: url::ParseError,
    },
    /// The endpoint is a URL, but not http(s) or without a host.
    #[error("{var}: `{endpoint}` must be an http:// or https:// URL with a host")]
    NotHttp {
        /// The variable.
        var: &'static str,
        /// Its value.
        endpoint: String,
    },
    /// A protocol other than `http/protobuf`.
    #[error(
        "{var}: `{protocol}` is not supported; docs-agent exports OTLP over http/protobuf (a collector's port 4318)"
    )]
    Protocol {
        /// The variable.
        var: &'static str,
        /// Its value.
        protocol: String,
    },
}

/// Why the exporter could not be built (the command goes on without export).
#[derive(Debug, thiserror::Error)]
#[error("cannot export traces to {endpoint}: {source}")]
pub struct ExportError {
    /// The endpoint.
    endpoint: String,
    /// What the exporter's builder said.
    source: opentelemetry_otlp::ExporterBuildError,
}

impl OtelSettings {
    /// Reads `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` (none:
    /// no export; `OTEL_SDK_DISABLED=true` turns it off), the protocol (only `http/protobuf`)
    /// and `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`. An error names the variable.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<OtelSettings>, OtelEnvError> {
        let set = |name: &str| get(name).filter(|v| !v.trim().is_empty()).map(|v| v.trim().to_string());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let named = ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]
            .into_iter()
            .find_map(|var| set(var).map(|value| (var, value)));
        let Some((var, endpoint)) = named else { return Ok(None) };
        let url = match reqwest::Url::parse(&endpoint) {
            Ok(url) => url,
            Err(source) => return Err(OtelEnvError::NotAUrl { var, endpoint, source }),
        };
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(OtelEnvError::NotHttp { var, endpoint });
        }
        for var in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let Some(protocol) = set(var).filter(|p| p != "http/protobuf") {
                return Err(OtelEnvError::Protocol { var, protocol });
            }
        }
        let capture_content =
            set("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        Ok(Some(OtelSettings { endpoint, capture_content }))
    }
}

/// The export's layer while it has no exporter yet: it passes what it hears to the OTLP layer
/// once [`start`] has put one in place, and drops it before.
pub struct Deferred {
    /// The layer, once started.
    inner: Arc<OnceLock<OtelLayer>>,
}

/// Where [`start`] puts the layer for the [`Deferred`] one in the subscriber.
static SLOT: OnceLock<Arc<OnceLock<OtelLayer>>> = OnceLock::new();
/// The provider, for [`finish`].
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();
/// What the environment asked, for the sandbox plan and the spans.
static SETTINGS: OnceLock<OtelSettings> = OnceLock::new();

/// The export asked for, if any (known once the log is set up).
pub fn settings() -> Option<&'static OtelSettings> {
    SETTINGS.get()
}

/// Whether message content may go into span attributes (guarded).
pub fn capture_content() -> bool {
    settings().is_some_and(|s| s.capture_content)
}

/// The layer for the subscriber, empty until [`start`]: only docs-agent's spans at `info` and
/// above reach it.
pub fn layer(settings: OtelSettings) -> super::log::Boxed {
    let inner = SLOT.get_or_init(|| Arc::new(OnceLock::new())).clone();
    let _ = SETTINGS.set(settings);
    Deferred { inner }.with_filter(OwnSpans).boxed()
}

/// Builds the exporter and puts the layer in place: call once the sandbox is entered. Nothing
/// happens when no export was asked for. An error says what failed; the command goes on
/// without export.
pub fn start() -> Result<(), ExportError> {
    let (Some(settings), Some(slot)) = (SETTINGS.get(), SLOT.get()) else { return Ok(()) };
    if slot.get().is_some() {
        return Ok(());
    }
    // The exporter's HTTP client is reqwest's, built with rustls but without a crypto provider
    // of its own: without one installed, building it panics.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|source| ExportError { endpoint: settings.endpoint.clone(), source })?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES")
            .is_ok_and(|a| a.split(',').any(|kv| kv.trim().starts_with("service.name=")));
    if !named {
        resource = resource.with_service_name("docs-agent");
    }
    let resource = resource.with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(super::guarded::Guarded(exporter))
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("docs-agent");
    // Spans carry what the GenAI and HTTP conventions name; not the source location, thread,
    // target or busy and idle times the bridge adds by default (noise in a collector's view).
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false);
    let _ = slot.set(layer);
    let _ = PROVIDER.set(provider);
    Ok(())
}

/// Sends the spans not yet exported and stops the exporter (waiting at most a few seconds for
/// a collector that does not answer): call before the process exits.
pub fn finish() {
    if let Some(provider) = PROVIDER.get()
        && let Err(e) = provider.shutdown_with_timeout(FLUSH)
    {
        tracing::warn!("could not send the last traces: {e}");
    }
}

impl Layer<Registry> for Deferred {
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, Registry>) {
        if let Some(inner) = self.inner.get() {
            inner.on_new_span(attrs, id, ctx);
        }
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, Registry>) {
        if let Some(inner) = self.inner.get() {
            inner.on_record(id, values, ctx);
        }
    }

    fn on_follows_from(&self, id: &span::Id, follows: &span::Id, ctx: Context<'_, Registry>) {
        if let Some(inner) = self.inner.get() {
            inner.on_follows_from(id, follows, ctx);
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, Registry>) {
        if let Some(inner) = self.inner.get() {
            inner.on_event(event, ctx);
        }
    }

    fn on_enter(&self, id: &span::Id, ctx: Context<'_, Registry>) {
        if let Some(inner) = self.inner.get() {
            inner.on_enter(id, ctx);
        }
    }

    fn on_exit(&self, id: &span::Id, ctx: Context<'_, Registry>) {
        if let Some(inner) = self.inner.get() {
            inner.on_exit(id, ctx);
        }
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, Registry>) {
        if let Some(inner) = self.inner.get() {
            inner.on_close(id, ctx);
        }
    }

    // SAFETY: the pointers come from the started layer's own `downcast_raw`, valid as long as
    // `self` (which owns it, never replaced once set) is; before it is started, nothing is
    // found, so attributes set on a span then are dropped, as the span itself is.
    unsafe fn downcast_raw(&self, id: std::any::TypeId) -> Option<*const ()> {
        if id == std::any::TypeId::of::<Self>() {
            return Some(self as *const Self as *const ());
        }
        // SAFETY: forwarded as is; see above.
        self.inner.get().and_then(|inner| unsafe { inner.downcast_raw(id) })
    }
}

/// Lets through docs-agent's own spans and events at `info` and above, and nothing of other
/// crates (their spans would be noise, and their fields are not checked here).
struct OwnSpans;

impl OwnSpans {
    fn wanted(meta: &tracing::Metadata<'_>) -> bool {
        meta.target().starts_with("docs_agent") && *meta.level() <= tracing::Level::INFO
    }
}

impl Filter<Registry> for OwnSpans {
    fn enabled(&self, meta: &tracing::Metadata<'_>, _: &Context<'_, Registry>) -> bool {
        Self::wanted(meta)
    }

    fn callsite_enabled(&self, meta: &'static tracing::Metadata<'static>) -> Interest {
        if Self::wanted(meta) { Interest::always() } else { Interest::never() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of a table: the input, which error it must give, and that error's message.
    type Row<'a> = (&'a [(&'a str, &'a str)], fn(&OtelEnvError) -> bool, &'a str);

    /// The export's settings from these variables.
    fn read(vars: &[(&str, &str)]) -> Result<Option<OtelSettings>, OtelEnvError> {
        OtelSettings::from_env(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    /// Each way the variables are refused: the error, and its message naming the variable.
    #[test]
    fn bad_variables_are_named() {
        assert_eq!(read(&[]), Ok(None));
        let asked = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")]).expect("valid");
        assert_eq!(asked.map(|s| s.endpoint), Some("http://collector:4318".to_string()));
        #[rustfmt::skip]
        let cases: [Row<'_>; 3] = [
            (&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector-4318")], |e| matches!(e, OtelEnvError::NotAUrl { .. }),
             "OTEL_EXPORTER_OTLP_ENDPOINT: `collector-4318` is not a URL (relative URL without a base); write e.g. http://collector:4318"),
            (&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector")], |e| matches!(e, OtelEnvError::NotHttp { .. }),
             "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `ftp://collector` must be an http:// or https:// URL with a host"),
            (&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
             |e| matches!(e, OtelEnvError::Protocol { .. }),
             "OTEL_EXPORTER_OTLP_PROTOCOL: `grpc` is not supported; docs-agent exports OTLP over http/protobuf (a collector's port 4318)"),
        ];
        for (vars, is, message) in cases {
            let error = read(vars).expect_err(message);
            assert!(is(&error), "{error:?}");
            assert_eq!(error.to_string(), message);
        }
    }
}

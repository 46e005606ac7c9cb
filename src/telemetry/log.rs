//! The process's log subscriber: one per process, set up by the front end before anything is
//! logged. Lines go to stderr through the redacting sink (`guard::sink`), the same last step
//! as every other line docs-agent writes.

use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::guard::sink::Sink;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For a person at a terminal: time, level, where, message and fields on one line.
    Text,
    /// One JSON object per line (a collector's input): `timestamp`, `level`, `target`,
    /// `fields` and `spans` (each open span with its fields: request and session ids).
    Json,
}

/// A `DOCS_AGENT_LOG_FORMAT` that is neither `text` nor `json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("DOCS_AGENT_LOG_FORMAT: `{0}` is not a log format; write `text` or `json`")]
pub struct UnknownFormat(pub String);

impl Format {
    /// Reads `text` or `json` (from `DOCS_AGENT_LOG_FORMAT`).
    pub fn parse(value: &str) -> Result<Format, UnknownFormat> {
        match value {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            other => Err(UnknownFormat(other.to_string())),
        }
    }
}

/// A log filter that `tracing` cannot read, named with the variable it came from.
#[derive(Debug, thiserror::Error)]
#[error(
    "{from}: `{filter}` is not a log filter ({source}); write a level (`info`) or targets and levels (`docs_agent=debug,warn`)"
)]
pub struct FilterError {
    /// The variable (`DOCS_AGENT_LOG`, `RUST_LOG`) or the command's default.
    pub from: &'static str,
    /// The filter as written.
    pub filter: String,
    /// What the filter parser said.
    pub source: tracing_subscriber::filter::ParseError,
}

/// What the log shows, as the front end read it from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// `tracing` filter directives: `warn`, `info`, `docs_agent=debug,warn`...
    pub filter: String,
    /// Where the filter came from (`DOCS_AGENT_LOG`, `RUST_LOG` or the command's default), for
    /// an error message.
    pub from: &'static str,
    /// How lines are written.
    pub format: Format,
    /// Whether the lines may carry terminal colours (stderr is a terminal).
    pub colour: bool,
    /// Whether the libraries' own events pass at the filter's levels
    /// (`DOCS_AGENT_LOG_DEPENDENCIES=1`); otherwise they are capped at [`DEPENDENCY_CAP`].
    pub dependencies: bool,
}

/// The libraries whose own events are capped at warnings: at debug and trace they log whole
/// requests, responses and connection details (an MCP message with a client's question, a
/// pool's `user:password@host`), escaped or split where the redactor reads poorly.
pub const DEPENDENCIES: &[&str] = &[
    "rmcp",
    "hyper",
    "hyper_util",
    "h2",
    "reqwest",
    "rustls",
    "tower",
    "tower_http",
    "axum",
    "tokio_postgres",
    "deadpool",
    "deadpool_postgres",
    "postgres_protocol",
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry_otlp",
    "opentelemetry_http",
    "tracing_opentelemetry",
    "notify",
    "mio",
    "globset",
    "rusqlite",
];

/// The level the libraries' own events are capped at.
pub const DEPENDENCY_CAP: &str = "warn";

/// `filter` with every library of [`DEPENDENCIES`] capped at [`DEPENDENCY_CAP`], unless
/// `dependencies` lets them through.
fn with_caps(filter: EnvFilter, dependencies: bool) -> EnvFilter {
    if dependencies {
        return filter;
    }
    DEPENDENCIES.iter().fold(filter, |filter, target| match format!("{target}={DEPENDENCY_CAP}").parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    })
}

/// The log's layer, writing through `sink`: its type is the redacting [`Sink`], so no line can
/// skip the redaction.
fn log_layer<W, M>(settings: &LogSettings, sink: M) -> Boxed
where
    W: std::io::Write + 'static,
    M: Fn() -> Sink<W> + Send + Sync + 'static,
{
    match settings.format {
        Format::Text => tracing_subscriber::fmt::layer().with_writer(sink).with_ansi(settings.colour).boxed(),
        Format::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(false)
            .with_span_list(true)
            .with_writer(sink)
            .boxed(),
    }
}

/// Set once the subscriber is installed: a second call (an in-process test) changes nothing.
static INSTALLED: OnceLock<()> = OnceLock::new();

/// A layer of the process's subscriber.
pub type Boxed = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Installs the process's subscriber, with `extra` layers (an exporter's) beside the log, each
/// with its own filter. An unreadable filter is an error that names its variable.
pub fn init(settings: &LogSettings, extra: Vec<Boxed>) -> Result<(), FilterError> {
    let filter = EnvFilter::builder().parse(&settings.filter).map_err(|source| FilterError {
        from: settings.from,
        filter: settings.filter.clone(),
        source,
    })?;
    let filter = with_caps(filter, settings.dependencies);
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let log = log_layer(settings, crate::guard::sink::stderr);
    let mut layers = extra;
    layers.push(log.with_filter(filter).boxed());
    let installed = tracing_subscriber::registry().with(layers).try_init();
    // Already installed elsewhere (a test harness): that subscriber stays.
    let _ = installed;
    let _ = INSTALLED.set(());
    if settings.dependencies {
        tracing::warn!(
            "DOCS_AGENT_LOG_DEPENDENCIES: the libraries' own events are logged at {}; at debug and trace they carry \
             whole requests and responses (questions, documents, connection details), redacted as every line is but \
             not read as docs-agent's own; turn it off when done",
            settings.filter
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A buffer the log writes into.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What one event, with a secret in its message and in a field, looks like in `format`.
    fn logged(format: Format) -> String {
        let buffer = Buffer::default();
        let into = buffer.clone();
        let settings = LogSettings { filter: "info".into(), from: "test", format, colour: false, dependencies: false };
        let layer = log_layer(&settings, move || Sink::new(into.clone()));
        let subscriber = tracing_subscriber::registry().with(layer);
        let key = "sk-test-4eC39HqLyjWDarjtT1zdp7dc";
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", request_id = "r-1", token = %key);
            span.in_scope(|| tracing::warn!(detail = %key, "the server said {key}"));
        });
        let text = String::from_utf8_lossy(&buffer.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
        assert!(text.contains("r-1") && text.contains("the server said"), "{text}");
        text
    }

    /// At `trace`, the libraries' own events stay out unless the flag lets them in; docs-agent's
    /// own pass at every level.
    #[test]
    fn the_libraries_events_are_capped_unless_the_flag_says_otherwise() {
        for dependencies in [false, true] {
            let buffer = Buffer::default();
            let into = buffer.clone();
            let settings =
                LogSettings { filter: "trace".into(), from: "test", format: Format::Text, colour: false, dependencies };
            let filter = with_caps(EnvFilter::new(&settings.filter), dependencies);
            let layer = log_layer(&settings, move || Sink::new(into.clone())).with_filter(filter);
            let subscriber = tracing_subscriber::registry().with(layer);
            tracing::subscriber::with_default(subscriber, || {
                tracing::debug!(target: "rmcp::service", "a whole request");
                tracing::trace!(target: "hyper_util::client::legacy::pool", "a pooled connection");
                tracing::warn!(target: "rmcp::service", "a library's warning");
                tracing::trace!(target: "docs_agent::index", "our own detail");
            });
            let text = String::from_utf8_lossy(&buffer.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
            assert!(text.contains("a library's warning") && text.contains("our own detail"), "{text}");
            assert_eq!(text.contains("a whole request"), dependencies, "{dependencies}: {text}");
            assert_eq!(text.contains("a pooled connection"), dependencies, "{dependencies}: {text}");
        }
    }

    #[test]
    fn every_line_is_redacted_in_both_formats() {
        for format in [Format::Text, Format::Json] {
            let text = logged(format);
            assert!(!text.contains("4eC39HqLyjWDarjtT1zdp7dc"), "{format:?}: {text}");
        }
        let json: serde_json::Value = serde_json::from_str(logged(Format::Json).trim()).expect("one JSON line");
        assert_eq!(json["spans"][0]["name"], "request");
        assert_eq!(json["level"], "WARN");
    }

    #[test]
    fn formats_and_filters_are_checked() {
        assert_eq!(Format::parse("json"), Ok(Format::Json));
        assert_eq!(Format::parse("yaml"), Err(UnknownFormat("yaml".into())));
        assert_eq!(
            UnknownFormat("yaml".into()).to_string(),
            "DOCS_AGENT_LOG_FORMAT: `yaml` is not a log format; write `text` or `json`"
        );
        let settings = LogSettings {
            filter: "x=loud".into(),
            from: "RUST_LOG",
            format: Format::Text,
            colour: false,
            dependencies: false,
        };
        let error = init(&settings, Vec::new()).expect_err("a bad level");
        assert!(error.to_string().starts_with("RUST_LOG: `x=loud` is not a log filter ("), "{error}");
        assert!(
            error.to_string().ends_with("); write a level (`info`) or targets and levels (`docs_agent=debug,warn`)")
        );
    }
}

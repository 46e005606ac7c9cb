//! What docs-agent tells an operator about itself: log events and spans through `tracing`, for
//! every command.
//!
//! - `log`: the subscriber, set up once per process by the front end: human-readable text on
//!   a terminal, JSON lines otherwise, filtered by `DOCS_AGENT_LOG` or `RUST_LOG`, written
//!   through the redacting stderr sink (`guard::sink`), so no secret reaches a log;
//!
//! A turn's spans (`turn`, then `chat {model}` and `execute_tool {name}`) are made from the
//! turn's own events by `session::spans`, so every front end gets the same ones; `serve` adds
//! a `request` span around each HTTP request.
//!
//! - `otel`: when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, the same spans exported over OTLP
//!   (HTTP/protobuf), started once the kernel sandbox is entered; `guarded`: the exporter's
//!   last step, which scrubs every text a span carries out.
//!
//! Span and field names follow the OpenTelemetry GenAI semantic conventions, so the same spans
//! are exported as they are.

pub mod guarded;
pub mod log;
pub mod otel;

pub use log::{Format, LogSettings};

//! The OpenAPI document, generated from the handlers' `#[utoipa::path]` attributes and the
//! types they read and answer with (utoipa), so it cannot drift from what they do. Built once;
//! `GET /openapi.json` serves it. `src/serve/openapi.json` is the same document, committed for
//! readers and client generators, and a test fails when the two differ.
//!
//! What every route behind a token can answer because of the layers around it (401, 408, 413,
//! 429, 503, 504), not because of its handler, is added here once ([`Layers`]).

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response as HttpResponse};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{self, RefOr, Response, ResponseBuilder, header::HeaderBuilder};
use utoipa::{Modify, OpenApi};

use super::{approvals, ask, auth, completions, error, history, mcp, ops, sessions, sources, suggest};

/// The document, as JSON, built on first use.
pub static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    ApiDoc::openapi().to_pretty_json().map(|json| json + "\n").unwrap_or_else(|e| {
        format!("{{\"error\": {{\"code\": \"internal\", \"message\": \"the OpenAPI document: {e}\"}}}}")
    })
});

/// `GET /openapi.json`: this document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi",
    summary = "This document",
    security(()),
    responses((status = 200, description = "the OpenAPI document", body = Object))
)]
pub async fn document() -> HttpResponse {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT.as_str()).into_response()
}

/// The document's parts: every operation and the schemas they name.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "docs-agent",
        description = "Answers questions about a product's docs with citations; every guardrail is held by the \
                       harness. Authenticate with `Authorization: Bearer <token>`. Errors are \
                       `{\"error\": {\"code\", \"message\"}}`."
    ),
    paths(
        ops::healthz,
        ops::readyz,
        document,
        page,
        ask::ask,
        ask::search,
        ask::section,
        suggest::suggestions,
        sessions::create,
        history::list,
        history::rename,
        auth::me,
        sessions::show,
        sessions::close,
        sessions::message,
        sessions::events,
        sessions::cancel,
        sessions::resume,
        sessions::feedback,
        ops::gaps,
        approvals::list,
        approvals::decide,
        completions::completions,
        completions::models,
        ops::metrics,
        mcp::handle,
        sources::sync,
    ),
    components(schemas(error::ErrorBody, crate::guard::markdown::Node)),
    modifiers(&Layers),
    security(("bearer" = []))
)]
struct ApiDoc;

/// `GET /`: the web page. Its route serves a file of `page::ASSETS`; this only documents it.
#[utoipa::path(
    get,
    path = "/",
    summary = "The web page (served with a strict Content-Security-Policy)",
    security(()),
    responses((status = 200, description = "HTML", content_type = "text/html"))
)]
#[allow(dead_code)]
fn page() {}

/// The bearer scheme, and the answers the layers give on every route.
struct Layers;

impl Modify for Layers {
    fn modify(&self, doc: &mut openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        let bearer = SecurityRequirement::new("bearer", Vec::<String>::new());
        for item in doc.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.options,
                &mut item.head,
                &mut item.patch,
                &mut item.trace,
            ];
            for operation in operations.into_iter().flatten() {
                // A route with an empty requirement takes no token (it may take one); the others
                // name the bearer scheme themselves, not only through the document's default.
                let security = operation.security.get_or_insert_with(|| vec![bearer.clone()]);
                let public = security.iter().any(|r| *r == SecurityRequirement::default());
                let responses = &mut operation.responses.responses;
                let mut add = |status: &str, response: Response| {
                    responses.entry(status.to_string()).or_insert(RefOr::T(response));
                };
                if !public {
                    add("401", error_response("no or bad token (`WWW-Authenticate: Bearer`)", false));
                    add(
                        "408",
                        plain("the body did not arrive within serve.body_read_timeout_secs (connection closed)"),
                    );
                    add("413", error_response("body too large (too_large)", false));
                    add("429", error_response("rate limited: more than serve.rate_per_minute requests", true));
                }
                add("503", error_response("overloaded: serve.max_concurrent requests are in flight", true));
                add("504", error_response("timeout: longer than serve.request_timeout_secs", false));
            }
        }
    }
}

/// A response in the one error shape; `retry` adds its Retry-After header.
fn error_response(description: &str, retry: bool) -> Response {
    let mut response = ResponseBuilder::new().description(description).content(
        "application/json",
        openapi::content::ContentBuilder::new().schema(Some(openapi::Ref::from_schema_name("Error"))).build(),
    );
    if retry {
        response = response.header("Retry-After", retry_after());
    }
    response.build()
}

/// A response with no body.
fn plain(description: &str) -> Response {
    ResponseBuilder::new().description(description).build()
}

/// The Retry-After header: seconds to wait.
pub fn retry_after() -> openapi::header::Header {
    HeaderBuilder::new()
        .schema(openapi::ObjectBuilder::new().schema_type(openapi::schema::Type::Integer))
        .description(Some("seconds to wait before trying again"))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed `src/serve/openapi.json` is the generated document: regenerate it with
    /// `DOCS_AGENT_WRITE_OPENAPI=1 cargo test --lib serve::openapi`.
    #[test]
    fn the_committed_document_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/serve/openapi.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        if committed == *DOCUMENT {
            return;
        }
        if std::env::var_os("DOCS_AGENT_WRITE_OPENAPI").is_some() {
            std::fs::write(path, DOCUMENT.as_bytes()).expect("write src/serve/openapi.json");
            return;
        }
        panic!(
            "src/serve/openapi.json differs from the document the handlers generate; regenerate it with \
             `DOCS_AGENT_WRITE_OPENAPI=1 cargo test --lib serve::openapi` and commit it"
        );
    }

    /// The document is valid JSON with the error schema every error response names, and each
    /// operation has its own id (client generators name their functions by it).
    #[test]
    fn the_document_names_the_error_schema_and_unique_operations() {
        let doc: serde_json::Value = serde_json::from_str(&DOCUMENT).expect("JSON");
        assert!(doc["components"]["schemas"]["Error"].is_object(), "{doc}");
        assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
        let mut ids = std::collections::BTreeSet::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("operations") {
                let id = operation["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no id"));
                assert!(ids.insert(id.to_string()), "{method} {path}: operationId {id} is taken");
            }
        }
    }
}

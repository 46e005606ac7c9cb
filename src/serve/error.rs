//! One error shape for the whole API: `{"error": {"code": "...", "message": "..."}}`, with a
//! stable `code` a client can branch on and a message written for the person reading it.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::session::store::LogError;

/// The body of every error the API answers: `{"error": {"code", "message"}}` (named `Error` in
/// the OpenAPI document).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// An error's code and message.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable, for a client to branch on: unauthorized, forbidden, not_found, bad_request,
    /// rate_limited, overloaded, timeout, too_many_sessions, too_many_open_sessions,
    /// too_many_starts, too_many_turns, too_many_followers, session_busy, session_closed,
    /// awaiting_approval, turn_in_progress, not_running, not_pending, expired, refused_by_rule,
    /// model_error, model_unavailable, method_not_allowed, nothing_to_resume, too_large,
    /// storage_error, corrupt_log, internal, budget_exhausted (429: the session's token or cost
    /// budget is spent).
    pub code: &'static str,
    /// For the person reading it (scrubbed).
    pub message: String,
}

/// An API error.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// Stable, machine-readable.
    pub code: &'static str,
    /// For the person.
    pub message: String,
    /// Seconds to wait before trying again (429, 503).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), retry_after: None }
    }

    /// 400: the request is malformed.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 404: no such thing, or not this principal's.
    pub fn not_found(what: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("{what} not found"))
    }

    /// 409: the session is not in a state that allows this.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }

    /// 403: authenticated, but the role is missing.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 503 `overloaded`: a capacity limit is reached; try again after `retry_after` seconds.
    pub fn overloaded(message: impl Into<String>, retry_after: u64) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", message).retry_after(retry_after)
    }

    /// 500: something on our side.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// With a Retry-After.
    pub fn retry_after(mut self, secs: u64) -> ApiError {
        self.retry_after = Some(secs);
        self
    }
}

/// A handler's JSON body with `status`, or its error in the one error shape.
pub fn respond<T: Serialize>(result: Result<T, ApiError>, status: StatusCode) -> Response {
    match result {
        Ok(body) => (status, axum::Json(body)).into_response(),
        Err(e) => e.into_response(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail { code: self.code, message: crate::guard::scrub(&self.message).into_owned() },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

impl ApiError {
    /// A body that could not be read as the JSON expected: 413 when it is too large, else 400
    /// with `hint` (the shape expected).
    pub fn body(rejection: axum::extract::rejection::JsonRejection, hint: &str) -> ApiError {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            return ApiError::new(status, "too_large", "the request body is larger than serve.max_body_bytes");
        }
        ApiError::bad_request(format!("{}; send {hint}", rejection.body_text()))
    }
}

/// The service's refusals in HTTP's terms.
impl From<crate::service::Refused> for ApiError {
    fn from(refused: crate::service::Refused) -> Self {
        use crate::service::Refused;
        match refused {
            Refused::OverShare { share, message, retry_after } => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, share.code(), message).retry_after(retry_after)
            }
            Refused::Forbidden(message) => ApiError::forbidden(message),
            Refused::Model(message) => ApiError::new(StatusCode::BAD_GATEWAY, "model_error", message),
            Refused::Log(e) => e.into(),
            Refused::NotFound(what) => ApiError::not_found(what),
            Refused::NoCollection(message) => ApiError::new(StatusCode::NOT_FOUND, "no_collection", message),
            Refused::Conflict { conflict, message } => ApiError::conflict(conflict.code(), message),
            Refused::BudgetExhausted(message) => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, "budget_exhausted", message)
            }
            Refused::Overloaded { message, retry_after } => ApiError::overloaded(message, retry_after),
            Refused::Internal(message) => ApiError::internal(message),
        }
    }
}

impl IntoResponse for crate::service::Refused {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}

/// Each kind of log failure has its status: a session another request holds is 409 (try
/// again when it is done); storage that fails is a 500 that says so, never a 409.
impl From<LogError> for ApiError {
    fn from(e: LogError) -> Self {
        // Out of file descriptors: a load to wait out (503), said without the log's path.
        if e.out_of_descriptors() {
            return ApiError::overloaded("the server has too many files open right now; try again shortly", 2);
        }
        match &e {
            LogError::Busy { session } => {
                ApiError::conflict("turn_in_progress", format!("session {session} has a turn running"))
            }
            // Another replica drives the session now, or recorded the same effect first.
            LogError::LeaseLost { .. } | LogError::Duplicate { .. } => {
                ApiError::conflict("turn_in_progress", e.to_string())
            }
            LogError::Io { .. } | LogError::Sql { .. } | LogError::Database { .. } | LogError::NewerSchema { .. } => {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "storage_error",
                    format!("the session log could not be read or written: {e}"),
                )
            }
            LogError::Corrupt { .. } => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "corrupt_log", e.to_string()),
            LogError::AppendOnly => ApiError::internal(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Running out of file descriptors is a 503 to retry, said without the log's path; any
    /// other failure to open the log is still a 500.
    #[test]
    fn out_of_descriptors_is_503_with_retry_after_and_no_path() {
        let failed = |code| LogError::Io {
            what: "cannot open the session log /srv/private/sessions.db".into(),
            hint: "",
            source: std::io::Error::from_raw_os_error(code),
        };
        for code in [24, 23] {
            let e = ApiError::from(failed(code));
            assert_eq!((e.status, e.code, e.retry_after), (StatusCode::SERVICE_UNAVAILABLE, "overloaded", Some(2)));
            assert!(!e.message.contains("/srv") && !e.message.contains("sessions.db"), "{}", e.message);
        }
        let e = ApiError::from(failed(13));
        assert_eq!((e.status, e.code), (StatusCode::INTERNAL_SERVER_ERROR, "storage_error"));
    }

    /// Each refusal of the service has its status and code over HTTP, the ones the API has
    /// always answered (a client branches on the code).
    #[test]
    fn each_refusal_has_its_status_and_code() {
        use crate::service::{Conflict, Refused};
        let cases = [
            (Refused::NotFound("session"), StatusCode::NOT_FOUND, "not_found"),
            (Refused::conflict(Conflict::TurnInProgress, "m"), StatusCode::CONFLICT, "turn_in_progress"),
            (Refused::conflict(Conflict::AwaitingApproval, "m"), StatusCode::CONFLICT, "awaiting_approval"),
            (Refused::conflict(Conflict::SessionClosed, "m"), StatusCode::CONFLICT, "session_closed"),
            (Refused::conflict(Conflict::NotPending, "m"), StatusCode::CONFLICT, "not_pending"),
            (Refused::conflict(Conflict::Expired, "m"), StatusCode::CONFLICT, "expired"),
            (Refused::BudgetExhausted("m".into()), StatusCode::TOO_MANY_REQUESTS, "budget_exhausted"),
            (
                Refused::Overloaded { message: "m".into(), retry_after: 3 },
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
            ),
            (Refused::Forbidden("m".into()), StatusCode::FORBIDDEN, "forbidden"),
            (Refused::Model("m".into()), StatusCode::BAD_GATEWAY, "model_error"),
            (Refused::Internal("m".into()), StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            (Refused::Log(LogError::Busy { session: "s".into() }), StatusCode::CONFLICT, "turn_in_progress"),
        ];
        for (refused, status, code) in cases {
            let e = ApiError::from(refused);
            assert_eq!((e.status, e.code), (status, code), "{}", e.message);
        }
        let e = ApiError::from(Refused::Overloaded { message: "m".into(), retry_after: 3 });
        assert_eq!(e.retry_after, Some(3));
        assert_eq!(ApiError::from(Refused::NotFound("session")).message, "session not found");
    }

    /// Only another writer holding the session is "busy": an expiry racing a decision leaves
    /// it to the decision, and nothing else is mistaken for that.
    #[test]
    fn busy_is_another_writer_only() {
        use crate::service::{Conflict, Refused};
        assert!(Refused::conflict(Conflict::TurnInProgress, "m").is_busy());
        assert!(Refused::Log(LogError::Busy { session: "s".into() }).is_busy());
        assert!(!Refused::conflict(Conflict::NotPending, "m").is_busy());
        assert!(!Refused::Internal("m".into()).is_busy());
    }
}

//! Why a model server's reply could not be read as a chat completion, streamed or whole: one
//! closed set, so a caller tells a server that reported an error (its words are the message)
//! from a reply that is broken (the shape is the message).

/// What was wrong with a reply. The texts that come from the server (`Reported`, `Body`) are
/// already clipped; [`super::ModelError`] scrubs everything it shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The server said it failed, in an error object or an `error` event instead of a reply.
    #[error("the server reported an error: {0}")]
    Reported(String),
    /// The body is not JSON (a whole reply) or a `data:` chunk is not (a stream).
    #[error("{0} is not JSON ({1})")]
    NotJson(&'static str, String),
    /// Bytes that are not UTF-8.
    #[error("{0} is not UTF-8")]
    NotUtf8(&'static str),
    /// More than the client reads.
    #[error("{0} is larger than {1} MiB")]
    TooLarge(&'static str, usize),
    /// JSON, but no `choices[0].message`.
    #[error("no choices[0].message in the reply")]
    NoMessage,
    /// A tool call without its `function`.
    #[error("tool_calls[{0}] has no function")]
    NoFunction(usize),
    /// A tool call's function without a `name`.
    #[error("tool_calls[{0}].function has no name")]
    NoName(usize),
    /// A streamed tool call whose index is past what is read.
    #[error("a streamed tool call has index {0}; at most {max} are read", max = super::MAX_STREAMED_CALLS)]
    TooManyCalls(usize),
    /// The stream ended before `[DONE]` or a `finish_reason`: cut off, not a shorter answer.
    #[error("the stream ended before the reply was complete (no [DONE] and no finish_reason)")]
    CutOff,
    /// The body broke off while it was read.
    #[error("the body could not be read ({0})")]
    Body(String),
}

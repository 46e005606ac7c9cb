//! Budgets: the tokens and cost a question (one turn) and a session (all its turns) may use
//! (`[budget]`). What was spent is read from the log, so it holds across restarts and
//! front ends: the tokens each model call used as the server reported them, or the harness's
//! estimate when it did not. A turn checks before each model call, and stops with the reason
//! `budget` once a limit is reached; the call that crossed it is the last.

use crate::config::{BudgetConfig, Price};
use crate::session::event::{Event, Tokens};
use crate::session::store::Stored;

/// Tokens and cost spent by some events.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// Prompt tokens (reported, or estimated where the server said nothing).
    pub input: u64,
    /// Completion tokens (likewise).
    pub output: u64,
    /// Of these, tokens the harness estimated.
    pub estimated: u64,
    /// Model calls.
    pub calls: u64,
}

impl Spent {
    /// Everything the model calls among `events` used.
    pub fn of(events: &[Stored]) -> Spent {
        events.iter().fold(Spent::default(), |mut spent, stored| {
            let (usage, estimated) = match &stored.event {
                Event::AssistantMessage { usage, estimated, .. } => (usage, estimated),
                // A call cut by a cancel was billed too.
                Event::Interrupted { estimated, .. } => (&None, estimated),
                _ => return spent,
            };
            let (tokens, guessed) = match (usage, estimated) {
                (Some(t), _) => (*t, false),
                (None, Some(t)) => (*t, true),
                (None, None) => return spent,
            };
            spent.input += tokens.prompt;
            spent.output += tokens.completion;
            if guessed {
                spent.estimated += tokens.prompt + tokens.completion;
            }
            spent.calls += 1;
            spent
        })
    }

    /// Prompt and completion tokens together.
    pub fn tokens(&self) -> u64 {
        self.input + self.output
    }

    /// What they cost at `price`.
    pub fn cost(&self, price: &Price) -> f64 {
        (self.input as f64 * price.input_per_million + self.output as f64 * price.output_per_million) / 1e6
    }
}

/// A session's usage as the API and `sessions show` report it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, utoipa::ToSchema)]
#[schema(as = SessionUsage)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Of both, tokens the harness estimated (the server did not say).
    pub estimated_tokens: u64,
    /// Model calls.
    pub model_calls: u64,
    /// What they cost, when the model has a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Tokens left in the session's budget, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_left: Option<u64>,
}

impl Usage {
    /// The usage of a session's `events`, asked of `model`.
    pub fn of(budget: &BudgetConfig, model: &str, events: &[Stored]) -> Usage {
        let spent = Spent::of(events);
        Usage {
            input_tokens: spent.input,
            output_tokens: spent.output,
            estimated_tokens: spent.estimated,
            model_calls: spent.calls,
            cost: price_of(budget, model).map(|price| spent.cost(&price)),
            tokens_left: (budget.session_tokens > 0).then(|| budget.session_tokens.saturating_sub(spent.tokens())),
        }
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "{} tokens in, {} out, over {} model calls",
            self.input_tokens, self.output_tokens, self.model_calls
        );
        if self.estimated_tokens > 0 {
            line.push_str(&format!(" ({} estimated: the server did not count them)", self.estimated_tokens));
        }
        if let Some(cost) = self.cost.filter(|c| *c > 0.0) {
            line.push_str(&format!("; cost {cost:.4}"));
        }
        if let Some(left) = self.tokens_left {
            line.push_str(&format!("; {left} tokens left in the session's budget"));
        }
        line
    }
}

/// The harness's estimate of a call the server reported no usage for: the prompt it sent and
/// the reply's text and calls, as bytes / 4.
pub fn estimate(prompt: u64, reply_bytes: usize) -> Tokens {
    Tokens { prompt, completion: (reply_bytes as u64).div_ceil(4) }
}

/// The price of `model`'s tokens: a built-in model costs nothing; another one costs what
/// `[budget.prices]` says, or is unknown.
pub fn price_of(budget: &BudgetConfig, model: &str) -> Option<Price> {
    if crate::model::builtin::Builtin::from_name(model).is_some() {
        return Some(Price { input_per_million: 0.0, output_per_million: 0.0 });
    }
    budget.prices.get(model).copied()
}

/// Why the next model call may not be made: the first limit that `turn` (this question's
/// events) or `session` (all of them) reached, as a message that names the setting. `None`
/// while every limit leaves room.
pub fn reached(budget: &BudgetConfig, model: &str, turn: &[Stored], session: &[Stored]) -> Option<String> {
    let (question, all) = (Spent::of(turn), Spent::of(session));
    if budget.question_tokens > 0 && question.tokens() >= budget.question_tokens {
        return Some(format!(
            "stopped: this question used {} tokens, its budget is {} (budget.question_tokens)",
            question.tokens(),
            budget.question_tokens
        ));
    }
    if budget.session_tokens > 0 && all.tokens() >= budget.session_tokens {
        return Some(format!(
            "stopped: this session used {} tokens, its budget is {} (budget.session_tokens); start a new session",
            all.tokens(),
            budget.session_tokens
        ));
    }
    if budget.question_cost <= 0.0 && budget.session_cost <= 0.0 {
        return None;
    }
    let Some(price) = price_of(budget, model) else {
        // A cap without a price for this model (a session pinned to another one) fails closed.
        return Some(format!("stopped: a cost cap is set but `{model}` has no price; add [budget.prices.\"{model}\"]"));
    };
    if budget.question_cost > 0.0 && question.cost(&price) >= budget.question_cost {
        return Some(format!(
            "stopped: this question cost {:.4}, its cap is {} (budget.question_cost)",
            question.cost(&price),
            budget.question_cost
        ));
    }
    if budget.session_cost > 0.0 && all.cost(&price) >= budget.session_cost {
        return Some(format!(
            "stopped: this session cost {:.4}, its cap is {} (budget.session_cost); start a new session",
            all.cost(&price),
            budget.session_cost
        ));
    }
    None
}

/// The tokens the next model call may use at most, prompt and reply together, under the
/// token budgets (`budget.question_tokens`, `budget.session_tokens`): the least that either
/// leaves; `None` when neither is set.
pub fn tokens_left(budget: &BudgetConfig, turn: &[Stored], session: &[Stored]) -> Option<u64> {
    let question =
        (budget.question_tokens > 0).then(|| budget.question_tokens.saturating_sub(Spent::of(turn).tokens()));
    let all = (budget.session_tokens > 0).then(|| budget.session_tokens.saturating_sub(Spent::of(session).tokens()));
    match (question, all) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (one, other) => one.or(other),
    }
}

/// Why a session may take no new message: its own budget (tokens or cost) is spent. A
/// question's budget starts afresh with each message, so only the session's counts here.
pub fn reached_by_session(budget: &BudgetConfig, model: &str, session: &[Stored]) -> Option<String> {
    let session_only = BudgetConfig { question_tokens: 0, question_cost: 0.0, ..budget.clone() };
    reached(&session_only, model, &[], session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::Origin;

    fn call(usage: Option<Tokens>, estimated: Option<Tokens>) -> Stored {
        Stored {
            seq: 1,
            at_ms: 0,
            event: Event::AssistantMessage {
                text: String::new(),
                tool_calls: Vec::new(),
                usage,
                estimated,
                origin: Origin::Model,
            },
        }
    }

    #[test]
    fn spent_counts_reported_tokens_and_estimates_where_none_were_reported() {
        let events = [
            call(Some(Tokens { prompt: 100, completion: 20 }), None),
            call(None, Some(Tokens { prompt: 50, completion: 5 })),
            call(None, None),
        ];
        let spent = Spent::of(&events);
        assert_eq!(spent, Spent { input: 150, output: 25, estimated: 55, calls: 2 });
        // A call cut by a cancel counts too (a client cannot stream and cancel for free).
        let cut = Stored {
            seq: 4,
            at_ms: 0,
            event: Event::Interrupted {
                partial_text: "Refunds".into(),
                estimated: Some(Tokens { prompt: 40, completion: 2 }),
            },
        };
        let with_cut = [events[0].clone(), cut];
        assert_eq!(Spent::of(&with_cut), Spent { input: 140, output: 22, estimated: 42, calls: 2 });
        let price = Price { input_per_million: 1.0, output_per_million: 4.0 };
        assert!((spent.cost(&price) - (150.0 + 100.0) / 1e6).abs() < 1e-12);
    }

    #[test]
    fn the_first_limit_reached_is_named() {
        let events = [call(Some(Tokens { prompt: 900, completion: 100 }), None)];
        let none = BudgetConfig::default();
        assert_eq!(reached(&none, "m", &events, &events), None, "no limits");
        let question = BudgetConfig { question_tokens: 1000, ..Default::default() };
        assert!(reached(&question, "m", &events, &events).is_some_and(|m| m.contains("budget.question_tokens")));
        let roomy = BudgetConfig { question_tokens: 1001, session_tokens: 5000, ..Default::default() };
        assert_eq!(reached(&roomy, "m", &events, &events), None);
        let session = BudgetConfig { session_tokens: 1500, ..Default::default() };
        let earlier = [events[0].clone(), events[0].clone()];
        assert!(reached(&session, "m", &events, &earlier).is_some_and(|m| m.contains("budget.session_tokens")));

        let mut priced = BudgetConfig { question_cost: 0.001, ..Default::default() };
        assert!(reached(&priced, "m", &events, &events).is_some_and(|m| m.contains("has no price")), "fails closed");
        priced.prices.insert("m".into(), Price { input_per_million: 1.0, output_per_million: 1.0 });
        assert!(reached(&priced, "m", &events, &events).is_some_and(|m| m.contains("budget.question_cost")));
        assert_eq!(reached(&priced, "scripted", &events, &events), None, "a built-in model costs nothing");
    }
}

//! What can be wrong with a formula: it does not parse ([`ExprError`]: the byte offset, shown
//! as a 1-based column, and a one-line message with an excerpt from that point), or it parsed
//! but a name it evaluates has no value ([`EvalError`]: unknown, or known but missing, with
//! the reason).

/// A formula that does not parse: where (byte offset into the formula) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad formula at column {}: {message}{}", self.column(), self.excerpt())]
pub struct ExprError {
    /// The whole formula text.
    pub input: String,
    /// Byte offset of the problem (0-based; [`ExprError::column`] is 1-based).
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl ExprError {
    pub(super) fn new(input: &str, offset: usize, message: impl Into<String>) -> Self {
        ExprError {
            input: input.to_string(),
            offset,
            message: message.into(),
        }
    }

    /// The 1-based column of the problem, in bytes (the formulas are ASCII).
    pub fn column(&self) -> usize {
        self.offset + 1
    }

    /// ` near "..."`: a few characters from the problem on, or "" at the end of the input.
    fn excerpt(&self) -> String {
        let rest = self.input.get(self.offset..).unwrap_or("");
        if rest.trim().is_empty() {
            return " (at the end)".to_string();
        }
        let near: String = rest.chars().take(24).collect();
        format!(" near {near:?}")
    }
}

/// A formula that parsed but cannot be evaluated with the values given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The lookup knows nothing about this name.
    #[error("unknown name '{0}'")]
    UnknownName(String),
    /// The name is known, but its value is missing (an event that was not counted, a constant
    /// the caller did not provide, a retire latency without samples or default).
    #[error("no value for '{name}': {reason}")]
    NoValue {
        /// The name in the formula (alias or constant).
        name: String,
        /// Why there is no value, naming the event or constant behind it.
        reason: String,
    },
}

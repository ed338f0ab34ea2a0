//! Bearer-token authorization of the mutating endpoints.
//!
//! Handlers that change state take an [`Authorized`] argument: the request
//! must carry `Authorization: Bearer <token>` with the token of
//! `--admin-token`/`--admin-token-file` (401 otherwise). Without a configured
//! token those endpoints are refused (403): an admin port is often reachable
//! by more than the operator.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::StatusCode;

use super::error::ApiError;
use super::router::AdminState;

/// Proof that the request carried the admin token.
#[derive(Debug)]
pub struct Authorized;

impl FromRequestParts<AdminState> for Authorized {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AdminState) -> Result<Self, Self::Rejection> {
        let Some(expected) = state.token.as_deref() else {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "mutating admin endpoints are disabled: start cairn with --admin-token or --admin-token-file",
            ));
        };
        let given = parts.headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer_token);
        match given {
            Some(token) if same_token(token.as_bytes(), expected.as_bytes()) => Ok(Authorized),
            _ => Err(ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")),
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header value.
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Compares without stopping at the first difference (no timing hint about
/// how much of a guess was right).
fn same_token(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert!(same_token(b"abc", b"abc"));
        assert!(!same_token(b"abd", b"abc"));
        assert!(!same_token(b"ab", b"abc"));
    }
}

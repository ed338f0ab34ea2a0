//! Request bodies: any JSON that does not parse into the expected shape is a
//! 400 whose message says what is wrong (axum's own extractor answers 415 or
//! 422 for some of these).

use serde::de::DeserializeOwned;

use super::error::ApiError;

/// Parses a JSON request body.
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("invalid JSON body: the body is empty"));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

//! Errors of the reconcilers, each with a short label for the failure metric.

/// A reconcile that failed and will be retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("the object has no {0}")]
    MissingField(&'static str),
    #[error("encoding an object: {0}")]
    Encode(#[from] serde_json::Error),
}

impl Error {
    /// The `reason` label of `cairn_operator_reconcile_failures_total`.
    pub fn metric_label(&self) -> String {
        match self {
            Error::Kube(kube::Error::Api(status)) => format!("api_{}", status.code),
            Error::Kube(_) => "api_transport".to_string(),
            Error::MissingField(_) => "missing_field".to_string(),
            Error::Encode(_) => "encode".to_string(),
        }
    }
}

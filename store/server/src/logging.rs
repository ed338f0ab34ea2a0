//! Logging setup, with a filter that can change at runtime
//! (`PUT /v1/log-level`).
//!
//! The tracing subscriber is process-wide, so the handle that reloads its
//! filter is too: [`init`] installs both; [`set_filter`] swaps the filter.

use std::sync::OnceLock;

use parking_lot::Mutex;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, reload, EnvFilter, Registry};

use crate::config::{Config, LogFormat};

struct Control {
    handle: reload::Handle<EnvFilter, Registry>,
    current: Mutex<String>,
}

static CONTROL: OnceLock<Control> = OnceLock::new();

/// Why logging could not be set up or changed.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("invalid log filter '{filter}': {reason}")]
    InvalidFilter { filter: String, reason: String },
    #[error("logging is not controlled by this server (it was set up by the embedding program)")]
    NotInitialized,
    #[error("a global tracing subscriber is already installed")]
    AlreadyInitialized,
    #[error("cannot reload the log filter: {0}")]
    Reload(String),
}

fn parse(filter: &str) -> Result<EnvFilter, LogError> {
    EnvFilter::try_new(filter)
        .map_err(|e| LogError::InvalidFilter { filter: filter.to_string(), reason: e.to_string() })
}

/// Installs the global subscriber: stderr, text or JSON, filtered by
/// `config.log_level` (tracing `EnvFilter` syntax).
pub fn init(config: &Config) -> Result<(), LogError> {
    let (filter, handle) = reload::Layer::new(parse(&config.log_level)?);
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (text, json) = match config.log_format {
        LogFormat::Text => (Some(fmt::layer().with_writer(std::io::stderr).with_ansi(ansi)), None),
        LogFormat::Json => (None, Some(fmt::layer().json().with_writer(std::io::stderr))),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(text)
        .with(json)
        .try_init()
        .map_err(|_| LogError::AlreadyInitialized)?;
    let control = Control { handle, current: Mutex::new(config.log_level.clone()) };
    CONTROL.set(control).map_err(|_| LogError::AlreadyInitialized)
}

/// Replaces the log filter; returns the previous one.
pub fn set_filter(filter: &str) -> Result<String, LogError> {
    let parsed = parse(filter)?;
    let control = CONTROL.get().ok_or(LogError::NotInitialized)?;
    let mut current = control.current.lock();
    control.handle.reload(parsed).map_err(|e| LogError::Reload(e.to_string()))?;
    Ok(std::mem::replace(&mut current, filter.to_string()))
}

/// The filter in force, when [`init`] set up logging.
pub fn current_filter() -> Option<String> {
    CONTROL.get().map(|c| c.current.lock().clone())
}

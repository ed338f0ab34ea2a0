//! The message a fatal error leaves behind. With `--termination-message-path`
//! the error that stops the server (an invalid configuration, a start that
//! fails) is also written to that file: Kubernetes shows
//! `/dev/termination-log` as the container's termination message (`kubectl
//! describe pod`), and the operator reports it in the KVStore's status.

use std::path::Path;

/// Kubernetes keeps at most this many bytes of a termination message.
pub const MAX_BYTES: usize = 4096;

/// `message` cut, at a character boundary, to at most [`MAX_BYTES`] bytes.
pub fn fit(message: &str) -> &str {
    if message.len() <= MAX_BYTES {
        return message;
    }
    let mut end = MAX_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

/// Writes `message` (cut to fit) to `path`, replacing what was there.
pub fn write(path: &Path, message: &str) -> std::io::Result<()> {
    std::fs::write(path, fit(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_message_is_kept_whole() {
        assert_eq!(
            fit("invalid configuration: durability: unknown tier"),
            "invalid configuration: durability: unknown tier"
        );
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_BYTES);
        let cut = fit(&long);
        assert!(cut.len() <= MAX_BYTES && cut.len() >= MAX_BYTES - 1, "{}", cut.len());
        assert!(cut.chars().all(|c| c == 'é'));
    }

    #[test]
    fn writes_and_replaces_the_file() -> std::io::Result<()> {
        let dir = std::env::temp_dir().join(format!("cairn-termination-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("termination-log");
        std::fs::write(&path, "an older and longer message")?;
        write(&path, "cannot start the server")?;
        assert_eq!(std::fs::read_to_string(&path)?, "cannot start the server");
        std::fs::remove_dir_all(&dir)
    }
}

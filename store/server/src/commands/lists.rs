//! PLACEHOLDER: the lists commands. Their owner replaces this file.

use super::table::CommandSpec;

/// This family's commands (joined into the command table).
pub static COMMANDS: &[CommandSpec] = &[];

//! How long each command runs, for INFO commandstats and the latency
//! histograms, with one clock read per command: a command starts when the
//! previous one of its batch ended (or when the batch started), so the end
//! of one command is the start of the next.

/// The running mark of a batch of commands.
#[derive(Debug, Clone, Copy)]
pub struct CommandClock {
    last: quanta::Instant,
}

impl CommandClock {
    /// A mark at the start of a batch.
    pub fn start() -> CommandClock {
        CommandClock { last: quanta::Instant::now() }
    }

    /// When the command about to run starts.
    pub fn mark(&self) -> quanta::Instant {
        self.last
    }

    /// Ends a command that started at `started`: returns the µs it took and
    /// moves the mark to now. A command that runs others (EXEC) keeps its own
    /// `started`, so its time includes theirs.
    pub fn finish(&mut self, started: quanta::Instant) -> u64 {
        let now = quanta::Instant::now();
        self.last = now;
        now.saturating_duration_since(started).as_micros() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_command_ends_where_the_next_starts_and_nesting_adds_up() {
        let mut clock = CommandClock::start();
        let outer = clock.mark();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let inner = clock.mark();
        assert_eq!(inner, outer);
        let inner_us = clock.finish(inner);
        assert!(inner_us >= 2000, "{inner_us}");
        let next = clock.mark();
        assert!(next > outer);
        std::thread::sleep(std::time::Duration::from_millis(1));
        let outer_us = clock.finish(outer);
        assert!(outer_us >= inner_us + 1000, "outer {outer_us} inner {inner_us}");
    }
}

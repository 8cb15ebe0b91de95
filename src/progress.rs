//! Progress: an indicatif bar on a terminal, plain lines in CI (only what
//! matters: failures, warnings, skips and a line per finished part).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Where progress goes. Cheap to clone; safe to use from any thread.
#[derive(Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl Progress {
    /// A bar when stderr is a terminal and not `quiet`; else plain lines.
    pub fn new(quiet: bool) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress { bar, quiet }
    }

    /// Starts a part of `len` steps (0: unknown length).
    pub fn part(&self, name: &str, len: u64) {
        if let Some(b) = &self.bar {
            b.reset();
            b.set_prefix(name.to_string());
            b.set_length(len);
            b.set_message("");
        }
    }

    /// One step done; `msg` shows beside the bar.
    pub fn step(&self, msg: &str) {
        if let Some(b) = &self.bar {
            b.inc(1);
            b.set_message(printable(msg));
        }
    }

    /// A line that stays: above the bar on a terminal, on stderr otherwise.
    pub fn line(&self, text: &str) {
        if self.quiet {
            return;
        }
        let text = printable(text);
        match &self.bar {
            Some(b) => b.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// Removes the bar.
    pub fn done(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    /// A guard that removes the bar when dropped: a run that stops on an
    /// error leaves its one line, not a bar above it.
    pub fn clears_on_drop(&self) -> ClearsOnDrop {
        ClearsOnDrop(self.clone())
    }
}

/// Removes the bar of a [`Progress`] when dropped.
pub struct ClearsOnDrop(Progress);

impl Drop for ClearsOnDrop {
    fn drop(&mut self) {
        self.0.done();
    }
}

/// `text` as it may be shown on a terminal, on one line: every password in
/// a URL redacted, line breaks and tabs turned into spaces, and every other
/// control character (an adapter's escape sequences, a bell, NUL) shown as
/// a visible `\u{..}` instead of acting on the terminal. Every line the
/// CLI prints that carries text from outside goes through here.
pub fn printable(text: &str) -> String {
    let text = harness::server::redact_secrets(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// What the suites report goes to the bar or the terminal.
impl harness::Progress for Progress {
    fn part(&self, name: &str, steps: u64) {
        Progress::part(self, name, steps)
    }
    fn step(&self, label: &str) {
        Progress::step(self, label)
    }
    fn line(&self, text: &str) {
        Progress::line(self, text)
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn printable_is_one_line_without_control_characters_or_passwords() {
        assert_eq!(
            printable("red \u{1b}[31mX\u{7}\nnext\tcol redis://:pw@h/"),
            "red \\u{1b}[31mX\\u{7} next col redis://:***@h/"
        );
        assert_eq!(printable("plain – ünïcode"), "plain – ünïcode");
    }
}

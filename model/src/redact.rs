//! Secrets kept out of everything storeproof writes.

/// `text` with the password of every `scheme://user:password@host` in it
/// replaced by `***`, wherever it appears (a URL alone, a command line, an
/// error message quoting a request). The one redaction every report, log
/// line and message goes through.
///
/// The authority is taken to run to the next `/`, `?`, `#` or white space,
/// and to end at its last `@`: a password with quotes or backslashes (which
/// JSON escapes) is still hidden, at worst with some text around it.
pub fn redact_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(sep) = rest.find("://") {
        let scheme_ok = rest[..sep]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        let authority_start = sep + 3;
        out.push_str(&rest[..authority_start]);
        rest = &rest[authority_start..];
        if !scheme_ok {
            continue;
        }
        let end = rest
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(rest.len());
        let Some(at) = rest[..end].rfind('@') else {
            continue;
        };
        match rest[..at].split_once(':') {
            Some((user, _)) => {
                out.push_str(user);
                out.push_str(":***");
            }
            // A user name alone is no secret.
            None => out.push_str(&rest[..at]),
        }
        rest = &rest[at..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_secrets_hides_every_password_in_any_text() {
        for (text, shown) in [
            ("redis://:pw@h:1/", "redis://:***@h:1/"),
            (
                "--redis-url=redis://u:pw@h/0",
                "--redis-url=redis://u:***@h/0",
            ),
            ("rediss://u:p%40w@h:6380", "rediss://u:***@h:6380"),
            (
                "a redis://:x@h/ and http://u:y@z?q",
                "a redis://:***@h/ and http://u:***@z?q",
            ),
            (
                r#"{"redis_url":"redis://:p\"w@h:1/"}"#,
                r#"{"redis_url":"redis://:***@h:1/"}"#,
            ),
            ("redis://user@h/", "redis://user@h/"),
            ("redis://h:1/ no secret@all", "redis://h:1/ no secret@all"),
            ("://:pw@h", "://:pw@h"),
            ("plain", "plain"),
        ] {
            assert_eq!(redact_secrets(text), shown, "{text}");
        }
    }
}

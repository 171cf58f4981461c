//! The compiled patterns, built once on first use.
//!
//! Each is a constant, so a failure to compile is a programming error that the unit test below
//! catches; at run time a failure is not a panic but a fail-closed refusal (see `mod.rs`).

use regex::bytes::Regex as BytesRegex;
use regex::Regex;
use std::sync::LazyLock;

/// The words a secret key ends with, as alternatives of a lowercase pattern. Longer words
/// come before their prefixes (`signature` before `sig`).
macro_rules! secret_words {
    () => {
        concat!(
            r"api[_-]?key|secret[_-]?key|private[_-]?key|access[_-]?key",
            r"|passw(?:or)?d|passphrase|secret|credentials?|token|connection[_-]?string",
            r"|bearer|session[_-]?id|signature|sig|authorization|cookie",
        )
    };
}

/// A secret key followed by its separator, up to where the value starts.
///
/// The key *ends* with one of the secret words (any prefix is allowed, so `db_password` and
/// `X-Api-Key` match) and the separator follows at once, perhaps after a closing quote of a
/// quoted key, so `tokens_used=` and `token_count:` do not match.
///
/// Lowercase only: it is matched against an ASCII-lowercased copy of the text, which has the
/// same byte offsets. That ignores case while keeping the engine's literal prefilter, which
/// `(?i)` disables (measured about 5x slower on a clean 200-char message).
const KEY_THEN_SEPARATOR: &str = concat!(
    r"(?-u)(?:",
    secret_words!(),
    // ODBC's `Pwd`: a secret only in a connection string (checked by the caller). The AWS
    // CLI's `ParameterValue`: one only next to a `ParameterKey` naming a secret (likewise).
    r"|pwd|parametervalue)",
    // A closing quote of a quoted key, possibly escaped (JSON inside a string), and the
    // separator; or the `>` of an XML start tag (checked to be one by the caller).
    r#"(?:(?:\\?["'])?"#,
    r"[ \t]*(?:=>?|:=?)[ \t]*|>)",
);

/// An XML start tag named like a secret key, with attributes: `<token ` of
/// `<token expires="1">abc</token>`, up to the blank before them. Lowercase only, as
/// [`KEY_THEN_SEPARATOR`]. Its own pattern, run only on text holding a `<`, so that prose
/// (`invalid token provided`) costs nothing more.
const ELEMENT_WITH_ATTRIBUTES: &str =
    concat!(r"(?-u)<[a-z0-9_.:-]*(?:", secret_words!(), r")[ \t\r\n]",);

/// A `name` or `key` field whose quoted value is a secret key (`key="Password"`,
/// `"Name": "DB_PASSWORD"`, `name: "api_key"`), the secret word closing the value. Or, not
/// quoted (a YAML flow mapping, Go's `%+v`), followed by `,` or `}`, or by a blank and the
/// next `field:` (`{name: password, …}`, `{Name:DB_PASSWORD Value:…}`), so that prose such
/// as `name: password must be set` is not one. Lowercase only, as [`KEY_THEN_SEPARATOR`].
/// Run only on text that may hold such a pair (see `pairs.rs`), whose sibling `value` field
/// is then hidden.
const NAME_FIELD: &str = concat!(
    r#"(?-u)(?:name|key)(?:(?:\\?["'])?[ \t]*[:=][ \t]*\\?["'][a-z0-9_.:/-]*(?:"#,
    secret_words!(),
    r#")\\?["']"#,
    r#"|[ \t]*[:=][ \t]*[a-z0-9_.:/-]*(?:"#,
    secret_words!(),
    r#")(?:[ \t]*[,}]|[ \t]+[a-z_]+:))"#,
);

/// A YAML `name:` or `key:` field whose value, alone on its line, is a secret key
/// (`- name: DB_PASSWORD`, `key: 'api_key'`, `ParameterKey: DbPassword`). Lowercase only, as
/// [`KEY_THEN_SEPARATOR`]. Run only on text holding a line break (see `yaml.rs`, which checks
/// that the line ends there and the field starts it).
const YAML_NAME_FIELD: &str = concat!(
    r#"(?-u)(?:name|key):[ \t]+["']?[a-z0-9_.:/-]*(?:"#,
    secret_words!(),
    r#")["']?[ \t]*"#,
);

/// Secrets recognised by their own shape, wherever they are. One group per kind names the
/// part to hide: `url` (the userinfo of a URL), `pem` (a private key's body), `tok`, `auth`
/// (the credentials after an HTTP auth scheme) or `flag` (a command-line flag's value).
const SHAPED: &str = concat!(
    // S1: everything between `://` and the last `@` of the authority. A `user:password`
    // form first, whose password may hold an unencoded `/`, `?` or `#` (generated and base64
    // passwords do): it runs to the last `@` before whitespace, over-hiding rather than
    // leaking. It may hold quotes, backslashes and angle brackets too (a generated password
    // can, and `Debug` escapes a quote as `\"`), but a run of them followed by whitespace or
    // `,` `:` `;` `)` `]` `}` closes the string the URL was in (but see below), so the match
    // stops there: `"http://h:80","a@b"` is not read as credentials. The user part may hold them too
    // (`o'brien`), but only followed by a character of the user part, so a quote before the
    // `:` or `@` (`{"http://host":"a@b"}`) still closes the string.
    r#"://(?P<url>(?:[^\s/?#'"<>\\@]|['"<>\\]+[^\s/?#'"<>\\@,:;)\]}])*"#,
    r#":(?:[^\s'"<>\\]|['"<>\\]+[^\s'"<>\\,:;)\]}])*"#,
    // The password may also hold such a run followed by more value (`pa",ss`), if no quote
    // comes before its `@`: in JSON, Python or `Debug` text, a string holding an `@` after
    // the URL's string opens with a quote (`"http://h:80","a@b"`), and is not read as one.
    r#"(?:['"<>\\]*|['"<>\\]+[,:;)\]}]+[^\s'"<>\\]*)"#,
    r#"|(?:[^\s/?#'"<>\\]|['"<>\\]+[^\s/?#'"<>\\@,:;)\]}])+)@"#,
    // Bare credentials with a well-known prefix (open-ended lengths: see the module docs).
    r"|(?-u:\b)(?P<tok>gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
    r"|(?:AKIA|ASIA)[A-Z0-9]{16,}|xox[abposr]-[A-Za-z0-9-]{10,}",
    // LLM provider keys (`sk-…`, `sk-proj-…`, `sk-ant-…`), as their own errors quote them.
    r"|sk-[A-Za-z0-9_-]{20,}",
    // Google API keys, usually in a `?key=` query parameter (too common a name to hide).
    r"|AIza[A-Za-z0-9_-]{30,}",
    // A JWT; an unsigned one (`alg: none`) has an empty third part.
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)",
    // A PEM private key: the body (base64, whitespace, `Name: value` headers, and newlines
    // escaped as `\n` in Debug or JSON text) up to `-----`.
    r"|-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----",
    r"(?P<pem>(?:[A-Za-z0-9+/=:, \t\r\n]|\\[nr]|-[A-Za-z0-9+/=:, \t\r\n]|-\\[nr])*)",
    // The credentials after an auth scheme with no header name before it (`request with
    // Bearer abc123 failed`): 8 characters at least, so that prose (`Bearer token`) stays.
    r"|(?-u:\b)(?:Bearer|bearer|BEARER|Basic)[ \t]+(?P<auth>[A-Za-z0-9._~+/-]{8,}=*)",
    // A command-line flag naming a secret, with its value after a blank (`--password x`,
    // `--api-key x`); the `=` form is a key-value pair.
    r"|(?-u:\B)--[a-z0-9-]*(?:password|passwd|passphrase|secret|token|api-key|access-key)",
    r"[ \t]+(?P<flag>[^\s-][^\s]*)",
);

/// The compiled patterns.
pub(super) struct Patterns {
    /// [`KEY_THEN_SEPARATOR`], matched against the lowercased text (bytes: see [`lowercase`]).
    pub(super) key: BytesRegex,
    /// [`SHAPED`], matched against the text as is.
    pub(super) shaped: Regex,
    /// [`ELEMENT_WITH_ATTRIBUTES`], matched against the lowercased text.
    pub(super) element: BytesRegex,
    /// [`NAME_FIELD`], matched against the lowercased text.
    pub(super) name_field: BytesRegex,
    /// [`YAML_NAME_FIELD`], matched against the lowercased text.
    pub(super) yaml_name_field: BytesRegex,
}

static PATTERNS: LazyLock<Result<Patterns, regex::Error>> = LazyLock::new(|| {
    Ok(Patterns {
        key: BytesRegex::new(KEY_THEN_SEPARATOR)?,
        shaped: Regex::new(SHAPED)?,
        element: BytesRegex::new(ELEMENT_WITH_ATTRIBUTES)?,
        name_field: BytesRegex::new(NAME_FIELD)?,
        yaml_name_field: BytesRegex::new(YAML_NAME_FIELD)?,
    })
});

/// The text in ASCII lowercase, which has the same byte offsets (so a match in it is a match
/// in the text), and whether the text holds a `<`, a `{` or a line break (without one, there
/// is no XML, no object or no YAML block to look at). One pass for all, which the compiler
/// vectorises; bytes, as a `String` would have to be checked for UTF-8 again.
pub(super) fn lowercase(text: &str) -> (Vec<u8>, Marks) {
    let mut lower = text.as_bytes().to_vec();
    let mut marks = Marks::default();
    for c in &mut lower {
        marks.tags |= *c == b'<';
        marks.braces |= *c == b'{';
        marks.lines |= *c == b'\n';
        c.make_ascii_lowercase();
    }
    (lower, marks)
}

/// Which of the bytes that open markup or an object a text holds, found by [`lowercase`].
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Marks {
    /// A `<`: without one, there is no XML to look at.
    pub(super) tags: bool,
    /// A `{`: without one, there is no object (JSON, a dict, a `Debug` struct) to look in.
    pub(super) braces: bool,
    /// A line break: without one, there is no YAML block to look in.
    pub(super) lines: bool,
}

/// The compiled patterns, or `None` if any failed to compile.
pub(super) fn compiled() -> Option<&'static Patterns> {
    PATTERNS.as_ref().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_pattern_compiles() {
        if let Err(e) = super::BytesRegex::new(super::KEY_THEN_SEPARATOR) {
            panic!("key pattern: {e}");
        }
        if let Err(e) = super::Regex::new(super::SHAPED) {
            panic!("shaped pattern: {e}");
        }
        if let Err(e) = super::BytesRegex::new(super::ELEMENT_WITH_ATTRIBUTES) {
            panic!("element pattern: {e}");
        }
        if let Err(e) = super::BytesRegex::new(super::NAME_FIELD) {
            panic!("name field pattern: {e}");
        }
        if let Err(e) = super::BytesRegex::new(super::YAML_NAME_FIELD) {
            panic!("YAML name field pattern: {e}");
        }
        assert!(super::compiled().is_some());
    }

    #[test]
    fn key_patterns_are_lowercase_as_the_text_they_see() {
        for pattern in [
            super::KEY_THEN_SEPARATOR,
            super::ELEMENT_WITH_ATTRIBUTES,
            super::NAME_FIELD,
            super::YAML_NAME_FIELD,
        ] {
            assert!(
                !pattern.bytes().any(|b| b.is_ascii_uppercase()),
                "{pattern}"
            );
        }
    }
}

//! S1: credentials in URLs.

use super::{check, unchanged};
use resilience_core::sanitize;

// ---- S1: URL credentials ----

#[test]
fn s1_url_user_and_password_are_redacted() {
    check(
        "connect to postgres://admin:hunter2@db.internal:5432/app failed",
        "connect to postgres://***@db.internal:5432/app failed",
    );
}

#[test]
fn s1_url_user_only_is_redacted_because_tokens_travel_as_users() {
    check(
        "git fetch https://ghp_abc@github.com/org/repo.git: 403",
        "git fetch https://***@github.com/org/repo.git: 403",
    );
}

#[test]
fn s1_password_containing_at_sign_is_hidden_up_to_the_last_at() {
    check(
        "redis://default:p@ss@word@cache:6379",
        "redis://***@cache:6379",
    );
}

#[test]
fn s1_urls_without_credentials_and_emails_are_unchanged() {
    unchanged("GET https://api.example.com/v1/users?page=2#top returned 500");
    unchanged("mail bob@example.com about http://host/a@b failing");
}

/// S1 for passwords with an unencoded `/`, `?` or `#` (generated and base64 passwords), which
/// used to end the userinfo early and leak whole.
#[test]
fn s1_a_url_password_holding_slash_query_or_hash_is_hidden() {
    for (input, secret) in [
        (
            "connect postgres://app:ab/cd+ef==@db:5432/x failed",
            "ab/cd",
        ),
        ("redis://default:pa#ss@cache:6379", "pa#ss"),
        ("https://user:pa?ss@host/", "pa?ss"),
        ("redis://u:p@ss@host:6379/0", "ss@host"),
    ] {
        let out = sanitize(input);
        assert!(!out.contains(secret), "{input:?} -> {out:?}");
        assert!(out.contains("://***@"), "{input:?} -> {out:?}");
    }
    check(
        "connect postgres://app:ab/cd+ef==@db:5432/x failed",
        "connect postgres://***@db:5432/x failed",
    );
    // A URL without userinfo is left alone.
    unchanged("GET https://api.github.com/repos/a/b?page=2#top failed");
}

/// S1 for passwords holding a quote, a backslash or an angle bracket (generated passwords do,
/// e.g. AWS's default alphabet), which used to leave the URL unmatched: user and password
/// leaked whole. In `Debug` text the quote comes escaped (`\"`), hidden alike.
#[test]
fn s1_a_url_password_holding_quotes_backslash_or_angle_brackets_is_hidden() {
    for (input, secret) in [
        ("connect postgres://admin:ab'cd@db:5432/x failed", "ab'cd"),
        ("connect postgres://admin:ab\"cd@db:5432/x failed", "ab\"cd"),
        ("connect postgres://admin:ab\\cd@db:5432/x failed", "ab\\cd"),
        ("connect postgres://admin:a<b>c@db:5432/x failed", "a<b>c"),
        (r#"url: "redis://default:p\"w@cache:6379""#, r#"p\"w"#),
    ] {
        let out = sanitize(input);
        assert!(!out.contains(secret), "{input:?} -> {out:?}");
        assert!(out.contains("://***@"), "{input:?} -> {out:?}");
    }
    check(
        "connect postgres://admin:ab'cd@db:5432/x failed",
        "connect postgres://***@db:5432/x failed",
    );
    // A quote that closes the string holding a URL is not part of a password.
    unchanged(r#"{"url":"http://localhost:8080/x","email":"a@example.com"}"#);
    unchanged("['http://h:80/', 'bob@example.com']");
    check("['redis://u:pw@h:1','x@y']", "['redis://***@h:1','x@y']");
}

/// S1 for a password holding a quote then a closing punctuation (`pa",ss`), which read as
/// the end of a quoted string and leaked whole. It is a password when what follows holds no
/// quote before the `@`; in JSON (and Python, `Debug`) a string holding an `@` after it
/// opens with a quote, so such text is not read as credentials.
#[test]
fn s1_a_url_password_holding_a_quote_then_a_comma_is_hidden() {
    check("postgres://u:pa\",ss@host/db", "postgres://***@host/db");
    for (input, secret) in [
        ("connect postgres://u:pa\",ss@host/db failed", "ss@host"),
        ("connect postgres://u:pa',ss@host/db failed", "pa'"),
        ("connect postgres://u:pa\");ss@host/db failed", "pa\""),
        ("connect postgres://u:pa\"]}ss@host/db failed", "pa\""),
        (r#"url: "postgres://u:pa\",ss@host/db""#, "pa\\"),
        ("connect postgres://u:pa\",ss@h@st/db failed", "ss@h"),
    ] {
        let out = sanitize(input);
        assert!(!out.contains(secret), "{input:?} -> {out:?}");
        assert!(out.contains("://***@"), "{input:?} -> {out:?}");
    }
}

/// S1: JSON, Python and `Debug` text holding URLs, quotes and `@`s is left whole.
#[test]
fn s1_json_holding_urls_quotes_and_at_signs_is_unchanged() {
    unchanged(r#"{"u":"http://h:80","e":"a@b"}"#);
    unchanged(r#"["http://h:80",1,"a@b"]"#);
    unchanged(r#"["http://h:80", "a@b"]"#);
    unchanged(r#"{"u":"http://h:80",n:"a@b"}"#);
    unchanged(r#"["http://h:80",{"e":"a@b"}]"#);
    unchanged(r#"["http://h:80",["a@b"]]"#);
    unchanged(r#"body: "[\"http://h:80\",\"a@b\"]""#);
    unchanged("('http://h:80',1,'a@b')");
    unchanged(r#"Req { url: "http://h:80", from: "a@b" }"#);
}

/// S1 with a quote in the *user* part (`o'brien`): the user part refused quotes, so the URL
/// did not match and user and password leaked whole. A quote inside a user name now reads
/// as part of it, under the rule a password's quote follows (a quote that is followed by a
/// blank or `,` `:` `;` `)` `]` `}` still closes the string holding the URL).
#[test]
fn s1_a_quote_in_the_url_user_part_does_not_leak_the_password() {
    check("postgres://o'brien:pw@host/db", "postgres://***@host/db");
    for (input, secret) in [
        (
            "connect postgres://o'brien:hunter2@db:5432/x failed",
            "hunter2",
        ),
        (
            "connect postgres://o\"brien:hunter2@db:5432/x failed",
            "hunter2",
        ),
        (r#"url: "redis://o\"brien:hunter2@cache:6379""#, "hunter2"),
        ("url='postgres://o'brien:hunter2@host/db'", "hunter2"),
        ("git fetch https://o'brien@github.com/o/r.git", "brien"),
    ] {
        let out = sanitize(input);
        assert!(!out.contains(secret), "{input:?} -> {out:?}");
        assert!(out.contains("://***@"), "{input:?} -> {out:?}");
    }
    // A quote that closes the string holding a URL still ends its user part.
    unchanged(r#"{"http://host":"a@b"}"#);
    unchanged(r#"see "http://host", 'bob:x@example.com'"#);
    unchanged("['http://h', 'bob@example.com']");
}

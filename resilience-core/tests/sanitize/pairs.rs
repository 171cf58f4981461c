//! S2: `key=value` pairs and bare token shapes.

use super::{check, unchanged};
use resilience_core::sanitize;

// ---- S2: key=value ----

#[test]
fn s2_every_listed_key_is_redacted() {
    for key in [
        "api_key",
        "password",
        "secret",
        "credential",
        "token",
        "private_key",
        "connection_string",
        "access_key",
        "bearer",
        "session_id",
        "auth_token",
        "refresh_token",
        "client_secret",
    ] {
        check(
            &format!("request failed: {key}=s3cr3tV4lue status=401"),
            &format!("request failed: {key}=*** status=401"),
        );
    }
}

#[test]
fn s2_key_case_is_ignored_and_kept_as_written() {
    check("API_KEY=abc", "API_KEY=***");
    check("Password=abc", "Password=***");
    check(
        "Client_Secret=abc; ApiKey=def",
        "Client_Secret=***; ApiKey=***",
    );
    check("x-api-key=abc", "x-api-key=***");
}

#[test]
fn s2_keys_ending_in_a_secret_word_are_redacted() {
    check(
        "db_password=a GITHUB_TOKEN=b AWS_SECRET_ACCESS_KEY=c",
        "db_password=*** GITHUB_TOKEN=*** AWS_SECRET_ACCESS_KEY=***",
    );
}

#[test]
fn s2_keys_that_merely_start_with_a_secret_word_are_not_redacted() {
    unchanged("tokens_used=5 max_tokens=4096 token_count: 3 password_hint=pet secretary=bob");
}

#[test]
fn s2_colon_arrow_and_spaced_separators() {
    check("invalid token: abc123", "invalid token: ***");
    check("password = hunter2, retry", "password = ***, retry");
    check("{:secret => xyz}", "{:secret => ***}");
    check("token\t=\tabc", "token\t=\t***");
}

#[test]
fn s2_go_style_assignment_separator() {
    // `:=` read as `:` left the value whole after a mangled `=` (`password :*** abc`).
    check("password := abc", "password := ***");
    check("token:=abc def", "token:=*** def");
}

#[test]
fn s2_rust_paths_and_comparisons_are_not_pairs() {
    unchanged("error in auth::token::parse: bad input");
    unchanged("assertion failed: token == expected");
}

#[test]
fn s2_quoted_value_is_redacted_whole() {
    check("password=\"a b c\" user=bob", "password=\"***\" user=bob");
    check(
        "password='it is \\'me\\'' user=bob",
        "password='***' user=bob",
    );
    check("password=\"unterminated and more", "password=\"***");
}

#[test]
fn s2_unquoted_value_ends_at_whitespace_or_before_the_next_pair() {
    check(
        "?user=bob&password=p4ss&page=2",
        "?user=bob&password=***&page=2",
    );
    check("password=a,b;c)d end", "password=*** end");
    check("(password=abc), next", "(password=***), next");
    check("token=abc,user=bob", "token=***,user=bob");
}

#[test]
fn s2_empty_values_and_missing_markers_are_kept() {
    unchanged("password=\nuser=bob");
    // Blanks after a separator belong to it, so this reads as a value (the safe reading).
    check("password= user=bob", "password= ***");
    unchanged("token: None, secret: null");
    unchanged("password=&user=bob");
}

/// A list or object under a secret key is the secret: hidden whole (its nested keys used to
/// be scanned one by one, so `{"value": "…"}` or `["sk-…"]` under `api_key` leaked). Keys
/// outside it are still scanned.
#[test]
fn s2_s4_a_list_or_object_under_a_secret_key_is_hidden_whole() {
    check(
        r#"{"credentials": {"user": "bob", "password": "pw"}, "password": "x"}"#,
        r#"{"credentials": {***}, "password": "***"}"#,
    );
    check(
        r#"{"api_key": ["sk-live-123456", "x"], "user": "bob"}"#,
        r#"{"api_key": [***], "user": "bob"}"#,
    );
    check("{'password': {'value': 'hunter2'}}", "{'password': {***}}");
    check("token=[abc123] next", "token=[***] next");
    // Brackets inside quoted strings do not end it; an unterminated one runs to the end.
    check(
        r#"secret: {"a": "}{]", "b": 1} tail"#,
        r#"secret: {***} tail"#,
    );
    check("secret: [abc, def", "secret: [***");
}

/// Bare shapes added after review: an unsigned JWT, LLM provider keys, a PEM body whose
/// newlines are escaped (`\n`, as Debug and JSON print them).
#[test]
fn s2_unsigned_jwts_provider_keys_and_escaped_pem_bodies_are_hidden() {
    for (input, secret) in [
        (
            "jwt eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NSJ9. rejected",
            "eyJzdWIiOiIxMjM0NSJ9",
        ),
        (
            "Incorrect API key provided: sk-proj-AbCdEfGhIjKlMnOpQrStUvWx.",
            "AbCdEfGhIjKlMnOpQrStUvWx",
        ),
        (
            "invalid x-api-key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx",
            "AbCdEfGhIjKlMnOpQrStUvWx",
        ),
        (
            r#"bad key: "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----""#,
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        ),
    ] {
        let out = sanitize(input);
        assert!(!out.contains(secret), "{input:?} -> {out:?}");
    }
    // Words that merely start with `sk-` are not keys.
    unchanged("the task-runner used disk-sk-cache");
}

#[test]
fn s2_bare_github_tokens_are_redacted() {
    let classic = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let oauth = format!("gho_{}", "Z9".repeat(12));
    let fine = format!("github_pat_11AB_{}", "x".repeat(40));
    check(
        &format!("auth with {classic} and {oauth}, then {fine} failed"),
        "auth with *** and ***, then *** failed",
    );
    // Too short to be a token: left alone.
    unchanged("see ghp_short for details");
}

#[test]
fn s2_bare_jwt_is_redacted() {
    check(
        "rejected eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U by upstream",
        "rejected *** by upstream",
    );
}

#[test]
fn s2_bare_aws_and_slack_keys_are_redacted() {
    check(
        "key AKIAIOSFODNN7EXAMPLE denied; slack xoxb-123456789012-abcdefABCDEF",
        "key *** denied; slack ***",
    );
}

#[test]
fn s2_pem_private_key_body_is_redacted() {
    check(
        "bad key -----BEGIN RSA PRIVATE KEY-----\nMIIEow+IBAAKCAQEA/xyz=\n-----END RSA PRIVATE KEY----- rest",
        "bad key -----BEGIN RSA PRIVATE KEY-----\n***\n-----END RSA PRIVATE KEY----- rest",
    );
    // A key value that starts a PEM block: the body is still hidden.
    check(
        "private_key=-----BEGIN PRIVATE KEY-----\nMIIBVQ==",
        "private_key=*** PRIVATE KEY-----\n***",
    );
}

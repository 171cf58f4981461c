//! S3 headers, S4 dict and struct literals, several secrets at once, S5 length.

use super::{check, unchanged};
use resilience_core::sanitize;
use resilience_core::sanitize::MAX_CHARS;

// ---- S3: headers ----

#[test]
fn s3_authorization_bearer_header_is_redacted() {
    check(
        "401 with Authorization: Bearer eyJabc.def\nnext line",
        "401 with Authorization: ***\nnext line",
    );
}

#[test]
fn s3_other_credential_headers_are_redacted_keeping_the_name_as_written() {
    check("authorization: Basic dXNlcjpwYXNz", "authorization: ***");
    check(
        "Proxy-Authorization: Digest a=\"b\", c=d",
        "Proxy-Authorization: ***",
    );
    check("Cookie: session=abc; theme=dark", "Cookie: ***");
    check("set-cookie: sid=abc; HttpOnly", "set-cookie: ***");
    check("x-api-key: k-123 status=403", "x-api-key: *** status=403");
    check("X-Auth-Token: t0k3n", "X-Auth-Token: ***");
}

#[test]
fn s3_scheme_in_front_of_a_word_value_is_hidden_too() {
    check("token: Bearer abc123 rejected", "token: *** rejected");
}

// ---- S4: dict and struct literals ----

#[test]
fn s3_a_bearer_or_basic_credential_without_its_header_name_is_hidden() {
    check(
        "request with Bearer sekrit-bearer-456 failed",
        "request with Bearer *** failed",
    );
    check("Bearer abc123secret", "Bearer ***");
    check(
        "auth: Basic dXNlcjpwYXNzd29yZA==, retrying",
        "auth: Basic ***, retrying",
    );
    // Prose about the scheme, not a credential.
    unchanged("the Bearer token was rejected");
}

#[test]
fn s2_a_command_line_flag_naming_a_secret_hides_its_value() {
    check(
        "exec failed: tool --password hunter2 --user bob",
        "exec failed: tool --password *** --user bob",
    );
    check("run --api-key k-123 now", "run --api-key *** now");
    check("--db-password s3cr3t", "--db-password ***");
    unchanged("flags --token-count 5 --verbose");
}

#[test]
fn s2_a_google_api_key_in_a_query_parameter_is_hidden() {
    let key = format!("AIzaSy{}", "B".repeat(33));
    check(
        &format!("GET https://maps.example.com/v1?key={key}&q=x: 403"),
        "GET https://maps.example.com/v1?key=***&q=x: 403",
    );
}

#[test]
fn s4_python_dict_repr_secrets_are_redacted() {
    check(
        "bad config {'api_key': 'sk-123', 'token': 'tkn', 'region': 'eu'}",
        "bad config {'api_key': '***', 'token': '***', 'region': 'eu'}",
    );
}

#[test]
fn s4_json_secrets_are_redacted() {
    check(
        r#"body {"client_secret": "abc", "refresh_token":"def", "scope": "read"}"#,
        r#"body {"client_secret": "***", "refresh_token":"***", "scope": "read"}"#,
    );
}

#[test]
fn s4_rust_debug_struct_secret_is_redacted() {
    check(
        r#"Config { user: "bob", password: "hunter2", port: 5432 }"#,
        r#"Config { user: "bob", password: "***", port: 5432 }"#,
    );
    check(
        r#"Creds { token: Some("abc"), session_id: None }"#,
        r#"Creds { token: Some("***"), session_id: None }"#,
    );
}

#[test]
fn s4_escaped_quotes_inside_values_are_hidden_whole() {
    check(
        r#"{"password": "a\"b\\\"c", "user": "bob"}"#,
        r#"{"password": "***", "user": "bob"}"#,
    );
    check(r"{'token': 'it\'s'}", r"{'token': '***'}");
    check(r#"{'token': b'raw'}"#, r#"{'token': b'***'}"#);
}

#[test]
fn s4_json_inside_a_string_literal_is_redacted() {
    check(
        r#"body: "{\"password\":\"pw\\\"x\",\"user\":\"bob\"}""#,
        r#"body: "{\"password\":\"***\",\"user\":\"bob\"}""#,
    );
}

// ---- several at once ----

#[test]
fn s1_to_s4_several_secrets_in_one_message_are_all_redacted() {
    check(
        "POST https://u:p@api/x failed: api_key=k1 {'token': 't2'} Authorization: Bearer b3",
        "POST https://***@api/x failed: api_key=*** {'token': '***'} Authorization: ***",
    );
}

// ---- S5: length ----

#[test]
fn s5_long_message_is_cut_to_200_chars_and_ellipsis_appended() {
    let long = "e".repeat(500);
    let out = sanitize(&long);
    assert_eq!(out.chars().count(), MAX_CHARS + 3);
    assert_eq!(out, format!("{}...", "e".repeat(200)));
    assert_eq!(sanitize(&out), out, "truncation is idempotent");
}

#[test]
fn s5_message_of_exactly_200_chars_is_kept_whole() {
    unchanged(&"e".repeat(200));
    assert_eq!(
        sanitize(&"e".repeat(201)),
        format!("{}...", "e".repeat(200))
    );
}

#[test]
fn s5_a_cut_just_after_a_redacted_value_is_stable() {
    for tail in [" end", ", end", "\" end"] {
        for pad in 185..=192 {
            let msg = format!("{}api_key=abcd{tail}{}", "x".repeat(pad), "y".repeat(20));
            let once = sanitize(&msg);
            assert!(once.ends_with("..."), "{once:?}");
            assert_eq!(sanitize(&once), once, "pad {pad}, tail {tail:?}");
        }
    }
    check("token=abc...", "token=***...");
}

#[test]
fn s5_a_cut_through_a_kept_marker_hides_its_head() {
    // `None` is kept whole, but cut to `No` it could be anything: hidden, and stable.
    let msg = format!("{}token: None {}", "x".repeat(192), "y".repeat(20));
    let once = sanitize(&msg);
    assert_eq!(once, format!("{}token: *...", "x".repeat(192)));
    assert_eq!(sanitize(&once), once);
}

#[test]
fn s5_characters_are_unicode_scalar_values_and_never_split() {
    // 200 four-byte chars are 800 bytes but exactly the limit.
    unchanged(&"🦀".repeat(200));
    let mixed = format!("{}é🦀{}", "a".repeat(199), "z".repeat(10));
    assert_eq!(sanitize(&mixed), format!("{}é...", "a".repeat(199)));
}

#[test]
fn s5_truncation_happens_after_redaction() {
    // The secret straddles char 200: were the message cut first, its head would survive as
    // an unrecognisable fragment.
    let secret = "TOPSECRETVALUE";
    let msg = format!("{}password={secret} end", "x".repeat(190));
    let out = sanitize(&msg);
    assert_eq!(out, format!("{}password=*...", "x".repeat(190)));
    assert!(!out.contains('T'));
    // A bare token cut by the limit: no head of it survives either.
    let token = format!("ghp_{}", "Q".repeat(36));
    let msg = format!("{} {token} tail", "x".repeat(180));
    assert_eq!(sanitize(&msg), format!("{} *** tail", "x".repeat(180)));
    let msg = format!("{} {token} {}", "x".repeat(190), "y".repeat(50));
    assert_eq!(sanitize(&msg), format!("{} *** yyyyy...", "x".repeat(190)));
}

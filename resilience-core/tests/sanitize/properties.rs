//! Property tests over every form, and the sanitizer's whole-message guarantees.

use super::unchanged;
use proptest::prelude::*;
use resilience_core::sanitize;
use resilience_core::sanitize::MAX_CHARS;
use std::borrow::Cow;

// ---- properties ----

/// A secret matching `pattern` (a regex for proptest's string generator).
fn secret(pattern: &'static str) -> impl Strategy<Value = String> {
    proptest::string::string_regex(pattern).expect("valid regex")
}

/// An unquoted one-word secret: punctuation that can close a value (`,;&)]}>"'`) may sit
/// inside it, where it must not end the value.
const WORD: &str =
    r#"[A-Za-z0-9!#$%+./:@^_~-]{4,12}([,;&)\]}>"'][A-Za-z0-9!#$%+./:@^_~-]{1,8}){0,2}"#;
/// [`WORD`] without `>`, which ends an unquoted attribute value.
const WORD_NO_GT: &str =
    r#"[A-Za-z0-9!#$%+./:@^_~-]{4,12}([,;&)\]}"'][A-Za-z0-9!#$%+./:@^_~-]{1,8}){0,2}"#;
/// A connection-string value with blanks inside (no `;`, which ends it, and no quote, which
/// may close the string the connection string is in).
const SPACED: &str = r"[A-Za-z0-9!#$%+./:@^_~-]{2,8}( [A-Za-z0-9!#$%+./:@^_~-]{1,8}){1,2}";
/// A header value: anything printable but quotes (a leading quote would make it a quoted value).
const HEADER: &str = r"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}<>&-]{8,24}";
/// A quoted secret: anything printable, spaces and quotes included (each form escapes it).
const QUOTED: &str = r#"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}<>&'"\\-]{8,24}"#;

/// `s` as the content of a string quoted with `quote`: backslash and that quote escaped.
fn escape(s: &str, quote: char) -> String {
    s.replace('\\', "\\\\")
        .replace(quote, &format!("\\{quote}"))
}

/// A form's name, the regex its secret is drawn from, and how it embeds the secret.
type Form = (&'static str, &'static str, fn(&str) -> String);

fn forms() -> Vec<Form> {
    vec![
        // `/`, `?`, `#` and `@` unencoded too, as generated passwords hold them.
        ("S1 user:pass", "[A-Za-z0-9!$%+,.:;=~_/?#@-]{8,24}", |s| {
            format!("postgres://admin:{s}@db:5432/app")
        }),
        // Quotes, backslashes and angle brackets, each followed by no `,:;)]}` or blank,
        // which would read as the end of a quoted string.
        (
            "S1 user:pass quotes",
            r#"[A-Za-z0-9!$%+.=~_'"\\<>-]{8,24}"#,
            |s| format!("postgres://admin:{s}@db:5432/app"),
        ),
        // A quote run then closing punctuation then more password (`pa",ss`): no quote may
        // follow the punctuation (that reads as the next string of a JSON list).
        (
            "S1 user:pass quote-comma",
            r#"[A-Za-z0-9!$%+.=~_-]{2,8}['"\\<>]{1,2}[,:;)\]}]{1,2}[A-Za-z0-9!$%+.=~_@-]{2,12}"#,
            |s| format!("postgres://admin:{s}@db:5432/app"),
        ),
        // A quote in the user part, as in a name (`o'brien`).
        ("S1 quoted user", "[A-Za-z0-9!$%+,.:;=~_/?#@-]{8,24}", |s| {
            format!("postgres://o'brien:{s}@db:5432/app")
        }),
        ("S1 user", "[A-Za-z0-9_.~-]{8,24}", |s| {
            format!("https://{s}@github.com/o/r.git")
        }),
        ("S2 key=", WORD, |s| format!("api_key={s}")),
        ("S2 KEY=", WORD, |s| format!("CLIENT_SECRET={s}")),
        ("S2 key: ", WORD, |s| format!("refresh_token: {s}")),
        ("S2 query", WORD, |s| {
            format!("?user=bob&password={s}&page=2")
        }),
        ("S2 quoted", QUOTED, |s| {
            format!("password=\"{}\" user=bob", escape(s, '"'))
        }),
        // Element text: anything but `<`, which starts the next tag.
        (
            "S2 xml",
            r#"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}>&'"\\-]{8,24}"#,
            |s| format!("<cfg><db_password>{s}</db_password></cfg>"),
        ),
        // An attribute value: anything but its own quote; a backslash is no escape in XML.
        (
            "S2 xml attribute",
            r#"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}<>&'\\-]{8,24}"#,
            |s| format!(r#"<conn host="db" password="{s}" user="bob"/>"#),
        ),
        // Unquoted (invalid XML, found in logs): no blank or `>`, which end it.
        ("S2 xml attribute unquoted", WORD_NO_GT, |s| {
            format!("<x id=1 api_key={s} user=bob/>")
        }),
        (
            "S2 xml element with attributes",
            r#"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}>&'"\\-]{8,24}"#,
            |s| format!(r#"<cfg><token expires="3600" note='a>b'>{s}</token></cfg>"#),
        ),
        ("S2 odbc pwd", "[A-Za-z0-9!#$%+./:@^_~-]{8,24}", |s| {
            format!("Driver={{ODBC Driver 18}};Server=h;Uid=sa;Pwd={s};Encrypt=yes")
        }),
        // Unbraced with blanks inside: in a connection string the value runs to the `;`.
        ("S2 odbc pwd spaced", SPACED, |s| {
            format!("Driver={{ODBC Driver 18}};Server=h;Uid=sa;Pwd={s};Encrypt=yes")
        }),
        ("S2 ado password spaced", SPACED, |s| {
            format!("Server=tcp:h,1433;User Id=u;Password={s};Encrypt=true")
        }),
        ("S2 odbc pwd spaced last", SPACED, |s| {
            format!("DSN=x;UID=u;PWD={s}")
        }),
        // Braced: anything, `;` and `}` included (doubled, as ODBC escapes it).
        ("S2 odbc pwd braced", QUOTED, |s| {
            format!("DSN=x;UID=u;PWD={{{}}};APP=y", s.replace('}', "}}"))
        }),
        // A name field naming a secret, its value in a sibling field, either order.
        (
            "S2 xml key/value attributes",
            r#"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}<>&'\\-]{8,24}"#,
            |s| {
                format!(
                    r#"<add key="Region" value="eu"/><add key="Db.Password" value="{s}"/><add key="Timeout" value="30"/>"#
                )
            },
        ),
        (
            "S2 xml value/name attributes",
            r#"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}<>&"\\-]{8,24}"#,
            |s| format!("<property value='{s}' name='api_key'/>"),
        ),
        (
            "S2 xml named element",
            r#"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}>&'"\\-]{8,24}"#,
            |s| format!(r#"<params><param name="secret">{s}</param></params>"#),
        ),
        ("S2 json name/value", QUOTED, |s| {
            format!(
                r#"[{{"Name":"REGION","Value":"eu"}},{{"Name":"DB_PASSWORD","Value":"{}"}}]"#,
                escape(s, '"')
            )
        }),
        ("S2 json value/key", QUOTED, |s| {
            format!(
                r#"{{"value": "{}", "key": "token", "n": 1}}"#,
                escape(s, '"')
            )
        }),
        ("S2 cloudformation parameter", QUOTED, |s| {
            format!(
                r#"[{{"ParameterKey":"Env","ParameterValue":"prod"}},{{"ParameterKey":"DbPassword","ParameterValue":"{}"}}]"#,
                escape(s, '"')
            )
        }),
        ("S2 cloudformation cli shorthand", WORD, |s| {
            format!("--parameters ParameterKey=Env,ParameterValue=prod ParameterKey=DbPassword,ParameterValue={s} --capabilities x")
        }),
        // A `content` attribute value: anything but its own quote.
        (
            "S2 html meta content",
            r#"[A-Za-z0-9 !#$%+,./:;=?@^_~(){}<>&'\\-]{8,24}"#,
            |s| format!(r#"<head><meta name="csrf-token" content="{s}"><title>t</title>"#),
        ),
        // A YAML plain scalar: anything but a leading quote or bracket (a quoted or flow
        // value), `|`/`>` (a block) or `#`; blanks inside, but no `#`, which starts a comment
        // after a blank.
        (
            "S2 yaml name/value",
            r#"[A-Za-z0-9!$%+,./:;=?@^_~()&-][A-Za-z0-9 !$%+,./:;=?@^_~(){}<>&'"\\-]{7,23}"#,
            |s| {
                format!(
                    "\nenv:\n- name: REGION\n  value: eu\n- name: DB_PASSWORD\n  value: {s}\n- name: X\n  value: y\n"
                )
            },
        ),
        ("S2 yaml cloudformation", QUOTED, |s| {
            format!(
                "\n  - ParameterKey: MasterUserPassword\n    ParameterValue: \"{}\"\n",
                escape(s, '"')
            )
        }),
        ("S4 flow name/value", WORD, |s| {
            format!("{{name: region, value: eu}} {{name: db_password, value: {s}}}")
        }),
        ("S4 go name/value", WORD, |s| {
            format!("[{{Name:REGION Value:eu ValueFrom:nil}} {{Name:API_TOKEN Value:{s} ValueFrom:nil}}]")
        }),
        ("S2 debug name/value", QUOTED, |s| {
            format!("EnvVar {{ name: \"API_KEY\", value: Some({:?}) }}", s)
        }),
        ("S3 bearer", WORD, |s| format!("Authorization: Bearer {s}")),
        ("S3 basic", HEADER, |s| {
            format!("Proxy-Authorization: Basic {s}")
        }),
        ("S3 x-api-key", WORD, |s| format!("X-Api-Key: {s}")),
        ("S3 cookie", HEADER, |s| {
            format!("Cookie: sid={s}; theme=dark")
        }),
        ("S4 python", QUOTED, |s| {
            format!("{{'api_key': '{}', 'region': 'eu'}}", escape(s, '\''))
        }),
        ("S4 json", QUOTED, |s| {
            format!("{{\"private_key\": \"{}\", \"n\": 1}}", escape(s, '"'))
        }),
        ("S4 debug", QUOTED, |s| {
            format!("Cfg {{ session_id: {:?}, port: 1 }}", s)
        }),
        ("S4 debug option", QUOTED, |s| {
            format!("Cfg {{ credential: Some({:?}) }}", s)
        }),
    ]
}

/// A piece of text the patterns look for, for the soup properties.
fn soup_piece() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("password"),
        Just("Token"),
        Just("api-key"),
        Just("Authorization"),
        Just("cookie"),
        Just("="),
        Just(":"),
        Just("::"),
        Just(" "),
        Just("\n"),
        Just("\""),
        Just("'"),
        Just("\\"),
        Just("\\\""),
        Just(","),
        Just(";"),
        Just("&"),
        Just(")"),
        Just("}"),
        Just("{"),
        Just("["),
        Just("Some("),
        Just("b'"),
        Just("://"),
        Just("@"),
        Just("/"),
        Just("ghp_"),
        Just("eyJ"),
        Just("."),
        Just("AKIA"),
        Just("-----BEGIN RSA PRIVATE KEY-----"),
        Just("-----END"),
        Just("-"),
        Just("Bearer "),
        Just("None"),
        Just("***"),
        Just("abcdefghijklmnopqrstuvwxyz0123"),
        Just("é"),
        Just("🦀"),
        Just("x"),
        Just("<"),
        Just(">"),
        Just("</"),
        Just("<![CDATA["),
        Just("]]>"),
        Just("<conn "),
        Just(" user="),
        Just("/>"),
        Just("Pwd="),
        Just("Server=h;"),
        Just("}}"),
        Just("name"),
        Just("key"),
        Just("value"),
        Just(" value="),
        Just("{\"name\":\"token\","),
        Just("\"value\":"),
        Just("<add key='Secret' "),
        Just("<meta name=\"csrf-token\" "),
        Just("content="),
        Just("{\"ParameterKey\":\"DbPassword\","),
        Just("\"ParameterValue\":"),
        Just("\n- name: DB_PASSWORD"),
        Just("\n  value: "),
        Just("\n  valueFrom:"),
        Just("  "),
        Just("|"),
        Just("\r"),
        Just("- key: token"),
        Just("{name: password, "),
        Just("Name:DB_PASSWORD "),
        Just("Value:"),
        Just("Value: ValueFrom:"),
        Just("ParameterKey=Token,"),
        Just("ParameterValue="),
        Just("Password="),
        Just("my pass"),
        Just("Uid=u;"),
        Just("Pwd=a b;"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// S5: no input panics, output is at most 200 chars + `...`, and sanitizing is idempotent.
    #[test]
    fn s5_any_string_is_bounded_and_idempotent(input in any::<String>()) {
        let once = sanitize(&input);
        prop_assert!(once.chars().count() <= MAX_CHARS + 3);
        prop_assert_eq!(sanitize(&once), once.clone());
        if input.chars().count() <= MAX_CHARS && once == input {
            prop_assert!(matches!(once, Cow::Borrowed(_)));
        }
    }

    /// S1–S5 on text built from the pieces the patterns look for, so every branch is hit.
    #[test]
    fn s1_s5_pattern_soup_is_bounded_and_idempotent(
        pieces in proptest::collection::vec(soup_piece(), 0..60)
    ) {
        let input: String = pieces.concat();
        let once = sanitize(&input);
        prop_assert!(once.chars().count() <= MAX_CHARS + 3);
        // Never the fail-closed refusal, which a span off a char boundary would cause.
        prop_assert!(!once.contains("sanitizer unavailable"), "input: {:?}", input);
        prop_assert_eq!(sanitize(&once), once.clone(), "input: {:?}", input);
    }

    /// S1–S5 on soup repeated past the scan windows (1 KB), multi-byte pieces included:
    /// bounded, idempotent, and never the fail-closed refusal.
    #[test]
    fn s1_s5_long_soup_is_bounded_and_idempotent(
        pieces in proptest::collection::vec(soup_piece(), 1..40),
        times in 10..80usize,
    ) {
        let input = pieces.concat().repeat(times);
        let once = sanitize(&input);
        prop_assert!(once.chars().count() <= MAX_CHARS + 3);
        prop_assert!(!once.contains("sanitizer unavailable"), "input: {:?}", input);
        prop_assert_eq!(sanitize(&once), once.clone(), "input: {:?}", input);
    }

    /// S1–S5: a secret embedded in each form never appears in the output, not even in part
    /// (no 4-char piece of it that the surrounding text does not already contain), wherever
    /// the 200-char cut falls.
    #[test]
    fn s1_s5_embedded_secret_never_leaks(
        (form, secret) in (0..forms().len()).prop_flat_map(|i| (Just(i), secret(forms()[i].1))),
        pad in 0..230usize,
        tail in "[a-z ]{0,40}",
    ) {
        let (name, _, build) = forms()[form];
        let frame = |inner: &str| format!("{}fail: {inner} {tail}", "x".repeat(pad));
        let input = frame(&build(&secret));
        let context = frame(&build(""));
        let out = sanitize(&input);
        let visible = if input.chars().count() > MAX_CHARS {
            out.strip_suffix("...").unwrap_or(&out)
        } else {
            &out
        };
        let chars: Vec<char> = secret.chars().collect();
        for w in chars.windows(4) {
            let w: String = w.iter().collect();
            if !context.contains(&w) {
                prop_assert!(!visible.contains(&w), "{}: {:?} leaked {:?} of {:?}", name, out, w, input);
            }
        }
    }
}

#[test]
fn s2_clean_messages_are_returned_borrowed() {
    unchanged("connection refused (os error 111) after 3 attempts");
    unchanged("already redacted: password=*** and https://***@host");
}

/// S2's key rule on its own, for values shown apart from their key (config diagnostics).
#[test]
fn s2_is_secret_key_follows_the_key_rule() {
    use resilience_core::sanitize::is_secret_key;
    for key in [
        "api_key",
        "Client_Secret",
        "X-Api-Key",
        "db_password",
        "Authorization",
    ] {
        assert!(is_secret_key(key), "{key}");
    }
    for key in [
        "plan_service",
        "tokens_used",
        "password_hint",
        "token::Kind",
        "PWD",
        "ParameterValue",
        "",
    ] {
        assert!(!is_secret_key(key), "{key}");
    }
}

/// S2: hostile input shaped like the YAML and connection-string forms is still sanitized in
/// linear time (every scan is bounded, and a name field inside an earlier one's scan at its
/// column is skipped).
#[test]
fn s2_yaml_and_connection_string_scans_stay_linear() {
    let staircase: String = (0..2_500)
        .map(|i| format!("{}name: password\n", " ".repeat(i % 64)))
        .collect();
    let inputs = [
        "name: password\n".repeat(8_000),
        "- name: password\n".repeat(7_000),
        staircase,
        format!("- name: token\n  value: |\n{}", "    x\n".repeat(20_000)),
        format!(
            "- name: token\n  value: |\n{}",
            "    - name: token\n      value: |\n".repeat(3_500)
        ),
        "- name: token\n  value:\n\n\n\n\n\n\n\n\n\n".repeat(4_500),
        "Server=h;Pwd=a b;".repeat(7_000),
        "Server=h;Password=a b;".repeat(6_000),
        "- ParameterKey: DbPassword\n".repeat(4_500),
        "{Name:DB_PASSWORD Value:".repeat(5_000),
        "{name: password, value: ".repeat(5_000),
        "ParameterKey=DbPassword,ParameterValue=x,".repeat(3_000),
        "{\"ParameterKey\":\"DbPassword\",\"ParameterValue\":".repeat(2_500),
    ];
    for input in &inputs {
        let started = std::time::Instant::now();
        let out = sanitize(input);
        let took = started.elapsed();
        assert!(out.chars().count() <= MAX_CHARS + 3);
        eprintln!("{} bytes: {took:?}", input.len());
        assert!(
            took < std::time::Duration::from_secs(2),
            "{took:?} on {} bytes",
            input.len()
        );
    }
}

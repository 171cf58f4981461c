//! The error sanitizer, S1–S5 (DESIGN.md §4). Each test names the item it pins.

use proptest::prelude::*;
use resilience_core::sanitize;
use resilience_core::sanitize::MAX_CHARS;
use std::borrow::Cow;

/// Asserts the exact redaction and that redacting again changes nothing.
#[track_caller]
fn check(input: &str, expected: &str) {
    let once = sanitize(input);
    assert_eq!(once, expected, "input: {input:?}");
    assert_eq!(sanitize(&once), once, "not idempotent on: {input:?}");
}

#[track_caller]
fn unchanged(input: &str) {
    assert!(
        matches!(sanitize(input), Cow::Borrowed(s) if s == input),
        "expected {input:?} borrowed and unchanged, got {:?}",
        sanitize(input)
    );
}

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

/// S2 in XML: an element named like a secret key (`<password>abc</password>`) leaked its
/// text, as `>` was no separator. Its text, up to the next tag, is hidden now; CDATA too.
/// Only an element opens one: generics (`Vec<Token>`), comparisons and closing tags do not.
#[test]
fn s2_an_xml_element_named_like_a_secret_key_is_redacted() {
    check("<password>abc</password>", "<password>***</password>");
    check("<Password>abc</Password>", "<Password>***</Password>");
    check(
        "<config><db_password>abc def</db_password><user>bob</user></config>",
        "<config><db_password>***</db_password><user>bob</user></config>",
    );
    check(
        "<db:password>abc</db:password>",
        "<db:password>***</db:password>",
    );
    check(
        "body: <auth>\n  <token>\n    abc\n  </token>\n</auth>",
        "body: <auth>\n  <token>\n    ***\n  </token>\n</auth>",
    );
    check(
        "<password><![CDATA[a<b>c]]></password>",
        "<password><![CDATA[***]]></password>",
    );
    // Text starting with `>` (found by the leak proptest: it read as a doubled separator).
    check("<token>>}  a0= </token>", "<token>*** </token>");
    // Unterminated (a cut body): to the end.
    check("response <token>abc def", "response <token>***");
    // Nothing to hide: empty, or a marker.
    unchanged("<password></password> <token>null</token>");
    // Not an element holding a secret.
    unchanged("expected Vec<Token>, found Option<AccessToken>");
    unchanged("if token>limit then; a->token>>2");
    unchanged("</password> and <tokens>5</tokens> and <password_hint>x</password_hint>");
}

/// S2 in XML attributes: an attribute named like a secret key hides its value and nothing
/// else, so the element, the attribute name and the other attributes stay readable. An
/// unquoted value (invalid XML, but logs have it) ends at a blank, `>` or `/>` (it used to
/// swallow the rest of the markup), and a backslash is no escape in XML (`"C:\dir\"` used
/// to run on over the next attribute).
#[test]
fn s2_xml_attribute_password_is_redacted() {
    check(
        r#"<conn password="hunter2" user="bob"/>"#,
        r#"<conn password="***" user="bob"/>"#,
    );
    check("<auth token='abc'>", "<auth token='***'>");
    check("<x api_key=abc>", "<x api_key=***>");
    check("<x api_key=abc/><y>z</y>", "<x api_key=***/><y>z</y>");
    check("<x api_key=abc><y>z</y>", "<x api_key=***><y>z</y>");
    check(
        "<x id=1 api_key=a,b;c) user=bob>",
        "<x id=1 api_key=*** user=bob>",
    );
    check(
        r#"<conn password="C:\dir\" user="bob"/>"#,
        r#"<conn password="***" user="bob"/>"#,
    );
    check(
        "<conn\n  host=\"h\"\n  db:password = 'a\"b'\n  user=\"bob\" />",
        "<conn\n  host=\"h\"\n  db:password = '***'\n  user=\"bob\" />",
    );
    // A backslash-escaped quote that does not close the attribute (the text after it does
    // not go on as a tag) is read as an escape: hidden whole.
    check(
        r#"<x password="a\"b c" y="1">"#,
        r#"<x password="***" y="1">"#,
    );
    // XML escaped inside a `Debug` string keeps its `\"` quotes.
    check(
        r#"body: "<conn password=\"hunter2\" user=\"bob\"/>""#,
        r#"body: "<conn password=\"***\" user=\"bob\"/>""#,
    );
}

/// S2 in XML: an element named like a secret key whose start tag has attributes
/// (`<token expires="3600">abc</token>`) leaked its text, as only `<token>` opened one.
#[test]
fn s2_xml_element_with_attributes_named_like_a_secret_is_redacted() {
    check(
        r#"<token expires="3600">abc</token>"#,
        r#"<token expires="3600">***</token>"#,
    );
    check(
        "<db:Password encrypted='no' note=\"a>b\">hunter2</db:Password>",
        "<db:Password encrypted='no' note=\"a>b\">***</db:Password>",
    );
    check(
        "<password\n  type=\"plain\">\n  abc\n</password>",
        "<password\n  type=\"plain\">\n  ***\n</password>",
    );
    // Its secret-named attributes are hidden too.
    check(
        r#"<token secret="x" kind="y">abc</token>"#,
        r#"<token secret="***" kind="y">***</token>"#,
    );
    // Self-closing: no text to hide.
    unchanged(r#"<token kind="none"/> <password id="1" />"#);
}

/// S2: XML neighbours of the secrets above are not over-redacted.
#[test]
fn s2_xml_attributes_not_named_like_a_secret_are_kept() {
    unchanged(r#"<user name="bob">x</user>"#);
    unchanged(r#"<conn user="bob" host="db" port="5432"/>"#);
    unchanged(r#"<tokens count="5">12</tokens> <password_hint lang="en">pet</password_hint>"#);
    unchanged("invalid token provided; password expired for user bob");
    unchanged("expected Vec<Token >, found Option<AccessToken>");
}

/// S2 in ODBC connection strings: `Pwd=` is a secret key where the text is one (its
/// `;`-separated run also has a Driver, DSN, Server, Uid, Data Source, Database… key). A
/// braced value may hold `;`, and `}}` is an escaped `}` inside it.
#[test]
fn s2_odbc_pwd_in_a_connection_string_is_redacted() {
    check(
        "Driver={ODBC Driver 18};Server=h;Uid=sa;Pwd=s3cr3t;",
        "Driver={ODBC Driver 18};Server=h;Uid=sa;Pwd=***;",
    );
    check("DSN=x;UID=u;PWD={a;b}", "DSN=x;UID=u;PWD={***}");
    check(
        "connect failed: PWD={a}}b;c}; DSN=x (08001)",
        "connect failed: PWD={***}; DSN=x (08001)",
    );
    check(
        "odbc: Server = h ; Pwd = s3cr3t ; Database = d",
        "odbc: Server = h ; Pwd = *** ; Database = d",
    );
    check(
        r#"conn_str="Data Source=h;Pwd=abc;""#,
        r#"conn_str="Data Source=h;Pwd=***;""#,
    );
    // Unterminated brace (a cut message): to the end.
    check("DSN=x;PWD={a;b", "DSN=x;PWD={***");
}

/// S2: in a connection string a value runs to the next `;`, so a password holding a space
/// is hidden whole, under ODBC's `Pwd=` and ADO.NET's `Password=` alike. Without a `;` after
/// it, to the end of the line (or a closing quote followed by a blank or the end).
#[test]
fn s2_odbc_pwd_with_a_space_is_hidden() {
    check(
        "Driver={ODBC Driver 18};Server=h;Uid=sa;Pwd=my pass;Encrypt=yes",
        "Driver={ODBC Driver 18};Server=h;Uid=sa;Pwd=***;Encrypt=yes",
    );
    check(
        "odbc: Server = h ; Pwd = my pass ; Database = d",
        "odbc: Server = h ; Pwd = *** ; Database = d",
    );
    check(
        "Server=tcp:h,1433;User Id=u;Password=my pass;Encrypt=true",
        "Server=tcp:h,1433;User Id=u;Password=***;Encrypt=true",
    );
    check(
        "Data Source=h;Passphrase=correct horse battery;",
        "Data Source=h;Passphrase=***;",
    );
    // Other secret keys hold generated values, without blanks: one word, as elsewhere.
    check(
        "Server=h;Token=abc def;Database=d",
        "Server=h;Token=*** def;Database=d",
    );
    check(
        "Pwd=my pass word;Server=h (08001)",
        "Pwd=***;Server=h (08001)",
    );
    // The last pair: to the end of the line, or the quote closing the string it is in.
    check(
        "DSN=x;UID=u;PWD=my pass\nnext line",
        "DSN=x;UID=u;PWD=***\nnext line",
    );
    check(
        "DSN=x;UID=u;PWD=my pass failed (08001)",
        "DSN=x;UID=u;PWD=***",
    );
    check(
        r#"open "Data Source=h;Password=my pass" failed"#,
        r#"open "Data Source=h;Password=***" failed"#,
    );
    check(
        "conn='Server=h;Pwd=my pass', retrying",
        "conn='Server=h;Pwd=***', retrying",
    );
}

/// S2: outside a connection string a value is still one word (prose keeps its words).
#[test]
fn s2_a_password_outside_a_connection_string_is_one_word() {
    check(
        "password=abc retrying in 3s; server busy",
        "password=*** retrying in 3s; server busy",
    );
    check(
        "host=h password=abc dbname=d",
        "host=h password=*** dbname=d",
    );
    check(
        "cd /tmp; password=abc def; ls",
        "cd /tmp; password=*** def; ls",
    );
}

/// S2: outside a connection string, `PWD=` is a shell's working directory and is kept, as
/// are ODBC's other keys.
#[test]
fn s2_shell_pwd_and_odbc_neighbours_are_kept() {
    unchanged("PWD=/home/x");
    unchanged("env: HOME=/home/x PWD=/home/x SHELL=/bin/bash");
    unchanged("cd /tmp; PWD=/home/x; ls");
    unchanged("PWD=/home/x;OLDPWD=/tmp;HOME=/home/x");
    unchanged("OLDPWD=/tmp;Server=h");
    unchanged("Driver={ODBC Driver 18};Server=h;Uid=sa;Database=d");
}

/// S2 in YAML and in connection strings (libpq DSN, .NET/ADO): the key=value and `key: value`
/// rules already cover these (pinned here; they did not leak).
#[test]
fn s2_yaml_and_connection_string_forms_are_redacted() {
    check(
        "db:\n  password: abc\n  user: x",
        "db:\n  password: ***\n  user: x",
    );
    check("password: 'a b'", "password: '***'");
    check(
        "host=h password=abc dbname=d",
        "host=h password=*** dbname=d",
    );
    check(
        "host=h password='a b' dbname=d",
        "host=h password='***' dbname=d",
    );
    check(
        "Server=x;Database=d;User Id=u;Password=abc;Encrypt=true",
        "Server=x;Database=d;User Id=u;Password=***;Encrypt=true",
    );
    check("Data Source=x;Password=abc;", "Data Source=x;Password=***;");
    check("Password = abc ; Database=d", "Password = *** ; Database=d");
    check("Password=\"a;b\";Database=d", "Password=\"***\";Database=d");
}

/// S2 with the name apart from the value: a `name`/`key` field naming a secret and a sibling
/// `value` field in the same XML tag (.NET appSettings, Spring, HTML inputs). No `key=value`
/// rule saw these: the secret word sits in a value, not a key.
#[test]
fn s2_xml_name_value_pair_password_is_redacted() {
    check(
        r#"<add key="Password" value="hunter2"/>"#,
        r#"<add key="Password" value="***"/>"#,
    );
    check(
        r#"<property name="db.password" value="hunter2"/>"#,
        r#"<property name="db.password" value="***"/>"#,
    );
    // Value first, other attributes kept, single quotes, blanks around `=`.
    check(
        r#"<add value='hunter2' id="7" key = 'ApiKey' />"#,
        r#"<add value='***' id="7" key = 'ApiKey' />"#,
    );
    check(
        r#"<input type="password" name="password" value="hunter2">"#,
        r#"<input type="password" name="password" value="***">"#,
    );
    // Escaped inside a `Debug` string.
    check(
        r#"body: "<add key=\"ClientSecret\" value=\"hunter2\"/>""#,
        r#"body: "<add key=\"ClientSecret\" value=\"***\"/>""#,
    );
    // Several in a row: each tag on its own.
    check(
        r#"<appSettings><add key="Region" value="eu"/><add key="Token" value="abc"/><add key="Timeout" value="30"/></appSettings>"#,
        r#"<appSettings><add key="Region" value="eu"/><add key="Token" value="***"/><add key="Timeout" value="30"/></appSettings>"#,
    );
}

/// S2 with the name apart from the value: an element whose `name`/`key` attribute names a
/// secret holds it as text (`<param name="api_key">abc</param>`, Java properties XML
/// `<entry key="password">…</entry>`).
#[test]
fn s2_xml_named_element_text_is_redacted() {
    check(
        r#"<param name="api_key">abc</param>"#,
        r#"<param name="api_key">***</param>"#,
    );
    check(
        "<entry key=\"db.password\">\n  hunter2\n</entry>",
        "<entry key=\"db.password\">\n  ***\n</entry>",
    );
    // A `value` attribute holds it instead: the text is left alone.
    check(
        r#"<param name="token" value="abc">note</param>"#,
        r#"<param name="token" value="***">note</param>"#,
    );
}

/// S2 with the name apart from the value: JSON/Python/`Debug` objects listing
/// `{name, value}` pairs (Kubernetes env lists, AWS parameter lists, HAR headers).
#[test]
fn s2_json_name_value_pair_password_is_redacted() {
    check(
        r#"{"name":"password","value":"hunter2"}"#,
        r#"{"name":"password","value":"***"}"#,
    );
    check(
        r#"{"Name": "API_KEY", "Value": "abc"}"#,
        r#"{"Name": "API_KEY", "Value": "***"}"#,
    );
    check(
        r#"[{"Name":"DB_PASSWORD","Value":"x1y2"},{"Name":"REGION","Value":"eu-west-1"}]"#,
        r#"[{"Name":"DB_PASSWORD","Value":"***"},{"Name":"REGION","Value":"eu-west-1"}]"#,
    );
    check(
        r#"{"key":"token","value":"x1y2"}"#,
        r#"{"key":"token","value":"***"}"#,
    );
    // Value first, and other fields kept.
    check(
        r#"{"value": "hunter2", "type": "String", "name": "client_secret"}"#,
        r#"{"value": "***", "type": "String", "name": "client_secret"}"#,
    );
    // HAR headers: the header names of S3 are secret names too.
    check(
        r#"{"name": "Authorization", "value": "Bearer abc.def"}"#,
        r#"{"name": "Authorization", "value": "***"}"#,
    );
    // Python repr, Rust `Debug`, JSON inside a string.
    check(
        "{'name': 'password', 'value': 'hunter2'}",
        "{'name': 'password', 'value': '***'}",
    );
    check(
        r#"EnvVar { name: "DB_PASSWORD", value: Some("hunter2") }"#,
        r#"EnvVar { name: "DB_PASSWORD", value: Some("***") }"#,
    );
    check(
        r#"body: "{\"name\":\"password\",\"value\":\"hunter2\"}""#,
        r#"body: "{\"name\":\"password\",\"value\":\"***\"}""#,
    );
    // A nested object under `value` is hidden whole; a nested `value` is not the sibling.
    check(
        r#"{"name":"token","meta":{"value":"v1"},"value":{"a":1}}"#,
        r#"{"name":"token","meta":{"value":"v1"},"value":{***}}"#,
    );
    // A message that ends inside the value.
    check(
        r#"{"name":"password","value":"hunt"#,
        r#"{"name":"password","value":"***"#,
    );
}

/// S2 with the name apart from the value, in YAML block mappings: a Kubernetes env list
/// (`- name: DB_PASSWORD` then `value: …` on the next line), CloudFormation's parameters.
#[test]
fn s2_yaml_name_value_block_is_redacted() {
    check(
        "env:\n- name: DB_PASSWORD\n  value: hunter2\n- name: REGION\n  value: eu-west-1",
        "env:\n- name: DB_PASSWORD\n  value: ***\n- name: REGION\n  value: eu-west-1",
    );
    check(
        "spec:\n  env:\n    - name: API_TOKEN\n      value: \"a b c\"\n    - name: X\n      value: y\n",
        "spec:\n  env:\n    - name: API_TOKEN\n      value: \"***\"\n    - name: X\n      value: y\n",
    );
    // A plain scalar runs to the end of its line, blanks inside included.
    check(
        "- name: db_password\r\n  value: my pass word\r\n",
        "- name: db_password\r\n  value: ***\r\n",
    );
    // A plain scalar ends before a comment (` #`); a `#` inside a word is part of it.
    check(
        "- name: token\n  value: abc def # from vault\n",
        "- name: token\n  value: *** # from vault\n",
    );
    check("- name: token\n  value: a#b", "- name: token\n  value: ***");
    // Other keys, comments and nested blocks between name and value.
    check(
        "- name: CLIENT_SECRET\n  # from vault\n  meta:\n    value: v1\n  value: s3cr3t",
        "- name: CLIENT_SECRET\n  # from vault\n  meta:\n    value: v1\n  value: ***",
    );
    // A block scalar: the lines under it.
    check(
        "- name: private_key\n  value: |\n    line one\n    line two\n- name: x",
        "- name: private_key\n  value: |\n    ***\n- name: x",
    );
    // CloudFormation, YAML form; `key:` as the name field.
    check(
        "Parameters:\n  - ParameterKey: DbPassword\n    ParameterValue: hunter2\n",
        "Parameters:\n  - ParameterKey: DbPassword\n    ParameterValue: ***\n",
    );
    check(
        "- key: api_key\n  value: abc123",
        "- key: api_key\n  value: ***",
    );
}

/// S2: a YAML block value longer than the scan window, in multi-byte text, is hidden to the
/// end of the line the window cuts (not withheld as a span off a char boundary, nor leaked).
#[test]
fn s2_a_long_yaml_block_value_is_hidden_to_its_line_end() {
    let input = format!("- name: token\n  value: |\n    {}", "é".repeat(700));
    check(&input, "- name: token\n  value: |\n    ***");
    let input = format!(
        "- name: token\n  value: |\n{}    {}\n- name: x",
        "    ab\n".repeat(150),
        "é".repeat(100)
    );
    check(&input, "- name: token\n  value: |\n    ***\n- name: x");
}

/// S2: YAML name/value blocks that name no secret, `valueFrom`, and a value in the next item
/// are kept.
#[test]
fn s2_yaml_name_value_blocks_not_naming_a_secret_are_kept() {
    unchanged("- name: REGION\n  value: eu-west-1");
    unchanged("- name: PWD\n  value: /home/x");
    unchanged("- name: password_hint\n  value: pet");
    unchanged(
        "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password\n",
    );
    unchanged("- name: DB_PASSWORD\n- name: REGION\n  value: eu");
    unchanged("env:\n  - name: TOKEN\n  - value: x\n");
    unchanged("- name: TOKEN\n  items:\n  - value: x\n");
    unchanged("username: password\nvalue: x");
    unchanged("the name: password\nvalue: x");
}

/// S2 with the name apart from the value, the name unquoted: YAML flow mappings
/// (`{name: password, value: x}`) and Go's `%+v` of a struct (`{Name:DB_PASSWORD Value:x}`,
/// as Kubernetes errors print an `EnvVar`).
#[test]
fn s4_unquoted_name_value_pairs_are_redacted() {
    check(
        "{name: password, value: hunter2}",
        "{name: password, value: ***}",
    );
    check(
        "{key: api_key, value: 'x y'}",
        "{key: api_key, value: '***'}",
    );
    check(
        "{Name:DB_PASSWORD Value:hunter2 ValueFrom:nil}",
        "{Name:DB_PASSWORD Value:*** ValueFrom:nil}",
    );
    check(
        "env: [{Name:REGION Value:eu ValueFrom:nil} {Name:API_TOKEN Value:abc123 ValueFrom:nil}]",
        "env: [{Name:REGION Value:eu ValueFrom:nil} {Name:API_TOKEN Value:*** ValueFrom:nil}]",
    );
    // Go's separator is one `:`; the value may start with another.
    check(
        "{Name:API_TOKEN Value::x# ValueFrom:nil}",
        "{Name:API_TOKEN Value:*** ValueFrom:nil}",
    );
}

/// S4: unquoted name fields that name no secret, prose, and Go's empty `Value:` in front of
/// `ValueFrom:` are kept.
#[test]
fn s4_unquoted_names_in_prose_or_naming_no_secret_are_kept() {
    unchanged("{name: region, value: eu-west-1}");
    unchanged("{name: password_hint, value: pet}");
    unchanged("{Name:PWD Value:/home/x ValueFrom:nil}");
    unchanged("{error: name: password must be set, value: missing}");
    unchanged("{msg: invalid value for name: password here}");
    unchanged(
        "{Name:DB_PASSWORD Value: ValueFrom:&EnvVarSource{SecretKeyRef:&SecretKeySelector{Key:password}}}",
    );
}

/// S2 with the name apart from the value: CloudFormation's parameter lists,
/// `{"ParameterKey": …, "ParameterValue": …}`, in either order.
#[test]
fn s2_cloudformation_parameter_pairs_are_redacted() {
    check(
        r#"{"ParameterKey":"DbPassword","ParameterValue":"x1y2"}"#,
        r#"{"ParameterKey":"DbPassword","ParameterValue":"***"}"#,
    );
    check(
        r#"[{"ParameterKey": "Env", "ParameterValue": "prod"}, {"ParameterValue": "hunter2", "ParameterKey": "MasterUserPassword", "UsePreviousValue": false}]"#,
        r#"[{"ParameterKey": "Env", "ParameterValue": "prod"}, {"ParameterValue": "***", "ParameterKey": "MasterUserPassword", "UsePreviousValue": false}]"#,
    );
    check(
        r#"body: "{\"ParameterKey\":\"ApiToken\",\"ParameterValue\":\"abc\"}""#,
        r#"body: "{\"ParameterKey\":\"ApiToken\",\"ParameterValue\":\"***\"}""#,
    );
    unchanged(r#"{"ParameterKey":"DbPasswordLength","ParameterValue":"16"}"#);
    unchanged(r#"{"ParameterKey":"Env","ParameterValue":"password"}"#);
    unchanged(r#"{"OtherKey":"DbPassword","ParameterValue":"x"}"#);
}

/// S2 with the name apart from the value: the AWS CLI's shorthand for CloudFormation
/// parameters, `ParameterKey=DbPassword,ParameterValue=…`, in either order.
#[test]
fn s2_cloudformation_cli_shorthand_is_redacted() {
    check(
        "aws cloudformation deploy --parameters ParameterKey=Env,ParameterValue=prod ParameterKey=DbPassword,ParameterValue=hunter2 failed",
        "aws cloudformation deploy --parameters ParameterKey=Env,ParameterValue=prod ParameterKey=DbPassword,ParameterValue=*** failed",
    );
    check(
        "ParameterValue=s3cr3t,ParameterKey=ApiToken,UsePreviousValue=false",
        "ParameterValue=***,ParameterKey=ApiToken,UsePreviousValue=false",
    );
    check(
        "ParameterKey=MasterUserPassword,ParameterValue='my pass'",
        "ParameterKey=MasterUserPassword,ParameterValue='***'",
    );
    unchanged("ParameterKey=DbPasswordLength,ParameterValue=16");
    unchanged("ParameterKey=Env,ParameterValue=password");
    unchanged("ParameterValue=x");
}

/// S2 with the name apart from the value: an HTML `<meta>` tag holds its value in `content`
/// (`<meta name="csrf-token" content="…">`, Rails and Laravel pages).
#[test]
fn s2_html_meta_csrf_token_is_redacted() {
    check(
        r#"<meta name="csrf-token" content="Zm9vYmFy==">"#,
        r#"<meta name="csrf-token" content="***">"#,
    );
    check(
        r#"<head><meta content='abc' name='csrf-token' /><title>x</title>"#,
        r#"<head><meta content='***' name='csrf-token' /><title>x</title>"#,
    );
    unchanged(r#"<meta name="csrf-param" content="authenticity_token">"#);
    unchanged(r#"<meta name="description" content="token shop">"#);
    unchanged(r#"<div name="csrf-token" content="x">"#);
}

/// S2: ordinary name/value pairs stay readable, a name that is no secret key by itself
/// (`PWD`, a shell variable) stays as it is, and a secret name in one object or tag never
/// hides the value of the next.
#[test]
fn s2_name_value_pairs_not_naming_a_secret_are_kept() {
    unchanged(r#"{"name":"region","value":"eu-west-1"}"#);
    unchanged(r#"<add key="Timeout" value="30"/>"#);
    unchanged(r#"{"name":"PWD","value":"/home/x"}"#);
    unchanged(r#"<add key="PWD" value="/home/x"/>"#);
    unchanged(r#"{"name":"tokens_used","value":5} {"name":"password_hint","value":"pet"}"#);
    unchanged(r#"{"filename":"token","value":"x"} {"key_name":"password","value":"x"}"#);
    unchanged(r#"<param name="password_policy">strict</param>"#);
    // The name in one object, the value in the next.
    unchanged(r#"[{"name":"password"},{"name":"region","value":"eu"}]"#);
    unchanged(r#"[{"name":"region","value":"eu"},{"name":"password"}]"#);
    unchanged(r#"{"a":{"name":"password"},"value":"eu"}"#);
    unchanged(r#"<add key="Password"/><add key="Region" value="eu"/>"#);
    unchanged(r#"<add key="Region" value="eu"/><add key="Password"/>"#);
    unchanged(r#"<add key="Password"/> value="eu""#);
    unchanged(r#"<param name="token"/> text after"#);
    // Prose.
    unchanged("invalid value for name: password must be set");
    unchanged("key password not found; value missing");
}

/// S2, S4: a secret holding a quote then a comma (`ab",x`): when it is quoted, the quote is
/// escaped and the value is hidden whole; unquoted, the `",` run is followed by more value
/// and stays in it. None of it leaks (pinned; these did not leak).
#[test]
fn s2_s4_a_secret_holding_a_quote_then_a_comma_is_hidden_whole() {
    check(r#"{"password":"ab\",x"}"#, r#"{"password":"***"}"#);
    check(
        r#"{"password":"ab\",x", "user": "bob"}"#,
        r#"{"password":"***", "user": "bob"}"#,
    );
    check(
        r#"body: "{\"password\":\"ab\\\",x\"}""#,
        r#"body: "{\"password\":\"***\"}""#,
    );
    check(
        r#"Cfg { password: "ab\",x" }"#,
        r#"Cfg { password: "***" }"#,
    );
    check(r#"{'password': 'ab",x'}"#, r#"{'password': '***'}"#);
    check(r#"password=abc",x rest"#, "password=*** rest");
    check(r#"?password=ab",x&user=bob"#, "?password=***&user=bob");
    // A quoted value ends at its closing quote: what follows is not the secret.
    check(r#"password="abc",x"#, r#"password="***",x"#);
}

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

//! Redaction of secrets from error text (S1–S5), before it reaches a log line.
//!
//! [`sanitize`] replaces every secret it recognises with `***`, then caps the length. It never
//! panics, whatever the input, and returns the input borrowed when there was nothing to do.
//!
//! ```
//! use resilience_core::sanitize;
//!
//! assert_eq!(
//!     sanitize("connect postgres://app:hunter2@db:5432 failed; api_key=abc123"),
//!     "connect postgres://***@db:5432 failed; api_key=***"
//! );
//! assert_eq!(sanitize("{'token': 'x\\'y'}"), "{'token': '***'}");
//! assert_eq!(sanitize("tokens_used=5"), "tokens_used=5"); // not a secret key
//! ```
//!
//! # What is redacted
//!
//! **S1, URL credentials.** Everything between `://` and the last `@` of the authority:
//! `://user:pass@host` and `://user@host` both become `://***@host`. The user part alone is
//! hidden too, because tokens are often passed as the user
//! (`https://ghp_…@github.com`). The last `@` is used so a password containing `@` does not
//! leak its tail; in the `user:password` form the password may also hold an unencoded `/`,
//! `?` or `#` (it then runs to the last `@` before whitespace, which may hide more than the
//! userinfo, never less). It may hold quotes, backslashes and `<>` as well. A run of them
//! followed by `,` `:` `;` `)` `]` `}` reads as the end of a quoted string holding the URL
//! when another quote comes before the `@` (`"http://h:80","a@b"` and
//! `["http://h:80",1,"a@b"]` keep their `@`); without one it is password (`u:pa",ss@host`
//! is hidden). So a password leaks only where such a run is followed by a blank
//! (`pa", ss`) or, later, by another quote (`pa",s'x`). The price: in non-JSON text such as
//! a CSV row, `"http://h:80",bob@example.com` reads as credentials and loses `h:80",bob`.
//! The user part may hold them too (`postgres://o'brien:pw@host`), followed by a character
//! of the user part: a quote just before its `:` or `@` closes the string (`{"http://h":"a@b"}`).
//!
//! **S2, key–value pairs.** A key, a separator, a value. A key is secret when it *ends* with
//! one of: `api_key`, `password`, `passwd`, `passphrase`, `secret`, `secret_key`,
//! `credential(s)`, `token`, `private_key`, `connection_string`, `access_key`, `bearer`,
//! `session_id`, `signature`, `sig` (presigned URLs), plus the header names of S3. So
//! `auth_token`, `refresh_token`, `client_secret`, `db_password`, `GITHUB_TOKEN`,
//! `AWS_SECRET_ACCESS_KEY` and `X-Amz-Signature` are all secret keys.
//! - *Case* is ignored: `API_KEY=`, `Password=`, `ApiKey=` all match. Inside a key word, `_`,
//!   `-` or nothing may join the parts (`api_key`, `api-key`, `apikey`).
//! - *Near misses are kept.* The secret word must end the key, so `tokens_used=5`,
//!   `max_tokens=5`, `token_count: 3` and `password_hint=…` are left alone. The other way
//!   round errs towards hiding: `max_token=5` is redacted, since its key ends in `token`.
//! - *Separators*: `=`, `=>`, `:` and `:=`, with optional spaces or tabs around them (`key: value`
//!   is common in error text such as `invalid token: …`, so it is treated as a pair; the cost
//!   is that prose like `secret: not found` loses one word). `::` (a Rust path such as
//!   `token::Kind`) and `==` (a comparison) are not separators.
//! - *Values*: a quoted value (`'…'` or `"…"`, backslash escapes honoured, unterminated
//!   quotes run to the end) is hidden whole and keeps its quotes: `password="a b c"` →
//!   `password="***"`. An unquoted value is one word: it ends at whitespace, or at a run of
//!   closing punctuation (`"` `'` `,` `;` `&` `)` `]` `}` `>`) that is followed by
//!   whitespace, the end, or another `key=`; punctuation inside the word is part of the
//!   value, so `password=a,b;c` is hidden whole while `password=x&user=bob` keeps
//!   `&user=bob`. `Bearer`/`Basic` in front of a credential is hidden with it. Outside a
//!   connection string (below), an unquoted password containing a space cannot be told
//!   apart from prose and leaks after the space.
//! - *XML*: an element named like a secret key, `<password>abc</password>` or
//!   `<db:password>`, is a pair whose value is the element's text up to the next tag (blanks
//!   around it kept; a `<![CDATA[…]]>` section's content), or to the end when no tag follows.
//!   Only a start tag counts: `<` not after a word character, so generics (`Vec<Token>`),
//!   comparisons (`token>limit`) and closing tags are left alone. The start tag may have
//!   attributes (`<token expires="3600">abc</token>` hides `abc`); a self-closing one has
//!   no text.
//! - *XML attributes* named like a secret key hide their value and nothing else:
//!   `<conn password="hunter2" user="bob"/>` → `<conn password="***" user="bob"/>`. XML has
//!   no backslash escape, so `password="C:\dir\"` ends at its second quote when the tag goes
//!   on after it (another attribute, `>` or `/>`; otherwise the backslash is read as an
//!   escape, which hides more). An unquoted value (`<x api_key=abc/>`, invalid XML but seen
//!   in logs) ends at a blank, `>` or `/>`.
//! - *Name and value apart*: a `name` or `key` field whose quoted value is a secret key
//!   (by the rule above, see [`is_secret_key`]) hides the value of its sibling `value` field,
//!   in either order, keeping both names and every other field:
//!   `<add key="Password" value="hunter2"/>` → `<add key="Password" value="***"/>`,
//!   `<property name="db.password" value="…"/>`, `{"Name": "DB_PASSWORD", "Value": "…"}`
//!   (also HAR's `{"name": "Authorization", "value": "…"}`, Python dicts, `Debug` structs,
//!   JSON inside a string). In XML, the sibling is an attribute of the same start tag or,
//!   without one, the element's text when its closing tag follows (`<param name="api_key">
//!   abc</param>`, `<entry key="password">…</entry>`); in an object, a member of the same
//!   `{…}` (nested objects and lists are stepped over, so `value` in one object is never
//!   hidden for a name in the next). `{"name": "region", "value": "eu"}` and `name="PWD"` are
//!   kept. An HTML `<meta>` tag holds its value in `content`: `<meta name="csrf-token"
//!   content="…">` hides the token. CloudFormation's `{"ParameterKey": "DbPassword",
//!   "ParameterValue": "…"}` pairs `ParameterKey` with `ParameterValue` the same way, and so
//!   does the AWS CLI's shorthand, `ParameterKey=DbPassword,ParameterValue=…` (either order,
//!   neighbours in one `,`-separated run; the value is one word, as under a key). The
//!   name may be unquoted where what follows it says it is a field, not prose: `,` or `}`
//!   (a YAML flow mapping, `{name: password, value: x}` → `{name: password, value: ***}`),
//!   or a blank and the next `Field:` (Go's `%+v`, `{Name:DB_PASSWORD Value:x ValueFrom:nil}`
//!   → `Value:***`; Go prints an empty `Value: ` before `ValueFrom:`, which is kept). So
//!   `{error: name: password must be set, value: x}` is left alone. An unquoted value is one
//!   word there, as under a key: Go's `Value:my pass` leaks `pass`. Looked for only in text
//!   holding a `<`, or a `{` and the word `value`.
//! - *Name and value apart, in YAML*: a block mapping whose `name:` or `key:` (or
//!   `ParameterKey:`) line names a secret key hides its `value:` (`ParameterValue:`) key's
//!   value, a later line of the same mapping (indented to the same column, before a line
//!   indented less): `- name: DB_PASSWORD` / `  value: hunter2` → `  value: ***`, a
//!   Kubernetes env list. The name must start its line (after blanks and an optional `- `),
//!   be alone on it, quoted or not, and follow its colon at once (`name :` is not looked
//!   for). A plain value runs to the end of its line, blanks inside included, or to a
//!   comment (` #`, kept); a quoted one is hidden inside its quotes; a block scalar
//!   (`|`, `>`) or a value on the lines below hides those lines. `valueFrom:` is another key
//!   and is kept. Looked for only in text holding a line break and a `name:` or `key:`.
//!   Still not seen: `value:` written before `name:` (`kubectl` prints `name` first), YAML
//!   whose line breaks are escaped (`\n` inside a JSON string), a mapping indented 64
//!   columns or more, and a value more than 1024 bytes after its name line.
//! - *YAML and connection strings*: `password: abc` is a pair, and so is each
//!   `Password=abc;` of an ADO.NET string and `password=abc` of a libpq DSN (the `;` before
//!   the next `key=` ends the value). In a connection string (a `;`-separated run of
//!   `key=value` pairs holding one of the keys listed under `Pwd=` below), the unquoted value
//!   of a password key (`…password`, `…passwd`, `…passphrase`, ODBC's `Pwd`) after a lone `=`
//!   runs to the next `;`, blanks inside included, blanks before the `;` kept:
//!   `Server=h;Uid=sa;Pwd=my pass;` → `…;Pwd=***;`, and the same for `Password=`. The last
//!   pair's value, with no `;` after it, runs to the end of the line, or to a quote followed
//!   by a blank, the end or closing punctuation (the end of the string the connection string
//!   is in): `"Data Source=h;Password=my pass" failed` → `"Data Source=h;Password=***"
//!   failed`, but `DSN=x;PWD=my pass failed (08001)` loses ` failed (08001)` too, and
//!   `password=abc retrying; Server=h down` reads as one and loses ` retrying`. A password
//!   holding a quote then a blank leaks after it; other secret keys hold generated values
//!   and keep the one-word rule there too (`Token=abc def;` would leak `def`).
//! - *ODBC's `Pwd=`* is a secret key only in a connection string, since a shell's
//!   `PWD=/home/me` is no secret: where its `;`-separated run of `key=value` pairs also has
//!   a `Driver`, `DSN`, `FileDSN`, `Server`, `Uid`, `User Id`, `Data Source`, `Database`,
//!   `Initial Catalog`, `DBQ` or `Hostname` key. `Driver={ODBC Driver 18};Server=h;Uid=sa;
//!   Pwd=s3cr3t;` → `…;Pwd=***;`. A braced value may hold `;` and an escaped `}}`:
//!   `DSN=x;PWD={a;b}` → `DSN=x;PWD={***}`. `PWD=/home/x`, `OLDPWD=…` and a `cd x; PWD=…`
//!   are kept.
//! - A value that opens with `{` or `[` is hidden whole, up to its matching bracket (quoted
//!   strings inside skipped): under a secret key, its items are the secret. The markers
//!   `None`, `null`, `nil`, `true` and `false` are kept, as they hide nothing and say
//!   something useful.
//!
//! **Bare credentials**, wherever they appear, by their well-known shape: GitHub tokens
//! (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 20 or more, `github_pat_…`), JWTs
//! (`eyJ….….…`, unsigned ones too), AWS access key ids (`AKIA`/`ASIA` + 16 or more), Slack
//! tokens (`xoxb-…` etc.), LLM provider keys (`sk-` + 20 or more, so `sk-proj-…`,
//! `sk-ant-…`) and the body of a PEM private key (`-----BEGIN … PRIVATE KEY-----`, kept,
//! then `***`; newlines escaped as `\n` count as newlines). Lengths are open-ended on purpose: a shorter run never matches where a longer
//! one did not, which keeps truncation idempotent.
//!
//! **S3, headers.** `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie` are
//! secret keys whose unquoted value runs to the end of the line, as a header does in HTTP,
//! so `Authorization: Bearer abc` → `Authorization: ***`, `Basic`, `Digest` and multi-part
//! cookies alike. Other headers holding a secret (`X-Api-Key`, `X-Auth-Token`) are secret keys
//! by S2 and hide one word. The header name is kept as written.
//!
//! **S4, dict and struct literals.** The key may be quoted and the quote may be escaped, so
//! Python `{'api_key': '…'}`, JSON `"api_key": "…"`, JSON inside a string
//! `{\"api_key\":\"…\"}` and Rust `Debug` `api_key: "…"` (also `Some("…")` and `b'…'`) all
//! keep their shape with the value replaced by `***`.
//!
//! **S5, length.** After redaction, a message longer than [`MAX_CHARS`] (200) characters is
//! cut to its first 200 and `...` is appended, so the result has at most 203. Characters are
//! Unicode scalar values (Rust `char`s), so the cut never splits one. Redacting first means
//! a secret straddling the cut has already been replaced. A message's final `...` is never
//! read as part of a value (`password=abc...` → `password=***...`), so a cut that lands
//! just after a redacted value stays put when the result is sanitized again.
//!
//! # Properties
//!
//! - No panic on any input; at most 203 chars out.
//! - Idempotent: `sanitize(&sanitize(x)) == sanitize(x)`. Redaction repeats until a round
//!   changes nothing (a clean message takes one round, one with secrets usually two), so
//!   what two detectors hid together is re-read as the log line will show it. After a cut,
//!   the shortened text is settled the same way: a cut can leave the head of something that
//!   was no secret whole (`token: None` cut to `token: No...`), which is then hidden.
//! - The patterns are compiled once. Should one ever fail to compile, every message is
//!   replaced by a fixed refusal rather than logged unredacted.

mod connstr;
mod markup;
mod pairs;
mod patterns;
mod truncate;
mod value;
mod yaml;

pub use truncate::MAX_CHARS;

use std::borrow::Cow;
use std::ops::Range;
use value::KeyKind;

/// What replaces each secret.
const MASK: &str = "***";

/// Returned instead of the message if the sanitizer cannot run (fail closed).
const UNAVAILABLE: &str = "*** (message withheld: sanitizer unavailable)";

/// Returns `message` with secrets replaced by `***` and truncated to 200 characters plus
/// `...`. See the [module docs](self) for exactly what counts as a secret.
///
/// Borrowed when nothing was redacted and the message is at most 200 characters long.
pub fn sanitize(message: &str) -> Cow<'_, str> {
    let Some(patterns) = patterns::compiled() else {
        return Cow::Borrowed(UNAVAILABLE);
    };
    let Ok(redacted) = redact_all(patterns, message) else {
        return Cow::Borrowed(UNAVAILABLE);
    };
    let (mut out, mut cut) = truncate::truncate(redacted);
    // The cut can leave the head of something that was no secret whole (`token: None` cut to
    // `token: No...`) and now reads as one. Settle on a result that sanitizing again keeps.
    for _ in 0..MAX_ROUNDS {
        if !cut {
            break;
        }
        let again = match redact_all(patterns, &out) {
            Ok(Cow::Borrowed(_)) => break,
            Ok(Cow::Owned(again)) => again,
            Err(Unavailable) => return Cow::Borrowed(UNAVAILABLE),
        };
        let (next, next_cut) = truncate::truncate(Cow::Owned(again));
        out = Cow::Owned(next.into_owned());
        cut = next_cut;
    }
    out
}

/// Whether `key` names a secret by S2's rule (it ends with a secret word, in any case), so
/// that a value shown apart from its key can still be withheld: `sanitize` sees the value
/// alone and cannot know (`"hunter2"` is no secret, `api_key: "hunter2"` is).
///
/// ```
/// use resilience_core::sanitize::is_secret_key;
///
/// assert!(is_secret_key("api_key") && is_secret_key("GITHUB_TOKEN"));
/// assert!(!is_secret_key("plan_service") && !is_secret_key("tokens_used"));
/// ```
pub fn is_secret_key(key: &str) -> bool {
    // No patterns: say yes, so the caller withholds (fail closed).
    let Some(patterns) = patterns::compiled() else {
        return true;
    };
    let probe = format!("{}=", key.to_ascii_lowercase());
    // `pwd` is a secret key only inside a connection string, which a key alone is not, and
    // `parametervalue` only next to a `ParameterKey` naming a secret.
    patterns.key.find_iter(probe.as_bytes()).any(|m| {
        m.end() == probe.len()
            && !m.as_bytes().starts_with(b"pwd")
            && !m.as_bytes().starts_with(b"parametervalue")
    })
}

/// Redaction rounds until nothing changes. Merging the spans of two detectors can join text
/// across a boundary one of them relied on (a line end, a closing quote), and the next round
/// must see what the log line will show. Each round only adds `***`; in practice one round
/// redacts and the second confirms. Borrowed when nothing was redacted.
fn redact_all<'a>(
    patterns: &patterns::Patterns,
    message: &'a str,
) -> Result<Cow<'a, str>, Unavailable> {
    let mut text = Cow::Borrowed(message);
    for _ in 0..MAX_ROUNDS {
        match redact_round(patterns, &text)? {
            None => break,
            Some(next) => text = Cow::Owned(next),
        }
    }
    Ok(text)
}

/// Redaction rounds before giving up on reaching a fixed point (never reached in tests).
const MAX_ROUNDS: usize = 4;

/// A span was not on char boundaries: cannot happen by construction; reported so a bug fails
/// closed instead of panicking.
struct Unavailable;

/// One pass of every detector. `None` if it changes nothing.
fn redact_round(patterns: &patterns::Patterns, text: &str) -> Result<Option<String>, Unavailable> {
    let mut spans = Vec::new();
    // Same byte offsets as `text`; values are read from `text` itself.
    let (lower, marks) = patterns::lowercase(text);
    let tags = marks.tags;
    key_value_spans(&patterns.key, text, &lower, tags, &mut spans);
    if tags {
        markup::element_spans(&patterns.element, text, &lower, &mut spans);
    }
    if pairs::may_hold_pairs(&lower, marks) {
        pairs::pair_spans(&patterns.name_field, text, &lower, &mut spans);
    }
    if marks.lines && yaml::may_hold_names(&lower) {
        yaml::pair_spans(&patterns.yaml_name_field, text, &lower, &mut spans);
    }
    shaped_spans(&patterns.shaped, text, &mut spans);
    redact(text, spans)
}

/// S2–S4: the values after secret keys. Scanning resumes after each value, so a key inside
/// a value already hidden is not looked at again.
fn key_value_spans(
    key_re: &regex::bytes::Regex,
    text: &str,
    lower: &[u8],
    tags: bool,
    spans: &mut Vec<Range<usize>>,
) {
    let mut pos = 0;
    while let Some(m) = key_re.find_at(lower, pos) {
        pos = m.end();
        if let Some(found) = value_after_key(text, m.start(), m.as_bytes(), tags) {
            pos = pos.max(found.resume);
            spans.push(found.hide);
        }
    }
}

/// The value after the key and separator `matched` found at `start`, if it is a secret's.
/// `tags`: whether the text holds a `<`, without which no key is in XML.
fn value_after_key(text: &str, start: usize, matched: &[u8], tags: bool) -> Option<value::Extent> {
    let b = text.as_bytes();
    let end = start + matched.len();
    let last = *matched.last()?;
    if last == b'>' && !matched.ends_with(b"=>") {
        // `key>`: a secret only as an XML start tag, `<…key>`. Its text may start with
        // anything, `>` included.
        return (tags && markup::opens_element(b, start))
            .then(|| value::extent(text, end, KeyKind::Element))
            .flatten();
    }
    // The separator is the last non-blank byte of the match; doubled, it is not one.
    let sep_at = matched
        .iter()
        .rposition(|&c| c != b' ' && c != b'\t')
        .map_or(end, |p| start + p);
    let sep = b.get(sep_at);
    if sep.is_some() && b.get(sep_at + 1) == sep {
        return None;
    }
    if matched.starts_with(b"pwd") {
        return connstr::pwd_value(text, start, matched);
    }
    if matched.starts_with(b"parametervalue") {
        return pairs::shorthand_value(text, start, matched);
    }
    let in_tag =
        tags && sep == Some(&b'=') && is_bare_key(matched) && markup::in_start_tag(b, start);
    let kind = if in_tag {
        KeyKind::Attribute
    } else if matched.starts_with(b"authorization") || matched.starts_with(b"cookie") {
        KeyKind::Header
    } else {
        KeyKind::Word
    };
    let found = value::extent(text, end, kind);
    if kind == KeyKind::Word
        && matched.starts_with(b"pass")
        && sep == Some(&b'=')
        && is_plain_assignment(matched)
    {
        // `Password=` in a connection string: the value runs to the next `;`. Only for a
        // password (`pass` starts `password`, `passwd` and `passphrase`): a human-chosen
        // secret may hold a blank, a generated token or key does not.
        return connstr::widened(text, start, end, found);
    }
    found
}

/// Whether `matched` is a bare key and a lone `=` (`Password = `, not `"password"=`,
/// `token:=` or `key=>`).
fn is_plain_assignment(matched: &[u8]) -> bool {
    is_bare_key(matched)
        && matched
            .iter()
            .rev()
            .take_while(|&&c| matches!(c, b' ' | b'\t' | b'=' | b':' | b'>'))
            .filter(|&&c| c != b' ' && c != b'\t')
            .eq([&b'='])
}

/// Whether the key in `matched` is not quoted (`password=`, not `"password"=`).
fn is_bare_key(matched: &[u8]) -> bool {
    !matched.iter().any(|&c| matches!(c, b'"' | b'\'' | b'\\'))
}

/// S1 and bare credentials.
fn shaped_spans(shaped_re: &regex::Regex, text: &str, spans: &mut Vec<Range<usize>>) {
    for caps in shaped_re.captures_iter(text) {
        let part = caps
            .name("url")
            .or_else(|| caps.name("tok"))
            .or_else(|| caps.name("pem"))
            .or_else(|| caps.name("auth"))
            .or_else(|| caps.name("flag"));
        if let Some(part) = part {
            // A PEM body keeps the line breaks around it.
            let inner = part
                .as_str()
                .trim_matches(|c: char| c.is_ascii_whitespace());
            if !inner.is_empty() {
                let start = part.start()
                    + (part.as_str().len()
                        - part
                            .as_str()
                            .trim_start_matches(|c: char| c.is_ascii_whitespace())
                            .len());
                spans.push(start..start + inner.len());
            }
        }
    }
}

/// Replaces the spans (merged where they overlap or touch) with [`MASK`]. `None` when no span
/// changes anything (each already reads `***`).
fn redact(text: &str, mut spans: Vec<Range<usize>>) -> Result<Option<String>, Unavailable> {
    if spans.is_empty() {
        return Ok(None);
    }
    spans.sort_unstable_by_key(|s| s.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    if merged.iter().all(|s| text.get(s.clone()) == Some(MASK)) {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for span in merged {
        out.push_str(text.get(copied..span.start).ok_or(Unavailable)?);
        text.get(span.clone()).ok_or(Unavailable)?;
        out.push_str(MASK);
        copied = span.end;
    }
    out.push_str(text.get(copied..).ok_or(Unavailable)?);
    Ok(Some(out))
}

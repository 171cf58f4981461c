//! ODBC's `Pwd=` (S2): a secret key only inside a connection string.
//!
//! `PWD` is also a shell's working directory (`PWD=/home/me`), so it is no secret key by
//! itself. It is one where the `;`-separated run of `key=value` pairs it sits in also has a
//! key that only a connection string has ([`CONNECTION_KEYS`]). Scans are bounded by
//! [`WINDOW`] each way, and only ever return positions of ASCII bytes.

use super::value::{self, Extent, KeyKind};

/// Keys that make a `;`-separated run a connection string (ODBC, and ADO.NET's names for
/// the same), compared without case. Shell variables such as `USER`, `HOST` or `PORT` are
/// left out, so an environment dump is not read as one.
const CONNECTION_KEYS: [&[u8]; 11] = [
    b"driver",
    b"dsn",
    b"filedsn",
    b"server",
    b"uid",
    b"user id",
    b"data source",
    b"database",
    b"initial catalog",
    b"dbq",
    b"hostname",
];

/// How far the run is followed each way from `Pwd=`.
const WINDOW: usize = 512;

/// The value of the `pwd` key at `start` (with its separator, `matched`), if it is a secret:
/// the key is the whole name (not `OLDPWD`), the separator is `=`, and the text around is a
/// connection string.
pub(super) fn pwd_value(text: &str, start: usize, matched: &[u8]) -> Option<Extent> {
    let b = text.as_bytes();
    if start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
        return None;
    }
    let mut separator = matched[3..].iter().filter(|&&c| c != b' ' && c != b'\t');
    if separator.next() != Some(&b'=') || separator.next().is_some() {
        return None;
    }
    let found = value::extent(text, start + matched.len(), KeyKind::Connection)?;
    in_connection_string(b, start, found.resume).then_some(found)
}

/// The value of another secret key (`Password=`, `Token=`) whose one-word value is `word`
/// (what [`KeyKind::Word`] found from `value_start`; the key's name ends there, and its last
/// part starts at `key_start`): in a connection string, the value runs to the next `;`, so
/// `Server=h;Password=my pass;` hides `my pass`. Elsewhere, the word.
pub(super) fn widened(
    text: &str,
    key_start: usize,
    value_start: usize,
    word: Option<Extent>,
) -> Option<Extent> {
    let Some(wide) = value::extent(text, value_start, KeyKind::Connection) else {
        return word;
    };
    if word.as_ref().is_some_and(|w| w.hide == wide.hide) {
        return word;
    }
    let b = text.as_bytes();
    // Back to the start of the whole name (`DB_Password`, `User Password`).
    let name = b[..key_start]
        .iter()
        .rposition(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')))
        .map_or(0, |p| p + 1);
    if in_connection_string(b, name, wide.resume) {
        Some(wide)
    } else {
        word
    }
}

/// Whether the run of `;`-separated pairs holding the pair at `pair_start..pair_end` has a
/// connection-string key. The run goes on while each neighbour is a `key=value` pair.
fn in_connection_string(b: &[u8], pair_start: usize, pair_end: usize) -> bool {
    // Backwards: `…;key=value;` before the pair.
    let lo = pair_start.saturating_sub(WINDOW);
    let mut at = pair_start;
    loop {
        at = lo
            + b[lo..at]
                .iter()
                .rposition(|&c| !is_blank(c))
                .map_or(0, |p| p + 1);
        if at == lo || b[at - 1] != b';' {
            break;
        }
        let end = at - 1;
        let begin = memchr::memrchr3(b';', b'\n', b'\r', &b[lo..end]).map_or(lo, |p| lo + p + 1);
        match has_key(&b[begin..end]) {
            Some(true) => return true,
            Some(false) => at = begin,
            None => break,
        }
    }
    // Forwards: `;key=value;…` after it.
    let hi = b.len().min(pair_end.saturating_add(WINDOW));
    let mut at = pair_end;
    loop {
        at += b[at..hi].iter().take_while(|&&c| is_blank(c)).count();
        if b.get(at) != Some(&b';') || at >= hi {
            break;
        }
        let begin = at + 1;
        let end = memchr::memchr3(b';', b'\n', b'\r', &b[begin..hi]).map_or(hi, |p| begin + p);
        match has_key(&b[begin..end]) {
            Some(true) => return true,
            Some(false) => at = end,
            None => break,
        }
    }
    false
}

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// For a `;`-separated segment: `None` if it is no `key=value` pair, else whether a key in it
/// is a connection-string key. The key is the run of letters, digits, `_` and blanks before
/// an `=` (so `error: Driver={…}` and `conn="Data Source=h` have one).
fn has_key(segment: &[u8]) -> Option<bool> {
    let mut pair = false;
    for eq in memchr::memchr_iter(b'=', segment) {
        pair = true;
        let before = &segment[..eq];
        let key_start = before
            .iter()
            .rposition(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || is_blank(c)))
            .map_or(0, |p| p + 1);
        let key = before[key_start..].trim_ascii();
        if CONNECTION_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key)) {
            return Some(true);
        }
    }
    pair.then_some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_keys() {
        assert_eq!(has_key(b"error: Driver={ODBC Driver 18}"), Some(true));
        assert_eq!(has_key(b"conn=\"Data Source=h"), Some(true));
        assert_eq!(has_key(b" OLDPWD=/tmp"), Some(false));
        assert_eq!(has_key(b" ls -l"), None);
    }
}

//! HTTP-date (RFC 9110 §5.6.7) to seconds since the Unix epoch, for `Retry-After`.
//!
//! Accepts the preferred IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and, as RFC 9110 asks
//! recipients to, the obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
//! (`Sun Nov  6 08:49:37 1994`) forms. Anything else is `None`, never a panic.

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Parses an HTTP-date into whole seconds since the Unix epoch.
pub(crate) fn parse_http_date(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.len() > 64 {
        return None;
    }
    let words: Vec<&str> = s.split_ascii_whitespace().collect();
    match words.as_slice() {
        // IMF-fixdate: day-name "," SP day SP month SP year SP time SP "GMT"
        [_day, d, m, y, t, gmt] if gmt.eq_ignore_ascii_case("GMT") => {
            let year: i64 = parse_num(y, 4)?;
            to_epoch(year, month(m)?, parse_num(d, 2)?, t)
        }
        // RFC 850: day-name "," SP day "-" month "-" 2DIGIT SP time SP "GMT"
        [_day, dmy, t, gmt] if gmt.eq_ignore_ascii_case("GMT") => {
            let mut parts = dmy.split('-');
            let (d, m, y) = (parts.next()?, parts.next()?, parts.next()?);
            if parts.next().is_some() {
                return None;
            }
            let yy: i64 = parse_num(y, 2)?;
            // Two-digit years: RFC 9110 says to read ones more than 50 years ahead as past.
            let year = if yy < 70 { 2000 + yy } else { 1900 + yy };
            to_epoch(year, month(m)?, parse_num(d, 2)?, t)
        }
        // asctime: day-name SP month SP ( 2DIGIT / ( SP DIGIT )) SP time SP year
        [_day, m, d, t, y] => {
            let year: i64 = parse_num(y, 4)?;
            to_epoch(year, month(m)?, parse_num(d, 2)?, t)
        }
        _ => None,
    }
}

fn parse_num(s: &str, max_digits: usize) -> Option<i64> {
    if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn month(m: &str) -> Option<i64> {
    let pos = MONTHS.iter().position(|x| x.eq_ignore_ascii_case(m))?;
    i64::try_from(pos).ok().map(|p| p + 1)
}

fn to_epoch(year: i64, month: i64, day: i64, time: &str) -> Option<u64> {
    let mut hms = time.split(':');
    let (h, mi, s) = (hms.next()?, hms.next()?, hms.next()?);
    if hms.next().is_some() {
        return None;
    }
    let (h, mi, s) = (parse_num(h, 2)?, parse_num(mi, 2)?, parse_num(s, 2)?);
    // 60 allows a leap second.
    if !(1..=31).contains(&day) || h > 23 || mi > 59 || s > 60 || !(1970..=9999).contains(&year) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    u64::try_from(days * 86_400 + h * 3600 + mi * 60 + s).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_rfc_9110_forms_agree() {
        let want = Some(784_111_777);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), want);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), want);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), want);
    }

    #[test]
    fn epoch_and_leap_years() {
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Thu, 01 Jan 2026 00:00:00 GMT"),
            Some(1_767_225_600)
        );
        assert_eq!(
            parse_http_date("Thu, 29 Feb 2024 12:00:00 GMT"),
            Some(1_709_208_000)
        );
    }

    #[test]
    fn garbage_is_none() {
        for bad in [
            "",
            "tomorrow",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, -6 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad:?}");
        }
    }
}

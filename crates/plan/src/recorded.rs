//! The names of replay's checks against the recording (`GET /x: status 200 as recorded`):
//! written into replay plans by crates/har, read back by the report to say per tag how the
//! replayed statuses differ from the recorded one.

/// `TAG: status STATUS as recorded`.
pub fn status_check_name(tag: &str, status: u16) -> String {
    format!("{tag}: status {status} as recorded")
}

/// The tag and recorded status of a [`status_check_name`]; `None` for any other check.
pub fn parse_status_check_name(name: &str) -> Option<(&str, u16)> {
    let rest = name.strip_suffix(" as recorded")?;
    let (tag, status) = rest.rsplit_once(": status ")?;
    Some((tag, status.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        let name = status_check_name("POST /orders: v2", 200);
        assert_eq!(
            parse_status_check_name(&name),
            Some(("POST /orders: v2", 200))
        );
        assert_eq!(
            parse_status_check_name("GET /x: JSON shape as recorded"),
            None
        );
        assert_eq!(parse_status_check_name("status is 200"), None);
    }
}

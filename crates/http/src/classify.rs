//! Maps I/O failures to the error kinds reports count them under.

use barrage_metrics::ErrorKind;
use std::io;

/// Classifies an I/O error. `connecting` tells whether it happened while opening the
/// connection, where unknown failures are connect failures rather than I/O errors.
pub fn classify_io_error(error: &io::Error, connecting: bool) -> ErrorKind {
    /// EMFILE and ENFILE: this process (or the system) is out of file descriptors.
    const EMFILE: i32 = 24;
    const ENFILE: i32 = 23;
    if matches!(error.raw_os_error(), Some(EMFILE | ENFILE)) {
        return ErrorKind::LocalFdLimit;
    }
    match error.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ErrorKind::Reset,
        io::ErrorKind::TimedOut => ErrorKind::Timeout,
        io::ErrorKind::UnexpectedEof => ErrorKind::Closed,
        io::ErrorKind::InvalidData => ErrorKind::Malformed,
        _ if connecting => ErrorKind::Connect,
        _ => ErrorKind::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_common_kinds() {
        let e = |k| io::Error::from(k);
        assert_eq!(
            classify_io_error(&e(io::ErrorKind::ConnectionRefused), true),
            ErrorKind::Refused
        );
        assert_eq!(
            classify_io_error(&e(io::ErrorKind::ConnectionReset), false),
            ErrorKind::Reset
        );
        assert_eq!(
            classify_io_error(&e(io::ErrorKind::BrokenPipe), false),
            ErrorKind::Reset
        );
        assert_eq!(
            classify_io_error(&e(io::ErrorKind::Other), true),
            ErrorKind::Connect
        );
        assert_eq!(
            classify_io_error(&e(io::ErrorKind::Other), false),
            ErrorKind::Io
        );
        for errno in [23, 24] {
            assert_eq!(
                classify_io_error(&io::Error::from_raw_os_error(errno), true),
                ErrorKind::LocalFdLimit
            );
        }
    }
}

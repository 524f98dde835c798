//! The file's envelope: magic, format version, then checksummed sections up to an END marker,
//! so a wrong, truncated or bit-flipped file is refused with one clear reason.

use crate::ResultsError;

/// The first eight bytes of every results file.
pub const MAGIC: &[u8; 8] = b"BRRESULT";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 2;
/// The kind of the section that closes the file.
pub const END: [u8; 4] = *b"END ";
const HEADER_LEN: usize = 12;
const SECTION_HEADER_LEN: usize = 16;

/// One section as read: its kind and payload.
#[derive(Debug)]
pub struct Section<'a> {
    pub kind: [u8; 4],
    pub payload: &'a [u8],
}

/// Writes the header and then sections, in order, closing with END.
pub fn write(sections: &[([u8; 4], Vec<u8>)]) -> Vec<u8> {
    let total: usize = sections
        .iter()
        .map(|(_, p)| p.len() + SECTION_HEADER_LEN)
        .sum();
    let mut out = Vec::with_capacity(HEADER_LEN + total + SECTION_HEADER_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // flags, none defined
    for (kind, payload) in sections.iter().chain(std::iter::once(&(END, Vec::new()))) {
        let len = (payload.len() as u64).to_le_bytes();
        out.extend_from_slice(kind);
        out.extend_from_slice(&len);
        out.extend_from_slice(&checksum(kind, &len, payload).to_le_bytes());
        out.extend_from_slice(payload);
    }
    out
}

/// CRC-32 of a section's kind, length and payload: a flipped bit in the kind of an optional
/// section must not turn it into an unknown (skipped) one.
fn checksum(kind: &[u8], len: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(kind);
    hasher.update(len);
    hasher.update(payload);
    hasher.finalize()
}

pub fn kind_name(kind: &[u8; 4]) -> String {
    String::from_utf8_lossy(kind).trim_end().to_string()
}

/// Splits a file into its sections, checking magic, version, lengths and checksums.
pub fn read(data: &[u8]) -> Result<Vec<Section<'_>>, ResultsError> {
    if data.len() < MAGIC.len() || &data[..MAGIC.len()] != MAGIC {
        return Err(ResultsError::NotResults);
    }
    if data.len() < HEADER_LEN {
        return Err(ResultsError::Truncated("the header".into()));
    }
    let version = u16::from_le_bytes([data[8], data[9]]);
    if version < FORMAT_VERSION {
        return Err(ResultsError::OlderVersion(version));
    }
    if version != FORMAT_VERSION {
        return Err(ResultsError::UnsupportedVersion(version));
    }
    let mut sections = Vec::new();
    let mut at = HEADER_LEN;
    loop {
        if data.len() - at < SECTION_HEADER_LEN {
            return Err(ResultsError::Truncated(format!(
                "the section header at byte {at}"
            )));
        }
        let header = &data[at..at + SECTION_HEADER_LEN];
        let kind: [u8; 4] = header[..4].try_into().expect("four bytes");
        let len = u64::from_le_bytes(header[4..12].try_into().expect("eight bytes"));
        let crc = u32::from_le_bytes(header[12..16].try_into().expect("four bytes"));
        at += SECTION_HEADER_LEN;
        let left = (data.len() - at) as u64;
        if len > left {
            return Err(ResultsError::Truncated(format!(
                "section {} ({len} bytes, {left} left)",
                kind_name(&kind)
            )));
        }
        let payload = &data[at..at + len as usize];
        at += len as usize;
        if checksum(&header[..4], &header[4..12], payload) != crc {
            return Err(ResultsError::Corrupt {
                section: kind_name(&kind),
                reason: "checksum mismatch".into(),
            });
        }
        if kind == END {
            if at != data.len() {
                return Err(ResultsError::Corrupt {
                    section: "END".into(),
                    reason: format!("{} bytes after the end marker", data.len() - at),
                });
            }
            return Ok(sections);
        }
        sections.push(Section { kind, payload });
    }
}

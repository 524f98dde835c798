//! The results-file reader (`barrage report`, `merge`, `compare` read files from anywhere).
//! Twice: as the bytes come (the envelope's checks), and with every section's checksum made
//! right again after mutation, so mutations reach the section decoders behind the CRC.

use barrage_results::ResultsFile;

const HEADER_LEN: usize = 12;
const SECTION_HEADER_LEN: usize = 16;

/// Reads a results file; what reads back writes and reads back again.
pub fn read_back(input: &[u8]) {
    if let Ok(file) = ResultsFile::from_bytes(input) {
        // What reads back writes again and reads back the same.
        let again = ResultsFile::from_bytes(&file.to_bytes()).expect("a file we wrote");
        assert_eq!(again.meta, file.meta);
    }
}

/// Rewrites each section's CRC (kind, length, payload) where the section fits.
fn fix_checksums(data: &mut [u8]) {
    let mut at = HEADER_LEN;
    while data.len().saturating_sub(at) >= SECTION_HEADER_LEN {
        let len = u64::from_le_bytes(data[at + 4..at + 12].try_into().expect("eight bytes"));
        let start = at + SECTION_HEADER_LEN;
        let Some(end) = usize::try_from(len).ok().and_then(|l| start.checked_add(l)) else {
            return;
        };
        if end > data.len() {
            return;
        }
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&data[at..at + 12]);
        hasher.update(&data[start..end]);
        let crc = hasher.finalize().to_le_bytes();
        data[at + 12..at + 16].copy_from_slice(&crc);
        at = end;
    }
}

/// The same behind fixed checksums, so mutations reach the section decoders.
pub fn read_behind_checksums(input: &[u8]) {
    let mut data = input.to_vec();
    fix_checksums(&mut data);
    read_back(&data);
}

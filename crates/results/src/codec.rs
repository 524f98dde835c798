//! Byte-level encoding of section payloads: LEB128 varints, length-prefixed bytes and strings,
//! and a bounds-checked reader that turns any short or malformed input into an error.

/// Appends values to a payload.
#[derive(Debug, Default)]
pub struct Encoder {
    pub bytes: Vec<u8>,
}

impl Encoder {
    pub fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
    }

    pub fn bytes(&mut self, data: &[u8]) {
        self.varint(data.len() as u64);
        self.bytes.extend_from_slice(data);
    }

    pub fn string(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }
}

/// Reads values back; every read checks the bounds.
#[derive(Debug)]
pub struct Decoder<'a> {
    data: &'a [u8],
    position: usize,
}

/// Why a payload could not be read (the caller names the section).
pub type DecodeResult<T> = Result<T, String>;

impl<'a> Decoder<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, position: 0 }
    }

    pub fn varint(&mut self) -> DecodeResult<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .data
                .get(self.position)
                .ok_or_else(|| format!("ends inside a number at byte {}", self.position))?;
            self.position += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("number too long at byte {}", self.position))
    }

    /// A count of items that each take at least one byte: bounded by what is left, so a
    /// corrupt count cannot make the reader allocate without limit.
    pub fn count(&mut self) -> DecodeResult<usize> {
        let n = self.varint()?;
        let left = (self.data.len() - self.position) as u64;
        if n > left {
            return Err(format!(
                "count {n} at byte {} exceeds the {left} bytes left",
                self.position
            ));
        }
        Ok(n as usize)
    }

    pub fn bytes(&mut self) -> DecodeResult<&'a [u8]> {
        let len = self.count()?;
        let slice = &self.data[self.position..self.position + len];
        self.position += len;
        Ok(slice)
    }

    pub fn string(&mut self) -> DecodeResult<String> {
        let at = self.position;
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| format!("bad text at byte {at}"))
    }

    pub fn finish(&self) -> DecodeResult<()> {
        if self.position == self.data.len() {
            Ok(())
        } else {
            Err(format!(
                "{} unexpected bytes at the end",
                self.data.len() - self.position
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_short_input_is_an_error() {
        let mut e = Encoder::default();
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            e.varint(v);
        }
        e.string("get ✓");
        let mut d = Decoder::new(&e.bytes);
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            assert_eq!(d.varint().unwrap(), v);
        }
        assert_eq!(d.string().unwrap(), "get ✓");
        d.finish().unwrap();
        let cut = &e.bytes[..e.bytes.len() - 2];
        let mut d = Decoder::new(cut);
        for _ in 0..6 {
            d.varint().unwrap();
        }
        assert!(d.string().is_err());
        assert!(Decoder::new(&[0xff; 11]).varint().is_err());
    }
}

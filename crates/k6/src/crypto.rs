//! `k6/crypto`'s natives: digests (md4, md5, sha1, sha256, sha384, sha512, sha512_224,
//! sha512_256, ripemd160) and their HMACs over text (UTF-8) or bytes, in k6's output
//! encodings (`hex`, `base64`, `base64url`, `base64rawurl`, `binary` → `ArrayBuffer`), and
//! `randomBytes`.

use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use hmac::digest::core_api::BlockSizeUser;
use hmac::digest::Digest;
use hmac::{Mac, SimpleHmac};
use rand::RngCore;
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Value};

/// The digest of `parts` (an HMAC keyed with `key` when given).
fn compute<D: Digest + BlockSizeUser + Clone>(key: Option<&[u8]>, parts: &[Vec<u8>]) -> Vec<u8> {
    match key {
        Some(key) => {
            let mut mac = <SimpleHmac<D> as Mac>::new_from_slice(key)
                .expect("an HMAC takes a key of any length");
            for part in parts {
                mac.update(part);
            }
            mac.finalize().into_bytes().to_vec()
        }
        None => {
            let mut digest = D::new();
            for part in parts {
                digest.update(part);
            }
            digest.finalize().to_vec()
        }
    }
}

/// `algorithm`'s digest (or HMAC) of `parts`; `None` for an algorithm k6 does not have.
pub(crate) fn digest(algorithm: &str, key: Option<&[u8]>, parts: &[Vec<u8>]) -> Option<Vec<u8>> {
    Some(match algorithm {
        "md4" => compute::<md4::Md4>(key, parts),
        "md5" => compute::<md5::Md5>(key, parts),
        "sha1" => compute::<sha1::Sha1>(key, parts),
        "sha256" => compute::<sha2::Sha256>(key, parts),
        "sha384" => compute::<sha2::Sha384>(key, parts),
        "sha512" => compute::<sha2::Sha512>(key, parts),
        "sha512_224" => compute::<sha2::Sha512_224>(key, parts),
        "sha512_256" => compute::<sha2::Sha512_256>(key, parts),
        "ripemd160" => compute::<ripemd::Ripemd160>(key, parts),
        _ => return None,
    })
}

/// `bytes` in k6's output `encoding`; `None` for an encoding k6 does not have.
pub(crate) fn encode(bytes: &[u8], encoding: &str) -> Option<String> {
    Some(match encoding {
        "hex" => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        "base64" => STANDARD.encode(bytes),
        "base64url" => URL_SAFE.encode(bytes),
        "base64rawurl" => URL_SAFE_NO_PAD.encode(bytes),
        _ => return None,
    })
}

/// Bytes of a script value: text as UTF-8, else an array of byte values (the module turns
/// `ArrayBuffer`s and views into those).
fn bytes_of(value: &Value<'_>) -> rquickjs::Result<Vec<u8>> {
    if let Some(text) = value.as_string() {
        return Ok(text.to_string()?.into_bytes());
    }
    value.get::<Vec<u8>>()
}

/// Installs `digest`, `hexEncode` and `randomBytes` on `natives`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, natives: &Object<'js>) -> rquickjs::Result<()> {
    natives.set(
        "digest",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             algorithm: String,
             key: Value<'js>,
             parts: Vec<Value<'js>>,
             encoding: String|
             -> rquickjs::Result<Value<'js>> {
                let key = if key.is_null() || key.is_undefined() {
                    None
                } else {
                    Some(bytes_of(&key)?)
                };
                let parts = parts
                    .iter()
                    .map(bytes_of)
                    .collect::<rquickjs::Result<Vec<_>>>()?;
                let Some(sum) = digest(&algorithm, key.as_deref(), &parts) else {
                    return Err(Exception::throw_type(
                        &ctx,
                        &format!("invalid algorithm: {algorithm}"),
                    ));
                };
                if encoding == "binary" {
                    return Ok(ArrayBuffer::new(ctx.clone(), sum)?.into_value());
                }
                match encode(&sum, &encoding) {
                    Some(text) => Ok(rquickjs::String::from_str(ctx.clone(), &text)?.into_value()),
                    None => Err(Exception::throw_type(
                        &ctx,
                        &format!("invalid output encoding: {encoding}"),
                    )),
                }
            },
        )?,
    )?;
    natives.set(
        "hexEncode",
        Function::new(
            ctx.clone(),
            |value: Value<'js>| -> rquickjs::Result<String> {
                Ok(encode(&bytes_of(&value)?, "hex").unwrap_or_default())
            },
        )?,
    )?;
    natives.set(
        "randomBytes",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, size: f64| -> rquickjs::Result<Value<'js>> {
                if !(size >= 1.0 && size <= (64 << 20) as f64) {
                    return Err(Exception::throw_range(&ctx, "invalid size"));
                }
                let mut bytes = vec![0; size as usize];
                rand::thread_rng().fill_bytes(&mut bytes);
                Ok(ArrayBuffer::new(ctx.clone(), bytes)?.into_value())
            },
        )?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(algorithm: &str, key: Option<&str>, text: &str) -> String {
        let sum = digest(
            algorithm,
            key.map(str::as_bytes),
            &[text.as_bytes().to_vec()],
        )
        .unwrap();
        encode(&sum, "hex").unwrap()
    }

    #[test]
    fn digests_match_the_known_vectors() {
        assert_eq!(hex("md5", None, ""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            hex("sha1", None, "abc"),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex("sha256", None, "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hex("md4", None, "abc"), "a448017aaf21d8525fc10ae87aa6729d");
        assert_eq!(
            hex("ripemd160", None, "abc"),
            "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc"
        );
        // RFC 4231 test case 2.
        assert_eq!(
            hex("sha256", Some("Jefe"), "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(digest("sha3", None, &[]).is_none());
        assert_eq!(encode(&[0xfb, 0xff], "base64url").unwrap(), "-_8=");
        assert_eq!(encode(&[0xfb, 0xff], "base64rawurl").unwrap(), "-_8");
        assert_eq!(encode(&[0xfb, 0xff], "base64").unwrap(), "+/8=");
        assert!(encode(&[], "latin1").is_none());
    }
}

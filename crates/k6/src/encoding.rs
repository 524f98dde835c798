//! `k6/encoding`'s natives: base64 in k6's four alphabets (`std`, `rawstd` without padding,
//! `url`, `rawurl`), from text (UTF-8) or bytes, to text or an `ArrayBuffer`.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Value};

fn engine(name: &str) -> Result<&'static base64::engine::GeneralPurpose, String> {
    match name {
        "" | "std" => Ok(&STANDARD),
        "rawstd" => Ok(&STANDARD_NO_PAD),
        "url" => Ok(&URL_SAFE),
        "rawurl" => Ok(&URL_SAFE_NO_PAD),
        other => Err(format!(
            "unsupported base64 encoding `{other}` (std, rawstd, url or rawurl)"
        )),
    }
}

/// Installs `b64encodeText`, `b64encodeBytes` and `b64decode` on `natives`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, natives: &Object<'js>) -> rquickjs::Result<()> {
    natives.set(
        "b64encodeText",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, text: String, encoding: String| -> rquickjs::Result<String> {
                let engine = engine(&encoding).map_err(|e| Exception::throw_type(&ctx, &e))?;
                Ok(engine.encode(text.as_bytes()))
            },
        )?,
    )?;
    natives.set(
        "b64encodeBytes",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, bytes: Vec<u8>, encoding: String| -> rquickjs::Result<String> {
                let engine = engine(&encoding).map_err(|e| Exception::throw_type(&ctx, &e))?;
                Ok(engine.encode(bytes))
            },
        )?,
    )?;
    natives.set(
        "b64decode",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             text: String,
             encoding: String,
             as_text: bool|
             -> rquickjs::Result<Value<'js>> {
                let engine = engine(&encoding).map_err(|e| Exception::throw_type(&ctx, &e))?;
                let bytes = engine.decode(text.as_bytes()).map_err(|e| {
                    Exception::throw_message(&ctx, &format!("b64decode: invalid input: {e}"))
                })?;
                if as_text {
                    let text = String::from_utf8_lossy(&bytes);
                    Ok(rquickjs::String::from_str(ctx.clone(), &text)?.into_value())
                } else {
                    Ok(ArrayBuffer::new(ctx.clone(), bytes)?.into_value())
                }
            },
        )?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_alphabets_are_k6s() {
        let bytes = [0xfb_u8, 0xff, 0x01];
        assert_eq!(engine("std").unwrap().encode(bytes), "+/8B");
        assert_eq!(engine("url").unwrap().encode(bytes), "-_8B");
        assert_eq!(engine("std").unwrap().encode("ab"), "YWI=");
        assert_eq!(engine("rawstd").unwrap().encode("ab"), "YWI");
        assert_eq!(engine("rawurl").unwrap().encode("ab"), "YWI");
        assert!(engine("hex").unwrap_err().contains("`hex`"));
    }
}

//! Re-signing a recorded JSON Web Token for one client (a `jwt` binding): `iat` becomes
//! now, `nbf` and `exp` keep their distance to it (or `exp` is `iat` plus the plan's
//! lifetime), the plan's claims are set, and the token is signed with the test's key by the
//! `jsonwebtoken` crate. The recorded header's `kid` and `typ` are kept.

use super::program::Scope;
use super::values::{CValue, Eval};
use super::SessionProblem;
use barrage_plan::{JwtAlgorithm, JwtResign};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Map, Value as Json};
use std::time::Duration;

/// A token's lifetime when it has neither one of its own nor one in the plan.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);

/// A compiled `jwt` binding.
#[derive(Clone)]
pub(crate) struct CompiledJwt {
    pub token: CValue,
    algorithm: Algorithm,
    key: EncodingKey,
    lifetime: Option<Duration>,
    claims: Map<String, Json>,
}

impl std::fmt::Debug for CompiledJwt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("CompiledJwt")
            .field("algorithm", &self.algorithm)
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl PartialEq for CompiledJwt {
    fn eq(&self, other: &Self) -> bool {
        self.token == other.token
            && self.algorithm == other.algorithm
            && self.lifetime == other.lifetime
            && self.claims == other.claims
    }
}

impl CompiledJwt {
    pub(crate) fn compile(resign: &JwtResign, scope: &mut Scope) -> Result<Self, SessionProblem> {
        let bad = |reason: String| SessionProblem::Jwt(reason);
        let pem = resign.key.as_bytes();
        let (algorithm, key) = match resign.algorithm {
            JwtAlgorithm::HS256 => (Algorithm::HS256, EncodingKey::from_secret(pem)),
            JwtAlgorithm::HS384 => (Algorithm::HS384, EncodingKey::from_secret(pem)),
            JwtAlgorithm::HS512 => (Algorithm::HS512, EncodingKey::from_secret(pem)),
            JwtAlgorithm::RS256 => (
                Algorithm::RS256,
                EncodingKey::from_rsa_pem(pem).map_err(|e| bad(format!("RS256 key: {e}")))?,
            ),
            JwtAlgorithm::ES256 => (
                Algorithm::ES256,
                EncodingKey::from_ec_pem(pem).map_err(|e| bad(format!("ES256 key: {e}")))?,
            ),
            JwtAlgorithm::EdDSA => (
                Algorithm::EdDSA,
                EncodingKey::from_ed_pem(pem).map_err(|e| bad(format!("EdDSA key: {e}")))?,
            ),
        };
        let mut claims = Map::new();
        for (name, json) in &resign.claims {
            let value: Json = serde_json::from_str(json)
                .map_err(|e| bad(format!("claim `{name}`: `{json}` is not JSON: {e}")))?;
            claims.insert(name.clone(), value);
        }
        let compiled = Self {
            token: CValue::compile(&resign.token, scope)?,
            algorithm,
            key,
            lifetime: resign.lifetime,
            claims,
        };
        // A key that cannot sign (an RSA key too small, a PEM of the wrong kind) fails now,
        // not once per client.
        compiled
            .resign("", 0)
            .map_err(|e| bad(format!("{:?} key cannot sign: {e}", compiled.algorithm)))?;
        Ok(compiled)
    }

    /// The token for one client: `token` evaluated and re-signed at `now` (Unix seconds).
    /// Text that is not a JWT is signed as a token with no claims of its own.
    pub(crate) fn token_for(&self, cx: Eval<'_>, now: u64) -> String {
        let mut recorded = String::new();
        self.token.write(cx, &mut recorded);
        self.resign(&recorded, now).unwrap_or(recorded)
    }

    /// Re-signs `recorded` at `now`.
    pub(crate) fn resign(
        &self,
        recorded: &str,
        now: u64,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let mut parts = recorded.split('.');
        let decode = |part: Option<&str>| -> Map<String, Json> {
            part.and_then(|p| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p.trim_end_matches('='))
                    .ok()
            })
            .and_then(|bytes| serde_json::from_slice::<Json>(&bytes).ok())
            .and_then(|json| match json {
                Json::Object(map) => Some(map),
                _ => None,
            })
            .unwrap_or_default()
        };
        let recorded_header = decode(parts.next());
        let mut claims = decode(parts.next());
        let number =
            |claims: &Map<String, Json>, name: &str| claims.get(name).and_then(Json::as_i64);
        let iat = number(&claims, "iat");
        let lifetime = self
            .lifetime
            .map(|d| d.as_secs() as i64)
            .unwrap_or_else(|| match (iat, number(&claims, "exp")) {
                (Some(iat), Some(exp)) if exp > iat => exp - iat,
                _ => DEFAULT_LIFETIME.as_secs() as i64,
            });
        let now = now as i64;
        if let (Some(iat), Some(nbf)) = (iat, number(&claims, "nbf")) {
            claims.insert("nbf".into(), Json::from(now - (iat - nbf)));
        }
        claims.insert("iat".into(), Json::from(now));
        claims.insert("exp".into(), Json::from(now + lifetime));
        for (name, value) in &self.claims {
            claims.insert(name.clone(), value.clone());
        }
        let mut header = Header::new(self.algorithm);
        let text = |name: &str| {
            recorded_header
                .get(name)
                .and_then(Json::as_str)
                .map(str::to_string)
        };
        header.kid = text("kid");
        if let Some(typ) = text("typ") {
            header.typ = Some(typ);
        }
        jsonwebtoken::encode(&header, &claims, &self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::Value;

    fn compiled(algorithm: JwtAlgorithm, key: &str, lifetime: Option<u64>) -> CompiledJwt {
        let mut scope = Scope::new(&[], &[]).unwrap();
        CompiledJwt::compile(
            &JwtResign {
                token: Value::text(""),
                algorithm,
                key: key.into(),
                lifetime: lifetime.map(Duration::from_secs),
                claims: vec![("role".into(), "\"admin\"".into())],
            },
            &mut scope,
        )
        .unwrap()
    }

    fn claims(token: &str) -> Map<String, Json> {
        let payload = token.split('.').nth(1).unwrap();
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn times_move_to_now_keeping_their_distances_and_claims_are_set() {
        let jwt = compiled(JwtAlgorithm::HS256, "secret", None);
        // iat 1000, nbf 990, exp 1600, sub "u1", kid "k1".
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"alg":"HS512","typ":"JWT","kid":"k1"}"#);
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"u1","iat":1000,"nbf":990,"exp":1600,"role":"user"}"#);
        let token = jwt.resign(&format!("{header}.{body}.sig"), 50_000).unwrap();
        let c = claims(&token);
        assert_eq!(c["iat"], 50_000);
        assert_eq!(c["nbf"], 49_990);
        assert_eq!(c["exp"], 50_600);
        assert_eq!(c["sub"], "u1");
        assert_eq!(c["role"], "admin");
        let head: Json = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(token.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(head["alg"], "HS256");
        assert_eq!(head["kid"], "k1");
        // A lifetime from the plan wins; text that is no JWT still becomes a token.
        let jwt = compiled(JwtAlgorithm::HS384, "secret", Some(60));
        let c = claims(&jwt.resign("not a token", 7).unwrap());
        assert_eq!((c["iat"].as_i64(), c["exp"].as_i64()), (Some(7), Some(67)));
    }

    #[test]
    fn a_bad_private_key_is_a_compile_error() {
        let mut scope = Scope::new(&[], &[]).unwrap();
        let e = CompiledJwt::compile(
            &JwtResign {
                token: Value::text(""),
                algorithm: JwtAlgorithm::RS256,
                key: "not a pem".into(),
                lifetime: None,
                claims: vec![],
            },
            &mut scope,
        )
        .unwrap_err();
        assert!(e.to_string().contains("RS256 key"), "{e}");
    }
}

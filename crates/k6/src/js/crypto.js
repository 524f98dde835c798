// k6/crypto: digests, HMACs and random bytes (natives on globalThis.__k6).
const N = globalThis.__k6;

// Text stays text (hashed as UTF-8); bytes become arrays of byte values for the native.
function input(value) {
  if (typeof value === "string") return value;
  if (value instanceof ArrayBuffer) return Array.from(new Uint8Array(value));
  if (ArrayBuffer.isView(value)) {
    return Array.from(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
  }
  if (Array.isArray(value)) return value;
  return String(value);
}

class Hasher {
  constructor(algorithm, key) {
    this.algorithm = String(algorithm);
    this.key = key === undefined ? null : input(key);
    this.parts = [];
  }
  update(value) {
    this.parts.push(input(value));
  }
  digest(encoding) {
    return N.digest(this.algorithm, this.key, this.parts, String(encoding));
  }
}

function hashed(algorithm, key, value, encoding) {
  const hasher = new Hasher(algorithm, key);
  hasher.update(value);
  return hasher.digest(encoding);
}

export function createHash(algorithm) { return new Hasher(algorithm); }
export function createHMAC(algorithm, key) {
  N.digest(String(algorithm), "", [], "hex"); // an unknown algorithm throws here, as in k6
  return new Hasher(algorithm, key);
}
export function hmac(algorithm, key, value, encoding) { return hashed(algorithm, key, value, encoding); }
export function md4(value, encoding) { return hashed("md4", undefined, value, encoding); }
export function md5(value, encoding) { return hashed("md5", undefined, value, encoding); }
export function sha1(value, encoding) { return hashed("sha1", undefined, value, encoding); }
export function sha256(value, encoding) { return hashed("sha256", undefined, value, encoding); }
export function sha384(value, encoding) { return hashed("sha384", undefined, value, encoding); }
export function sha512(value, encoding) { return hashed("sha512", undefined, value, encoding); }
export function sha512_224(value, encoding) { return hashed("sha512_224", undefined, value, encoding); }
export function sha512_256(value, encoding) { return hashed("sha512_256", undefined, value, encoding); }
export function ripemd160(value, encoding) { return hashed("ripemd160", undefined, value, encoding); }
export function randomBytes(size) { return N.randomBytes(Number(size)); }
export function hexEncode(value) { return N.hexEncode(input(value)); }

export default {
  createHash, createHMAC, hmac, md4, md5, sha1, sha256, sha384, sha512, sha512_224, sha512_256,
  ripemd160, randomBytes, hexEncode,
};

// k6/encoding: base64 (natives on globalThis.__k6).
const N = globalThis.__k6;

function alphabet(encoding) {
  return encoding === undefined || encoding === null ? "std" : String(encoding);
}

export function b64encode(input, encoding) {
  if (input instanceof ArrayBuffer) {
    return N.b64encodeBytes(Array.from(new Uint8Array(input)), alphabet(encoding));
  }
  if (ArrayBuffer.isView(input)) {
    const view = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    return N.b64encodeBytes(Array.from(view), alphabet(encoding));
  }
  return N.b64encodeText(String(input), alphabet(encoding));
}

export function b64decode(input, encoding, format) {
  return N.b64decode(String(input), alphabet(encoding), format === "s");
}

export default { b64encode, b64decode };

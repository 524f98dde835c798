// k6/data: SharedArray. The array is built once for the whole run (by the first context
// that declares it); each element is kept as JSON text and parsed when read, as k6 does, so
// a VU holds no copy of the data.
const N = globalThis.__k6;

function index(key) {
  if (typeof key !== "string" || key === "" || !/^(0|[1-9][0-9]*)$/.test(key)) return -1;
  return Number(key);
}

export class SharedArray {
  constructor(name, build) {
    if (typeof name !== "string" || name === "") {
      throw new TypeError("SharedArray needs a name (a non-empty string)");
    }
    let handle = N.sharedArray(name);
    if (handle < 0) {
      if (typeof build !== "function") {
        throw new TypeError("SharedArray needs a function that returns an array");
      }
      const data = build();
      if (!Array.isArray(data)) {
        throw new TypeError("only arrays can be made into SharedArray");
      }
      handle = N.keepSharedArray(name, data.map((e) => JSON.stringify(e === undefined ? null : e)));
    }
    const length = N.sharedLength(handle);
    const at = (i) => JSON.parse(N.sharedElement(handle, i));
    const readOnly = () => { throw new TypeError("SharedArray is read-only"); };
    return new Proxy([], {
      get(target, key) {
        if (key === "length") return length;
        const i = index(key);
        if (i >= 0) return i < length ? at(i) : undefined;
        if (key === Symbol.iterator) {
          return function* () { for (let j = 0; j < length; j++) yield at(j); };
        }
        return Array.prototype[key];
      },
      has(target, key) {
        if (key === "length") return true;
        const i = index(key);
        return i >= 0 ? i < length : key in Array.prototype;
      },
      set: readOnly,
      deleteProperty: readOnly,
      defineProperty: readOnly,
    });
  }
}

export default { SharedArray };

// Globals every k6 script sees: console (stderr, prefixed with the VU), open() (init context
// only, relative to the script) and __ENV; __VU and
// __ITER are set by the VU.
(function () {
  const N = globalThis.__k6;
  N.groupPath = "";
  function text(args) {
    return Array.prototype.map
      .call(args, (a) => (typeof a === "object" && a !== null ? JSON.stringify(a) : String(a)))
      .join(" ");
  }
  globalThis.console = {
    log: function () { N.log("INFO", text(arguments)); },
    info: function () { N.log("INFO", text(arguments)); },
    warn: function () { N.log("WARN", text(arguments)); },
    error: function () { N.log("ERRO", text(arguments)); },
    debug: function () { N.log("DEBU", text(arguments)); },
  };
  globalThis.open = function (path, mode) {
    return N.open(String(path), mode === undefined ? "" : String(mode));
  };
  globalThis.__VU = 0;
  globalThis.__ITER = 0;
})();

// The DSL as the script sees it: `definition`, the `session` object, `session.ds`, rows.
// Evaluated once before the user's script. It only RECORDS calls (verb, arguments copied at
// call time, the stack of the call for its location, nested steps); the Rust side turns the
// record into a plan and does all semantic checks. Per-client values (getVar, row.get,
// generate, lastHttpStatus) are marker strings "\uE000...\uE001" that survive concatenation.
// Called with the process environment (for `definition.env`) and the command line's
// `--define` pairs ([path, value]); returns the record.
(function (env, defines) {
  "use strict";
  var OPEN = "\uE000";
  var CLOSE = "\uE001";
  var NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
  var ir = { defs: [], loads: [], getVars: [], columns: [] };
  var loadHandles = new Map(); // file name and options -> handle object
  var handles = new WeakMap(); // handle object -> index into ir.loads
  var rowVars = new WeakMap(); // row object -> bound variable
  var generators = new Map(); // session.ds.define name -> generate arguments
  var current = null; // the session being recorded: { index, stack: [steps...] }
  var sessionCount = 0;
  var rowCount = 0;
  var genCount = 0;

  function dslError(message) {
    var error = new Error(message);
    error.barrageDsl = true;
    return error;
  }

  // Enough frames to reach the script's call through helper functions and nested blocks.
  Error.stackTraceLimit = 64;

  function here() {
    return new Error().stack;
  }

  // A deep copy taken at call time; DSL objects become marker strings.
  function snapshot(value, depth) {
    if (depth > 32) {
      throw dslError("a value is nested too deeply (is it cyclic?)");
    }
    if (value === null || typeof value !== "object") {
      return value;
    }
    if (handles.has(value)) {
      return OPEN + "d:" + handles.get(value) + CLOSE;
    }
    if (rowVars.has(value)) {
      return OPEN + "r:" + rowVars.get(value) + CLOSE;
    }
    if (Array.isArray(value)) {
      return value.map(function (item) {
        return snapshot(item, depth + 1);
      });
    }
    var copy = {};
    Object.keys(value).forEach(function (key) {
      copy[key] = snapshot(value[key], depth + 1);
    });
    return copy;
  }

  function call(verb, args, extra) {
    var record = { verb: verb, args: snapshot(args, 0), loc: here() };
    if (extra) {
      Object.keys(extra).forEach(function (key) {
        record[key] = extra[key];
      });
    }
    return record;
  }

  // An object whose unknown properties are errors that name them.
  function strict(name, verbs) {
    return new Proxy(verbs, {
      get: function (target, prop) {
        if (typeof prop === "symbol") {
          return undefined;
        }
        if (Object.prototype.hasOwnProperty.call(target, prop)) {
          return target[prop];
        }
        throw dslError(
          "unknown verb `" + name + "." + prop + "` (" + name + " has: " +
            Object.keys(target).join(", ") + ")"
        );
      },
      set: function (target, prop) {
        throw dslError("`" + name + "` cannot be changed (tried to set `" + String(prop) + "`)");
      },
    });
  }

  function inSession(verb) {
    if (current === null) {
      throw dslError(
        "`" + verb + "` can only be used while a session function runs (inside definition.session(...))"
      );
    }
    return current;
  }

  function steps(verb) {
    var session = inSession(verb);
    return session.stack[session.stack.length - 1];
  }

  function split(verb, args) {
    var list = Array.prototype.slice.call(args);
    var fn = list.pop();
    if (typeof fn !== "function") {
      throw dslError("`" + verb + "`: the last argument must be a function");
    }
    return { args: list, fn: fn };
  }

  function marker(body) {
    return OPEN + body + CLOSE;
  }

  var session;

  function block(verb, args) {
    var list = steps("session." + verb);
    var parts = split("session." + verb, args);
    var record = call(verb, parts.args, { steps: [] });
    list.push(record);
    current.stack.push(record.steps);
    try {
      parts.fn(session);
    } finally {
      current.stack.pop();
    }
  }

  function stepVerb(verb) {
    return function () {
      steps("session." + verb).push(call(verb, Array.prototype.slice.call(arguments)));
    };
  }

  function makeRow(variable, source) {
    var row = strict("row", {
      get: function (column) {
        var session = inSession("row.get");
        if (typeof column !== "string" || column.indexOf(CLOSE) >= 0) {
          throw dslError("`row.get`: the column must be given by name, as a string");
        }
        ir.columns.push({
          var: variable, source: source, column: column, loc: here(), session: session.index,
        });
        return marker("c:" + variable + ":" + column);
      },
    });
    rowVars.set(row, variable);
    return row;
  }

  var ds = strict("session.ds", {
    // Options are those of a StormForger structured data source: `delimiter` (one
    // character), `fields` (column names, for a file without a header row) and
    // `first_row_headers`.
    loadStructured: function (file, options) {
      inSession("session.ds.loadStructured");
      if (typeof file !== "string" || file === "") {
        throw dslError("`session.ds.loadStructured`: give the data file's name, as a string");
      }
      if (arguments.length > 2) {
        throw dslError("`session.ds.loadStructured` takes the file name and an options object");
      }
      var copied = snapshot(options === undefined ? null : options, 0);
      var key = file + "\u0000" + JSON.stringify(copied);
      if (loadHandles.has(key)) {
        return loadHandles.get(key);
      }
      var handle = Object.freeze({ file: file });
      handles.set(handle, ir.loads.length);
      ir.loads.push({ file: file, options: copied, loc: here() });
      loadHandles.set(key, handle);
      return handle;
    },
    pickFrom: function (handle) {
      var list = steps("session.ds.pickFrom");
      if (!handles.has(handle)) {
        throw dslError(
          "`session.ds.pickFrom`: the first argument must be a data source returned by session.ds.loadStructured"
        );
      }
      rowCount += 1;
      var variable = "_row" + rowCount;
      list.push(call("pickFrom", Array.prototype.slice.call(arguments), { var: variable }));
      return makeRow(variable, handles.get(handle));
    },
    getRawFile: function (file) {
      inSession("session.ds.getRawFile");
      if (typeof file !== "string" || file === "" || file.indexOf(CLOSE) >= 0) {
        throw dslError("`session.ds.getRawFile`: give the file's name, as a string");
      }
      return marker("f:" + file);
    },
    // A named generator: define(name, {type, ...options}) or define(name, type, options);
    // generateFrom(name) then draws from it like generate(type, options).
    define: function (name, spec, options) {
      inSession("session.ds.define");
      if (typeof name !== "string" || name === "") {
        throw dslError("`session.ds.define`: give the generator a name, as a string");
      }
      var kind = spec;
      var rest = options;
      if (spec !== null && typeof spec === "object") {
        kind = spec.type;
        rest = {};
        Object.keys(spec).forEach(function (key) {
          if (key !== "type") {
            rest[key] = spec[key];
          }
        });
      }
      if (typeof kind !== "string") {
        throw dslError("`session.ds.define`: name the generator's type (random_number, random_string, uuid)");
      }
      generators.set(name, rest === undefined ? [kind] : [kind, snapshot(rest, 0)]);
    },
    generateFrom: function (name) {
      inSession("session.ds.generateFrom");
      if (!generators.has(name)) {
        throw dslError(
          "`session.ds.generateFrom`: no generator named `" + String(name) +
            "` (define it first with session.ds.define)"
        );
      }
      return ds.generate.apply(null, generators.get(name));
    },
    generate: function () {
      var list = steps("session.ds.generate");
      genCount += 1;
      var variable = "_gen" + genCount;
      list.push(call("generate", Array.prototype.slice.call(arguments), { var: variable }));
      return marker("v:" + variable);
    },
  });

  session = strict("session", {
    get: stepVerb("get"),
    post: stepVerb("post"),
    put: stepVerb("put"),
    patch: stepVerb("patch"),
    delete: stepVerb("delete"),
    head: stepVerb("head"),
    options: stepVerb("options"),
    assert: stepVerb("assert"),
    check: stepVerb("check"),
    wait: stepVerb("wait"),
    waitUniform: stepVerb("waitUniform"),
    waitExp: stepVerb("waitExp"),
    times: function () {
      block("times", arguments);
    },
    if: function () {
      block("if", arguments);
    },
    forEver: function () {
      block("forEver", arguments);
    },
    getVar: function (name) {
      var active = inSession("session.getVar");
      if (typeof name !== "string" || !NAME.test(name)) {
        throw dslError(
          "`session.getVar`: `" + String(name) +
            "` is not a variable name (letters, digits and _, not starting with a digit)"
        );
      }
      ir.getVars.push({ name: name, loc: here(), session: active.index });
      return marker("v:" + name);
    },
    // StormForger's name for a value a response's extraction matched.
    matchedValue: function (name) {
      return session.getVar(name);
    },
    lastHttpStatus: function () {
      inSession("session.lastHttpStatus");
      return marker("s");
    },
    add: stepVerb("add"),
    lastResponse: function (timing) {
      inSession("session.lastResponse");
      if (typeof timing !== "string" || !NAME.test(timing)) {
        throw dslError("`session.lastResponse`: name the timing, like \"duration\" or \"waiting\"");
      }
      return marker("t:" + timing);
    },
    ds: ds,
  });

  var definition = strict("definition", {
    setTarget: function () {
      ir.defs.push(call("setTarget", Array.prototype.slice.call(arguments)));
    },
    addTarget: function () {
      ir.defs.push(call("addTarget", Array.prototype.slice.call(arguments)));
    },
    setTargets: function () {
      ir.defs.push(call("setTargets", Array.prototype.slice.call(arguments)));
    },
    setAuthentication: function () {
      ir.defs.push(call("setAuthentication", Array.prototype.slice.call(arguments)));
    },
    setSessionProbabilities: function () {
      ir.defs.push(call("setSessionProbabilities", Array.prototype.slice.call(arguments)));
    },
    // An environment value at plan time (undefined when unset); only what is read enters
    // the plan.
    env: function (name) {
      if (typeof name !== "string" || name === "") {
        throw dslError("`definition.env`: name the environment variable, as a string");
      }
      return Object.prototype.hasOwnProperty.call(env, name) ? env[name] : undefined;
    },
    setArrivalPhases: function () {
      ir.defs.push(call("setArrivalPhases", Array.prototype.slice.call(arguments)));
    },
    setVirtualUsers: function () {
      ir.defs.push(call("setVirtualUsers", Array.prototype.slice.call(arguments)));
    },
    setTestOptions: function () {
      ir.defs.push(call("setTestOptions", Array.prototype.slice.call(arguments)));
    },
    setThresholds: function () {
      ir.defs.push(call("setThresholds", Array.prototype.slice.call(arguments)));
    },
    metric: function () {
      ir.defs.push(call("metric", Array.prototype.slice.call(arguments)));
    },
    setSessionWeights: function () {
      ir.defs.push(call("setSessionWeights", Array.prototype.slice.call(arguments)));
    },
    session: function () {
      if (current !== null) {
        throw dslError("`definition.session` cannot be called inside a session function");
      }
      var parts = split("definition.session", arguments);
      var record = call("session", parts.args, { steps: [] });
      ir.defs.push(record);
      current = { index: sessionCount, stack: [record.steps] };
      sessionCount += 1;
      try {
        parts.fn(session);
      } finally {
        current = null;
      }
    },
  });

  Object.defineProperty(globalThis, "definition", {
    value: definition, writable: false, enumerable: false, configurable: false,
  });

  // `--define` as StormForger's CLI (esbuild) does it: `NAME=VALUE` replaces a global,
  // `defines.env=VALUE` a field under one. Scripts default them with `defines = {}` and
  // `defines.env || "staging"`, so each root is a global whose setter re-applies the
  // command line's fields to whatever object the script assigns.
  function applyDefines(root, object) {
    defines.forEach(function (pair) {
      var path = pair[0].split(".");
      if (path[0] !== root || path.length < 2 || object === null || typeof object !== "object") {
        return;
      }
      var at = object;
      for (var i = 1; i < path.length - 1; i++) {
        if (at[path[i]] === null || typeof at[path[i]] !== "object") {
          at[path[i]] = {};
        }
        at = at[path[i]];
      }
      at[path[path.length - 1]] = pair[1];
    });
    return object;
  }
  var roots = ["defines"];
  defines.forEach(function (pair) {
    var root = pair[0].split(".")[0];
    if (!NAME.test(root) || root === "definition") {
      throw dslError("--define " + pair[0] + ": the name must be a global identifier or a path under one (like defines.env)");
    }
    if (pair[0] === root) {
      var fixed = pair[1];
      Object.defineProperty(globalThis, root, {
        get: function () { return fixed; }, set: function () {}, configurable: true,
      });
    } else if (roots.indexOf(root) < 0) {
      roots.push(root);
    }
  });
  roots.forEach(function (root) {
    if (Object.prototype.hasOwnProperty.call(globalThis, root)) {
      return;
    }
    var current = applyDefines(root, {});
    Object.defineProperty(globalThis, root, {
      get: function () { return current; },
      set: function (value) { current = applyDefines(root, value); },
      // Configurable, so a script's own `let defines` / `const defines` still declares.
      configurable: true,
    });
  });
  return ir;
})

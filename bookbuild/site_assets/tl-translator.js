/* The book's translator, in the reader's browser (chapters 12 and 13 of the static site).
 *
 * transformer_lite.book.translate.translator_box_html writes the box (class "tl-translator"); this
 * script brings it to life. The box offers every shipped translator (a selector: the grammar one of
 * chapter 13, the one trained on real HSK sentences). On first use it loads, from the site itself:
 *   _static/tl/translator/ort.js          ONNX Runtime Web (npm), as a classic script
 *   _static/tl/translator/ort-wasm.js     its WebAssembly, gzip + base64
 *   _static/tl/translator/model-KEY.js    the selected translator exported to ONNX by `make book`
 *                                         (bookbuild/web_export.py), vocabularies, reading rules
 * and another model-KEY.js only when the reader selects that translator; and
 *   _static/tl/translator/explain-KEY.js  the explainer's graphs, only when window.tlExplainer.trace is first
 *                                         asked for a trace of translator KEY
 * Classic scripts, not fetch(): a page opened from disk (file://) may load scripts, not fetch files.
 * Every text it writes (status lines, captions) is looked up by its English in the box's settings.text, which
 * translator_box_html fills in the package's language (its catalog, transformer_lite/book/locale/zh_CN.po).
 *
 * Decoding follows transformer_lite.decoding line by line (greedy_decode, beam_search with the GNMT
 * length penalty), and the words are read by transformer_lite.book.translate.read_english's rules,
 * which arrive as data in model-KEY.js. tests/test_translator_web.py checks the page against Python.
 * User text is only ever written with textContent: nothing typed becomes markup.
 */
(function () {
  "use strict";
  if (window.tlTranslator) return;

  var root = document.documentElement.dataset.content_root || "";
  // The model files are on the site once, in the English edition's _static/ (the Chinese edition, under zh/,
  // has none: bookbuild/build_book.py's chinese_edition removes its copy), so a Chinese page looks one level up.
  var modelRoot = root + (/^zh\b/i.test(document.documentElement.lang || "") ? "../" : "");
  var runtime = null;      // the promise of ONNX Runtime Web, ready to run
  var models = {};         // key -> the promise of {M, ort, enc, dec}
  var loaded = {};         // key -> true once that translator is ready
  var queue = Promise.resolve();  // see enqueue
  var firstUse = null;

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  function fromBase64(text) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
    var bin = atob(text), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  async function gunzip(b64) {
    var stream = new Blob([fromBase64(b64)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  function loadRuntime(base) {
    if (runtime) return runtime;
    var p = runtime = (async function () {
      self.__tlOrtScript = base + "ort.js";  // what the bundle reads as import.meta.url
      await Promise.all([loadScript(base + "ort.js"), loadScript(base + "ort-wasm.js")]);
      var ort = self.ort;
      ort.env.logLevel = "error";
      ort.env.wasm.numThreads = 1;       // no SharedArrayBuffer needed: works on any static host and from disk
      ort.env.wasm.proxy = false;
      ort.env.wasm.wasmBinary = (await gunzip(self.tlOrtWasm)).buffer;
      return ort;
    })();
    p.catch(function () { if (runtime === p) runtime = null; });  // a failed load may be retried
    return p;
  }

  function baseOf(assets) { return new URL(modelRoot + assets, document.baseURI).href; }

  function load(assets, key) {  // the translator KEY (and the runtime, the first time), loaded once
    if (models[key]) return models[key];
    var base = baseOf(assets);
    var p = models[key] = (async function () {
      var ort = (await Promise.all([loadRuntime(base), loadScript(base + "model-" + key + ".js")]))[0];
      var M = (self.tlTranslatorModels || {})[key];
      if (!M) throw new Error("model-" + key + ".js holds no translator " + key);
      var opts = {executionProviders: ["wasm"], graphOptimizationLevel: "all"};
      var enc = await ort.InferenceSession.create(await gunzip(M.encoder), opts);
      var dec = await ort.InferenceSession.create(await gunzip(M.decoder), opts);
      M.srcIndex = new Map(M.src_vocab.map(function (w, i) { return [w, i]; }));
      if (M.reading.kind === "split") M.whitespace = new Set(M.reading.whitespace);
      else M.pattern = new RegExp(M.reading.pattern, M.reading.flags);
      var R = {M: M, ort: ort, enc: enc, dec: dec};
      // Warm up: WebAssembly runs its first calls slowly, while the browser compiles it fully.
      // One throw-away translation here keeps that delay out of the reader's later translations.
      await enqueue(function () { return details(R, M.src_vocab.slice(4, 10).join(" "), M.decoding.max_beam); });
      loaded[key] = true;
      return R;
    })();
    p.catch(function () { if (models[key] === p) delete models[key]; });  // a failed load may be retried
    return p;
  }

  // -- reading the input: transformer_lite.book.translate.read_english ------------------------
  function tokens(text, M) {
    var rule = M.reading, t, words = [];
    if (rule.kind === "pattern") {  // transformer_lite.book.real_data.tokenize_english
      t = text.normalize(rule.normalize);
      rule.replace.forEach(function (pair) { t = t.split(pair[0]).join(pair[1]); });
      return t.toLowerCase().match(M.pattern) || [];
    }
    t = text.toLowerCase();  // the grammar's rule: "?" apart, split on Python's whitespace
    for (var ch of rule.split_before) t = t.split(ch).join(" " + ch + " ");
    var cur = "";
    for (var c of t) {
      if (M.whitespace.has(c.codePointAt(0))) { if (cur) { words.push(cur); cur = ""; } }
      else cur += c;
    }
    if (cur) words.push(cur);
    return words;
  }

  function readEnglish(text, M) {
    var words = tokens(text, M);
    if (!words.length) throw said(new RangeError("text holds no words: type an English sentence"),
                                  "text holds no words: type an English sentence", {});
    if (words.length > M.config.max_len)
      throw said(new RangeError("text has " + words.length + " words; the model reads at most " + M.config.max_len),
                 "text has {n} words; the model reads at most {max_words}", {n: words.length, max_words: M.config.max_len});
    var ids = words.map(function (w) { return M.srcIndex.has(w) ? M.srcIndex.get(w) : M.special.unk; });
    var unknown = [];
    words.forEach(function (w) { if (!M.srcIndex.has(w) && unknown.indexOf(w) < 0) unknown.push(w); });
    return {words: words, ids: ids, unknown: unknown};
  }

  // -- the model ------------------------------------------------------------------------------
  function ids64(rows) {  // [[int]] (all rows the same length) -> int64 tensor data
    var n = rows[0].length, out = new BigInt64Array(rows.length * n);
    rows.forEach(function (r, b) { for (var j = 0; j < n; j++) out[b * n + j] = BigInt(r[j]); });
    return out;
  }

  function repeatRows(data, times) {  // (1, ...) float32 -> (times, ...)
    var out = new Float32Array(data.length * times);
    for (var k = 0; k < times; k++) out.set(data, k * data.length);
    return out;
  }

  async function encode(R, ids) {
    var src = new R.ort.Tensor("int64", ids64([ids]), [1, ids.length]);
    var out = await R.enc.run({src: src});
    return out.memory;  // (1, S, D)
  }

  async function decode(R, memory, ids, ys) {  // ys: K rows of equal length -> {logits (K,T,V), cross (K,L,H,T,S)}
    var K = ys.length, S = ids.length, D = memory.dims[2];
    var mem = K === 1 ? memory : new R.ort.Tensor("float32", repeatRows(memory.data, K), [K, S, D]);
    var src = new R.ort.Tensor("int64", ids64(ys.map(function () { return ids; })), [K, S]);
    var y = new R.ort.Tensor("int64", ids64(ys), [K, ys[0].length]);
    return R.dec.run({memory: mem, src: src, ys: y});
  }

  function untilEos(ids, eos) { var i = ids.indexOf(eos); return i < 0 ? ids : ids.slice(0, i + 1); }

  async function greedy(R, memory, ids) {  // transformer_lite.decoding.greedy_decode, one sentence
    var M = R.M, V = M.tgt_vocab.length, ys = [M.special.bos];
    for (var step = 0; step < M.decoding.max_new_tokens; step++) {
      var logits = (await decode(R, memory, ids, [ys])).logits.data, off = (ys.length - 1) * V, best = 0;
      for (var v = 1; v < V; v++) if (logits[off + v] > logits[off + best]) best = v;  // argmax: the first maximum
      ys.push(best);
      if (best === M.special.eos) break;
    }
    return ys.slice(1);
  }

  function lp(length, alpha) { return Math.pow((5 + length) / 6, alpha); }  // length_penalty_gnmt

  async function beamSearch(R, memory, ids, K, decodeRows) {  // transformer_lite.decoding.beam_search, one sentence
    // (decodeRows(ys) -> {logits (K,T,V)}: another decoder than the translator's, e.g. the explainer's with heads off)
    // K live hypotheses; a candidate ending with <eos> among the best K is set aside as finished (the K best are
    // kept); done once K have finished and the best live one, scored as if it ended now, is no better than the
    // worst of them; the best finished one by log P / lp(|y|) is returned
    var M = R.M, V = M.tgt_vocab.length, alpha = M.decoding.length_penalty, eos = M.special.eos;
    var ys = [], score = [], finished = [];
    var worst = function () {  // the index of the worst finished hypothesis (the first of equals)
      var w = 0;
      for (var i = 1; i < finished.length; i++) if (finished[i].score < finished[w].score) w = i;
      return w;
    };
    for (var k = 0; k < K; k++) { ys.push([M.special.bos]); score.push(k === 0 ? 0 : -Infinity); }
    for (var step = 0; step < M.decoding.max_new_tokens; step++) {
      var logits = (await (decodeRows ? decodeRows(ys) : decode(R, memory, ids, ys))).logits.data;
      var T = ys[0].length, lpNow = lp(step + 1, alpha);
      var cand = new Float64Array(K * V);
      for (k = 0; k < K; k++) {
        var off = (k * T + T - 1) * V, max = -Infinity, sum = 0, v;
        for (v = 0; v < V; v++) max = Math.max(max, logits[off + v]);
        for (v = 0; v < V; v++) sum += Math.exp(logits[off + v] - max);
        var logZ = max + Math.log(sum);
        for (v = 0; v < V; v++) cand[k * V + v] = score[k] + (logits[off + v] - logZ);
      }
      var order = [], n = 2 * K;  // the 2K best candidates, best first (ties: the lower index first)
      for (var i = 0; i < K * V; i++) {
        if (order.length === n && !(cand[i] > cand[order[n - 1]])) continue;
        var j = order.length === n ? n - 1 : order.length;
        order[j] = i;
        while (j > 0 && cand[order[j]] > cand[order[j - 1]]) { var tmp = order[j]; order[j] = order[j - 1]; order[j - 1] = tmp; j--; }
      }
      var nys = [], nscore = [];
      order.forEach(function (idx, r) {
        var parent = Math.floor(idx / V), token = idx % V;
        if (token === eos) {  // finished: set aside if among the best K; the K best are kept
          if (r >= K || !isFinite(cand[idx])) return;
          var s = cand[idx] / lpNow;
          if (finished.length === K && !(s > finished[worst()].score)) return;
          finished.push({score: s, ys: ys[parent].slice(1).concat([eos])});
          if (finished.length > K) finished.splice(worst(), 1);
        } else if (nys.length < K) {  // live: the best K that do not end with <eos>
          nys.push(ys[parent].concat([token]));
          nscore.push(cand[idx]);
        }
      });
      ys = nys; score = nscore;
      if (finished.length === K && finished[worst()].score >= score[0] / lpNow) break;
    }
    if (!finished.length) return ys[0].slice(1);  // none finished: the most probable live hypothesis
    var best = finished[0];
    finished.forEach(function (f) { if (f.score > best.score) best = f; });  // argmax: the first maximum
    return best.ys;
  }

  function topTokens(M, row, k) {  // one step's logits -> the k most probable [token, probability], best first
    var V = row.length, max = -Infinity, sum = 0, v;
    for (v = 0; v < V; v++) max = Math.max(max, row[v]);
    var p = new Float64Array(V);
    for (v = 0; v < V; v++) { p[v] = Math.exp(row[v] - max); sum += p[v]; }
    var idx = Array.from({length: V}, function (_, i) { return i; });
    idx.sort(function (a, c) { return p[c] - p[a] || a - c; });
    return idx.slice(0, k).map(function (i) { return [M.tgt_vocab[i], p[i] / sum]; });
  }

  async function details(R, text, K) {  // transformer_lite.book.translate.translation_details
    var M = R.M, t0 = performance.now();
    var read = readEnglish(text, M);
    var memory = await encode(R, read.ids);
    var g = await greedy(R, memory, read.ids);
    var b = await beamSearch(R, memory, read.ids, K);
    var out = await decode(R, memory, read.ids, [[M.special.bos].concat(g.slice(0, -1))]);  // teacher-forced
    var V = M.tgt_vocab.length, T = g.length, S = read.ids.length, L = out.cross.dims[1], H = out.cross.dims[2];
    var steps = [], cross = [];
    for (var t = 0; t < T; t++) steps.push(topTokens(M, out.logits.data.subarray(t * V, (t + 1) * V), M.decoding.top_k));
    var c = out.cross.data;
    for (var l = 0; l < L; l++) {
      var layer = [];
      for (var h = 0; h < H; h++) {
        var head = [];
        for (t = 0; t < T; t++) head.push(Array.from(c.subarray(((l * H + h) * T + t) * S, ((l * H + h) * T + t + 1) * S)));
        layer.push(head);
      }
      cross.push(layer);
    }
    var words = function (ids) { return untilEos(ids, M.special.eos).filter(function (i) { return i !== M.special.eos && i !== M.special.pad && i !== M.special.bos; }).map(function (i) { return M.tgt_vocab[i]; }).join(M.reading.join); };
    return {model: M.key, text: text, words: read.words, unknown: read.unknown, greedy: g, beam: b, beam_size: K,
            greedy_text: words(g), beam_text: words(b), steps: steps, cross: cross, ms: performance.now() - t0};
  }

  // -- the explainer: transformer_lite.book.explain.trace -------------------------------------
  // A trace is every intermediate of one sentence through the translator KEY. The sentence is read and
  // translated greedily by the box's own code (readEnglish, encode, greedy); the explainer's graphs
  // (explain-KEY.js: explain.record_encoder and record_decoder exported by bookbuild/web_export.py) then run it
  // once, teacher-forced on that translation, and every output is one entry of the trace, named by its path
  // ("encoder.0.attention_steps.q": explain.flat). No layer is computed here: only the top k of each step,
  // from the logits, as the box does. tests/test_translator_web.py holds it equal to Python's trace.
  var EXPLAINED = ["grammar", "real"];  // transformer_lite.book.translate.SHIPPED (the test compares)
  var explainers = {};                  // key -> the promise of {R, X}

  function pageAssets() {  // the box's assets folder, or the site's default on a page without a box
    var s = document.querySelector("script.tl-tr-settings");
    return s ? JSON.parse(s.textContent).assets : "_static/tl/translator/";
  }

  function loadExplainer(key) {  // the translator KEY and its explainer's graphs, loaded once, on first use
    if (explainers[key]) return explainers[key];
    var assets = pageAssets(), base = baseOf(assets);
    var p = explainers[key] = (async function () {
      var R = (await Promise.all([load(assets, key), loadScript(base + "explain-" + key + ".js")]))[0];
      var X = (self.tlExplainModels || {})[key];
      if (!X) throw new Error("explain-" + key + ".js holds no explainer " + key);
      var opts = {executionProviders: ["wasm"], graphOptimizationLevel: "all"};
      X.enc = await R.ort.InferenceSession.create(await gunzip(X.encoder), opts);
      X.dec = await R.ort.InferenceSession.create(await gunzip(X.decoder), opts);
      return {R: R, X: X};
    })();
    p.catch(function () { if (explainers[key] === p) delete explainers[key]; });  // a failed load may be retried
    return p;
  }

  function nested(tensor, scale) {  // an output tensor as nested arrays; floats rounded as explain._floats does
    var data = tensor.data, dims = tensor.dims, isFloat = tensor.type === "float32", at = 0;
    var value = function () { var v = data[at++]; return isFloat ? Math.round(v * scale) / scale : Number(v); };
    function build(d) {
      var out = new Array(dims[d]);
      for (var i = 0; i < dims[d]; i++) out[i] = d === dims.length - 1 ? value() : build(d + 1);
      return out;
    }
    return dims.length ? build(0) : value();
  }

  function unflatten(into, names, outputs, scale) {  // "encoder.0.norm1.input" -> into.encoder[0].norm1.input
    names.forEach(function (name) {
      var path = name.split(".").map(function (p) { return /^\d+$/.test(p) ? +p : p; }), obj = into;
      for (var i = 0; i < path.length - 1; i++) {
        if (obj[path[i]] === undefined) obj[path[i]] = typeof path[i + 1] === "number" ? [] : {};
        obj = obj[path[i]];
      }
      obj[path[path.length - 1]] = nested(outputs[name], scale);
    });
    return into;
  }

  var HEAD_PARTS = ["encoder", "self", "cross"];  // transformer_lite.book.explain.HEAD_PARTS
  var BEAM_SIZE = 4;  // transformer_lite.book.explain.BEAM_SIZE: the beam beside greedy in a trace

  function headMasks(C, off) {  // explain.head_masks: {part: (layers, H) float32 tensor data}, 0 for a head off
    var layers = {encoder: C.num_encoder_layers, self: C.num_decoder_layers, cross: C.num_decoder_layers}, out = {};
    HEAD_PARTS.forEach(function (part) { out[part] = new Float32Array(layers[part] * C.nhead).fill(1); });
    off.forEach(function (h) { out[h[0]][h[1] * C.nhead + h[2]] = 0; });
    return out;
  }

  function checkHeadsOff(C, off) {  // explain._check_heads_off's rule, as a RangeError
    if (!Array.isArray(off)) throw new RangeError("headsOff must be a list of [part, layer, head], got " + String(off));
    var layers = {encoder: C.num_encoder_layers, self: C.num_decoder_layers, cross: C.num_decoder_layers};
    off.forEach(function (h) {
      if (!Array.isArray(h) || h.length !== 3 || HEAD_PARTS.indexOf(h[0]) < 0 || !Number.isInteger(h[1]) ||
          !Number.isInteger(h[2]) || h[1] < 0 || h[1] >= layers[h[0]] || h[2] < 0 || h[2] >= C.nhead) {
        throw new RangeError("headsOff: " + JSON.stringify(h) + " is no head of this model: part one of " +
                             HEAD_PARTS.join(", ") + ", layer and head counted from 0");
      }
    });
  }

  async function explainTrace(E, text, key, k, off) {  // transformer_lite.book.explain.trace(key, text, k, off)
    var R = E.R, X = E.X, M = R.M, ort = R.ort, scale = Math.pow(10, X.decimals), C = X.config;
    var read = readEnglish(text, M);
    var S = read.ids.length, H = C.nhead, masks = headMasks(C, off);
    var src = new ort.Tensor("int64", ids64([read.ids]), [1, S]);
    var feed = {
      head_mask_encoder: new ort.Tensor("float32", masks.encoder, [C.num_encoder_layers, H]),
      head_mask_self: new ort.Tensor("float32", masks.self, [C.num_decoder_layers, H]),
      head_mask_cross: new ort.Tensor("float32", masks.cross, [C.num_decoder_layers, H])
    };
    var enc = await X.enc.run({src: src, head_mask_encoder: feed.head_mask_encoder});
    var mem = enc.memory, memory = new ort.Tensor("float32", mem.data, [1, S, mem.dims[1]]);
    var explainDecoder = function (ys) {
      return X.dec.run({memory: memory, src: src, ys: new ort.Tensor("int64", ids64([ys]), [1, ys.length]),
                        head_mask_self: feed.head_mask_self, head_mask_cross: feed.head_mask_cross});
    };
    var g, b;
    if (off.length) {  // the translation without those heads: greedy on the explainer's graphs, which switch them off
      var ys = [M.special.bos], V = M.tgt_vocab.length;
      for (var step = 0; step < M.decoding.max_new_tokens; step++) {
        var logits = (await explainDecoder(ys)).logits.data, at = (ys.length - 1) * V, best = 0;
        for (var v = 1; v < V; v++) if (logits[at + v] > logits[at + best]) best = v;  // argmax: the first maximum
        ys.push(best);
        if (best === M.special.eos) break;
      }
      g = ys.slice(1);
      b = await beamSearch(R, null, read.ids, BEAM_SIZE, async function (rows) {  // the graph reads one row at a time
        var out = new Float32Array(rows.length * rows[0].length * V);
        for (var r = 0; r < rows.length; r++) out.set((await explainDecoder(rows[r])).logits.data, r * rows[0].length * V);
        return {logits: {data: out}};
      });
    } else {  // every head on: the box's own greedy and beam lines, on the translator's (lighter) graphs
      var memory0 = await encode(R, read.ids);
      g = await greedy(R, memory0, read.ids);
      b = await beamSearch(R, memory0, read.ids, BEAM_SIZE);
    }
    b = untilEos(b, M.special.eos);
    var ysIn = [M.special.bos].concat(g.slice(0, -1));  // row t reads what comes before g[t]
    var T = ysIn.length;
    var dec = await explainDecoder(ysIn);
    var tok = function (i) { return M.tgt_vocab[i]; };
    var out = {key: key, text: text, k: k, config: X.config, src_tokens: read.words, src_ids: read.ids,
               unknown: read.unknown, tgt_tokens: g.map(tok), tgt_ids: g, beam_size: BEAM_SIZE,
               beam_tokens: b.map(tok), beam_ids: b, decoder_input_tokens: ysIn.map(tok)};
    if (off.length) out.heads_off = off.map(function (h) { return h.slice(); });  // as explain.trace: only when asked
    // the logits and the logit lens's (T, V) per layer are read as their top k, as explain.trace does
    var lens = X.dec.outputNames.filter(function (n) { return /^logit_lens\.\d+$/.test(n); });
    unflatten(out, X.enc.outputNames, enc, scale);
    unflatten(out, X.dec.outputNames.filter(function (n) { return n !== "logits" && lens.indexOf(n) < 0; }), dec, scale);
    var V = M.tgt_vocab.length;
    var topK = function (logits) {
      var steps = [];
      for (var t = 0; t < T; t++) {
        steps.push(topTokens(M, logits.subarray(t * V, (t + 1) * V), Math.min(k, V)).map(function (c) {
          return [c[0], Math.round(c[1] * scale) / scale];
        }));
      }
      return steps;
    };
    out.steps = topK(dec.logits.data);
    if (lens.length) out.logit_lens = lens.map(function (n) { return topK(dec[n].data); });
    return out;
  }

  window.tlExplainer = {
    keys: EXPLAINED.slice(),
    // every intermediate of translator KEY on TEXT (and the K most probable tokens of each step, by default
    // the box's), with the heads HEADSOFF ([[part, layer, head]], counted from 0) switched off: a Promise of the dict
    // transformer_lite.book.explain.trace(key, text, k, heads_off) returns
    trace: async function (text, key, k, headsOff) {
      if (typeof text !== "string") throw new TypeError("text must be a string (an English sentence), got " + typeof text);
      if (!text.trim()) throw new RangeError("text must hold an English sentence, got " + JSON.stringify(text));
      if (EXPLAINED.indexOf(key) < 0) throw new RangeError("key must be one of " + EXPLAINED.join(", ") + ", got " + String(key));
      if (k !== undefined && !(Number.isInteger(k) && k >= 1)) throw new RangeError("k must be a positive integer, got " + String(k));
      var E = await loadExplainer(key), off = headsOff === undefined || headsOff === null ? [] : headsOff;
      checkHeadsOff(E.X.config, off);
      return enqueue(function () {
        return explainTrace(E, text, key, k === undefined ? E.R.M.decoding.top_k : k, off);
      });
    }
  };

  // -- the page -------------------------------------------------------------------------------
  // Every text the reader sees, in the page's language: the English template is the key into the box's
  // settings.text (written by transformer_lite.book.translate.translator_box_html from the package's catalog);
  // {field}s are filled here. Without an entry the English is shown.
  function say(box, english, fields) {
    var text = (box && box.settings && box.settings.text && box.settings.text[english]) || english;
    return text.replace(/\{(\w+)\}/g, function (m, k) { return fields && k in fields ? String(fields[k]) : m; });
  }
  function said(error, english, fields) { error.tl = [english, fields]; return error; }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function heatColour(w) {  // white -> dark blue; the text colour keeps a contrast of at least 4.5
    var t = Math.max(0, Math.min(1, w)), rgb = [255 + (8 - 255) * t, 255 + (48 - 255) * t, 255 + (107 - 255) * t];
    var lin = rgb.map(function (x) { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    var lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    return {bg: "rgb(" + rgb.map(Math.round).join(",") + ")", fg: lum > 0.179 ? "#000" : "#fff"};
  }

  function renderHeatmap(box, r) {
    var M = box.R.M, layer = +box.q(".tl-tr-layer").value, head = +box.q(".tl-tr-head").value;
    var wrap = box.q(".tl-tr-heatmap");
    wrap.textContent = "";
    var table = el("table", {"class": "tl-tr-attn"});
    table.appendChild(el("caption", null, say(box, "Cross-attention of layer {layer}, head {head} while writing the " +
      "greedy translation: each row is one decoding step (the Chinese token it writes), each column an English " +
      "token; a row sums to 1.", {layer: layer + 1, head: head + 1})));
    var tr = el("tr");
    tr.appendChild(el("th", {scope: "col"}, say(box, "writes \u2193 / reads \u2192")));
    r.words.forEach(function (w) { tr.appendChild(el("th", {scope: "col"}, w)); });
    table.appendChild(tr);
    r.cross[layer][head].forEach(function (row, t) {
      var tr = el("tr");
      tr.appendChild(el("th", {scope: "row"}, M.tgt_vocab[r.greedy[t]]));
      row.forEach(function (w, s) {
        var c = heatColour(w), td = el("td", {title: M.tgt_vocab[r.greedy[t]] + " \u2190 " + r.words[s] + ": " + w.toFixed(3)}, w.toFixed(2));
        td.style.background = c.bg; td.style.color = c.fg;
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    wrap.appendChild(table);
  }

  function render(box, r) {
    var M = box.R.M, out = box.q(".tl-tr-result");
    out.textContent = "";
    box.result = r;
    var dl = el("dl", {"class": "tl-tr-translations"});
    var read = el("dd");
    r.words.forEach(function (w, i) {
      if (i) read.appendChild(document.createTextNode(" "));
      read.appendChild(r.unknown.indexOf(w) >= 0 ? el("mark", {title: say(box, "not in the vocabulary: read as <unk>")}, w) : document.createTextNode(w));
    });
    dl.appendChild(el("dt", null, say(box, "English, as the model reads it"))); dl.appendChild(read);
    dl.appendChild(el("dt", null, say(box, "greedy"))); dl.appendChild(el("dd", {"class": "tl-tr-greedy", lang: "zh-CN"}, r.greedy_text));
    dl.appendChild(el("dt", null, say(box, "beam search, k = {k}", {k: r.beam_size}))); dl.appendChild(el("dd", {"class": "tl-tr-beam-out", lang: "zh-CN"}, r.beam_text));
    out.appendChild(dl);
    var notes = [];
    if (r.unknown.length) notes.push(say(box, "Not in the model's vocabulary, read as <unk>: {words}.", {words: r.unknown.join(", ")}));
    else notes.push(say(box, "Every word is in the model's vocabulary."));
    if (/[\u3400-\u9fff]/.test(r.text)) notes.push(say(box, "This box reads English: the model translates English into Chinese, so Chinese typed here is unknown to it."));
    if (r.greedy[r.greedy.length - 1] !== M.special.eos) notes.push(say(box, "The greedy translation stopped after {n} tokens without <eos>.", {n: M.decoding.max_new_tokens}));
    notes.forEach(function (n) { out.appendChild(el("p", {"class": "tl-tr-note"}, n)); });
    out.appendChild(el("div", {"class": "tl-tr-heatmap"}));
    renderHeatmap(box, r);
    var steps = el("table", {"class": "tl-tr-steps"});
    steps.appendChild(el("caption", null, say(box, "Greedy decoding, step by step: the {k} most probable next tokens " +
      "and their probabilities (the first is the one it writes).", {k: M.decoding.top_k})));
    var head = el("tr");
    head.appendChild(el("th", {scope: "col"}, say(box, "step")));
    for (var k = 1; k <= M.decoding.top_k; k++) head.appendChild(el("th", {scope: "col"}, "#" + k));
    steps.appendChild(head);
    r.steps.forEach(function (row, t) {
      var tr = el("tr");
      tr.appendChild(el("th", {scope: "row"}, String(t + 1)));
      row.forEach(function (c) { tr.appendChild(el("td", null, c[0] + " " + c[1].toFixed(3))); });
      steps.appendChild(tr);
    });
    out.appendChild(steps);
  }

  function enqueue(work) {  // ONNX Runtime runs one session call at a time: translations wait their turn
    var job = queue.then(work);
    queue = job.catch(function () {});
    return job;
  }

  function setStatus(box, text) { box.q(".tl-tr-status").textContent = text; }

  function translate(box) {
    var text = box.q(".tl-tr-input").value, K = +box.q(".tl-tr-beam").value, key = box.key;
    var seq = ++box.seq;
    if (firstUse === null) firstUse = performance.now();
    if (!loaded[key]) {
      var m = box.settings.models[key];
      setStatus(box, say(box, "Loading the model ({label}) into your browser (about {mb} MB, once)\u2026",
        {label: m.label, mb: runtime ? m.model_mb : m.download_mb}));
    }
    return load(box.settings.assets, key).then(function (R) {
      return enqueue(function () {
        return seq === box.seq ? details(R, text, K) : null;  // the reader typed on: skip stale work
      }).then(function (r) { return r && {R: R, r: r}; });
    }).then(function (done) {
      if (done === null || seq !== box.seq) return;
      var r = done.r;
      box.R = done.R;
      render(box, r);
      if (box.firstReady === undefined) box.firstReady = performance.now() - firstUse;
      box.timings.push(r.ms);
      setStatus(box, say(box, "Translated in your browser in {ms} ms.", {ms: Math.round(r.ms)}));
      box.root.dataset.tlState = "ready";
    }, function (e) {
      if (seq !== box.seq) return;
      if (e instanceof RangeError) {  // the reader's input: say what is wrong, keep the page as it is
        box.q(".tl-tr-result").textContent = "";
        box.result = null;
        var message = e.tl ? say(box, e.tl[0], e.tl[1]) : e.message;
        setStatus(box, message.charAt(0).toUpperCase() + message.slice(1) + (/[\u3400-\u9fff]$/.test(message) ? "\u3002" : "."));
        box.root.dataset.tlState = "message";
      } else {
        setStatus(box, say(box, "The translator could not run here: {error}", {error: e.message}));
        box.root.dataset.tlState = "error";
      }
    });
  }

  function options(select, n, selected) {  // <option value="0">1</option> ... for n layers or heads
    select.textContent = "";
    for (var i = 0; i < n; i++) {
      var o = el("option", {value: String(i)}, String(i + 1));
      if (i === selected) o.selected = true;
      select.appendChild(o);
    }
  }

  function choose(box, key) {  // the reader selected another translator: its controls, then its translation
    var m = box.settings.models[key];
    box.key = key;
    box.root.dataset.tlModel = key;
    box.root.querySelectorAll("[data-tl-model]").forEach(function (e) {
      if (e !== box.root) e.hidden = e.dataset.tlModel !== key;
    });
    options(box.q(".tl-tr-layer"), m.layers, m.layers - 1);
    options(box.q(".tl-tr-head"), m.heads, 0);
    box.q(".tl-tr-input").value = m.examples[0];
    box.q(".tl-tr-result").textContent = "";
    box.result = null;
    box.R = null;
    translate(box);
  }

  function setup(rootEl) {
    var box = {root: rootEl, seq: 0, timings: [], q: function (s) { return rootEl.querySelector(s); }};
    box.settings = JSON.parse(rootEl.querySelector("script.tl-tr-settings").textContent);
    box.key = box.settings.model;
    rootEl.tlBox = box;
    var timer = null, input = box.q(".tl-tr-input");
    function soon() { clearTimeout(timer); timer = setTimeout(function () { translate(box); }, 60); }
    input.addEventListener("input", soon);
    input.addEventListener("keydown", function (e) { if (e.key === "Enter") { clearTimeout(timer); translate(box); } });
    input.addEventListener("focus", function () { if (!box.R) load(box.settings.assets, box.key).catch(function () {}); }, {once: true});
    box.q(".tl-tr-go").addEventListener("click", function () { translate(box); });
    box.q(".tl-tr-model").addEventListener("change", function () { clearTimeout(timer); choose(box, box.q(".tl-tr-model").value); });
    box.q(".tl-tr-beam").addEventListener("input", function () {
      box.q(".tl-tr-beam-value").textContent = box.q(".tl-tr-beam").value;
      if (box.R) soon();
    });
    [".tl-tr-layer", ".tl-tr-head"].forEach(function (s) {
      box.q(s).addEventListener("change", function () { if (box.result) renderHeatmap(box, box.result); });
    });
    rootEl.querySelectorAll(".tl-tr-example").forEach(function (b) {
      b.addEventListener("click", function () { input.value = b.textContent; translate(box); });
    });
    rootEl.dataset.tlState = "idle";
  }

  window.tlTranslator = {
    boxes: function () { return Array.from(document.querySelectorAll(".tl-translator")).map(function (e) { return e.tlBox; }); },
    // for the tests and the curious: the same computation the box shows, without the page
    details: function (text, K, key) {
      var settings = JSON.parse(document.querySelector("script.tl-tr-settings").textContent);
      return load(settings.assets, key || settings.model).then(function (R) {
        return enqueue(function () { return details(R, text, K); });
      });
    },
    // how translator KEY reads each of TEXTS: its tokens, or the message for text it cannot read
    read: function (texts, key) {
      var settings = JSON.parse(document.querySelector("script.tl-tr-settings").textContent);
      return load(settings.assets, key || settings.model).then(function (R) {
        return texts.map(function (t) {
          try { return readEnglish(t, R.M).words; } catch (e) { if (e instanceof RangeError) return e.message; throw e; }
        });
      });
    }
  };
  function init() { document.querySelectorAll(".tl-translator").forEach(setup); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();

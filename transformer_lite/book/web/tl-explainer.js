/* The explainer's view: the reader's sentence through a shipped translator, one step at a time (book/explainer.md).
 *
 * transformer_lite.book.explain_view.explainer_html writes the view (class "tl-explainer"): a sentence box, the
 * translator, a start button and the step control, with its settings (the texts in the page's language, the
 * examples, the chapters' addresses). Nothing heavy loads with the page. When the reader presses "Start" (or opens
 * the page with ?s=<sentence>&step=<id>&model=<key>, a link that asks for a step), this script loads
 * tl-translator.js from its own folder and asks window.tlExplainer.trace for the sentence's trace: every
 * intermediate of the translator, computed by ONNX Runtime Web and equal to transformer_lite.book.explain.trace
 * (tests/test_translator_web.py). Each step below draws part of that dict; none computes a layer, only norms,
 * means and the share of zeros of what the trace holds.
 *
 * In Jupyter and Colab (transformer_lite.book.explain_view.show) the same script draws a trace the kernel computed:
 * the settings hold it ("trace"), the script and its style sit inline in the cell's output, and nothing loads or
 * runs a model here. Such a view has no sentence box and leaves the notebook's address alone. Each output runs its
 * own copy of this script: a later copy only sets up its own view (window.tlExplainerView.adopt).
 *
 * The steps and their ids are those of transformer_lite.book.explain_view's docstring. The heatmaps are SVG drawn
 * here, with colour scales that are colour-blind safe in either colour mode (the theme's html[data-theme]), each
 * with its numbers in a table under a fold (for screen readers, and for the curious). Text typed by the reader is
 * only ever written with textContent.
 */
(function () {
  "use strict";
  var me = document.currentScript;
  if (window.tlExplainerView) { window.tlExplainerView.adopt(me); return; }
  var BASE = me && me.src ? me.src.replace(/[^\/]*$/, "") : "";  // this script's folder: _static/tl/
  var NS = "http://www.w3.org/2000/svg";
  var translator = null;  // the promise of window.tlExplainer

  function loadTranslator() {  // tl-translator.js, once: it defines window.tlExplainer and loads the models on use
    if (window.tlExplainer) return Promise.resolve(window.tlExplainer);
    if (translator) return translator;
    var p = translator = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = BASE + "tl-translator.js";
      s.onload = function () {
        if (window.tlExplainer) resolve(window.tlExplainer);
        else reject(new Error("tl-translator.js defines no tlExplainer"));
      };
      s.onerror = function () { reject(new Error("could not load " + s.src)); };
      document.head.appendChild(s);
    });
    p.catch(function () { if (translator === p) translator = null; });
    return p;
  }

  // -- text: the English template is the key into the settings' texts, in the page's language -------------------
  function say(v, english, fields) {
    var text = (v.settings.text && v.settings.text[english]) || english;
    return text.replace(/\{(\w+)\}/g, function (m, k) { return fields && k in fields ? String(fields[k]) : m; });
  }

  function N(english) { return english; }  // marks a text that say() looks up later (the tests list them)

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function para(text, cls) { return el("p", cls ? {"class": cls} : null, text); }

  // A token is English or Chinese whatever the page's language: its element says which, for screen readers
  function langOf(text) { return /[\u3400-\u9fff]/.test(text) ? "zh-CN" : /[A-Za-z]/.test(text) ? "en" : null; }
  function token(e) { var l = langOf(e.textContent); if (l) e.setAttribute("lang", l); return e; }
  function tokenEl(tag, attrs, text) { return token(el(tag, attrs, text)); }
  function withTokens(text, words) {  // a sentence that ends with tokens: "... tokens: 我们 今天"
    var p = para(text);
    p.appendChild(tokenEl("span", null, words));
    return p;
  }

  // -- numbers --------------------------------------------------------------------------------------------------
  function norm(row) { var s = 0; for (var i = 0; i < row.length; i++) s += row[i] * row[i]; return Math.sqrt(s); }
  function mean(row) { var s = 0; for (var i = 0; i < row.length; i++) s += row[i]; return s / row.length; }
  function std(row) {  // the biased standard deviation, as LayerNorm's
    var m = mean(row), s = 0;
    for (var i = 0; i < row.length; i++) s += (row[i] - m) * (row[i] - m);
    return Math.sqrt(s / row.length);
  }
  function fmt(x, d) { return (x < 0 ? "\u2212" : "") + Math.abs(x).toFixed(d === undefined ? 2 : d); }
  function concatHeads(heads) {  // (H, S, D_h) -> (S, H * D_h): head h's block is columns h D_h ... (h + 1) D_h - 1
    return heads[0].map(function (_, s) {
      return [].concat.apply([], heads.map(function (h) { return h[s]; }));
    });
  }
  function meanRows(mats) {  // the element-wise mean of equal matrices
    return mats[0].map(function (row, i) {
      return row.map(function (_, j) { return mean(mats.map(function (m) { return m[i][j]; })); });
    });
  }

  // -- colours: colour-blind safe scales, one set per colour mode -------------------------------------------------
  function dark() {  // the book's theme (html[data-theme]) or JupyterLab's (body[data-jp-theme-light])
    return document.documentElement.dataset.theme === "dark" ||
      !!(document.body && document.body.dataset.jpThemeLight === "false");
  }
  var SCALES = {  // stops from low to high
    seq: {light: [[255, 255, 255], [158, 202, 225], [66, 146, 198], [8, 69, 148], [8, 29, 88]],  // Blues
          dark: [[30, 33, 48], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]]},     // viridis
    div: {light: [[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]],  // RdBu
          dark: [[67, 147, 195], [38, 78, 118], [40, 40, 46], [140, 60, 40], [244, 165, 130]]}
  };
  function colourAt(kind, t) {  // t in [0, 1]
    var stops = SCALES[kind][dark() ? "dark" : "light"], x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
    var i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
    return stops[i].map(function (a, c) { return Math.round(a + (stops[i + 1][c] - a) * f); });
  }
  function ink(rgb) {  // black or white text on this colour, whichever contrasts more
    var lin = rgb.map(function (x) { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    var lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    return lum > 0.179 ? "#000" : "#fff";
  }
  function css(rgb) { return "rgb(" + rgb.join(",") + ")"; }
  function textWidth(s) {  // a label's width in px at 12 px: CJK characters are twice as wide as Latin ones
    var w = 0;
    for (var ch of String(s)) w += /[\u2e80-\u9fff\uff00-\uffef]/.test(ch) ? 12 : 7;
    return w;
  }

  // -- a heatmap: an SVG, and its numbers in a table under a fold -------------------------------------------------
  // o: {m: rows of numbers, rows, cols: labels (cols null: numbered dimensions), kind: "seq" (from 0) or "div"
  //     (signed, 0 in the middle), caption, numbers: write each value in its cell, blocked: rows of 0/1 (1 = the
  //     cell is masked: grey, "-inf"), groups: a line every this many columns (the heads' blocks), lang: of the
  //     row labels}
  function heatmap(v, o) {
    var m = o.m, R = m.length, C = m[0].length, numbers = o.numbers === undefined ? C <= 14 && R <= 24 : o.numbers;
    var cw = numbers ? 44 : Math.max(3, Math.min(22, Math.floor(600 / C))), ch = numbers ? 24 : Math.max(14, Math.min(22, cw));
    var rowW = 12 + Math.min(160, Math.max.apply(null, o.rows.map(textWidth)));
    var top = o.cols ? 16 + Math.min(110, 0.75 * Math.max.apply(null, o.cols.map(textWidth))) : 20;
    var width = rowW + C * cw + 6, height = top + R * ch + 4;
    var lo = 0, hi = 0;
    m.forEach(function (row, i) {
      row.forEach(function (x, j) { if (!(o.blocked && o.blocked[i][j])) { lo = Math.min(lo, x); hi = Math.max(hi, x); } });
    });
    var span = o.kind === "div" ? Math.max(Math.abs(lo), Math.abs(hi)) || 1 : (hi || 1);
    var svg = svgEl("svg", {viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img",
                            "aria-label": o.caption, "class": "tlx-heatmap"});
    o.rows.forEach(function (r, i) {
      svg.appendChild(token(svgEl("text", {x: rowW - 6, y: top + i * ch + ch / 2 + 4, "text-anchor": "end",
                                           "class": "tlx-label"}, r)));
    });
    if (o.cols) {
      o.cols.forEach(function (c, j) {
        var x = rowW + j * cw + cw / 2, y = top - 6;
        svg.appendChild(token(svgEl("text", {x: x, y: y, transform: "rotate(-40 " + x + " " + y + ")",
                                             "class": "tlx-label"}, c)));
      });
    } else {
      var every = C <= 16 ? 4 : C <= 64 ? 16 : 32;
      for (var j = 0; j < C; j += every) {
        svg.appendChild(svgEl("text", {x: rowW + j * cw, y: top - 6, "class": "tlx-label"}, String(j)));
      }
    }
    m.forEach(function (row, i) {
      row.forEach(function (x, j) {
        var blocked = o.blocked && o.blocked[i][j];
        var t = o.kind === "div" ? (x / span + 1) / 2 : x / span;
        var rgb = blocked ? (dark() ? [70, 70, 70] : [200, 200, 200]) : colourAt(o.kind, t);
        var rect = svgEl("rect", {x: rowW + j * cw, y: top + i * ch, width: cw, height: ch, fill: css(rgb)});
        rect.appendChild(svgEl("title", null, o.rows[i] + ", " + (o.cols ? o.cols[j] : j) + ": " +
                                            (blocked ? "\u2212\u221e" : fmt(x, 3))));
        svg.appendChild(rect);
        if (numbers) {
          svg.appendChild(svgEl("text", {x: rowW + j * cw + cw / 2, y: top + i * ch + ch / 2 + 4, "text-anchor": "middle",
                                         fill: ink(rgb), "class": "tlx-num"}, blocked ? "\u2212\u221e" : fmt(x)));
        }
      });
    });
    if (o.groups) {
      for (var g = o.groups; g < C; g += o.groups) {
        svg.appendChild(svgEl("line", {x1: rowW + g * cw, x2: rowW + g * cw, y1: top - 2, y2: top + R * ch + 2,
                                       "class": "tlx-group"}));
      }
    }
    var figure = el("figure", {"class": "tlx-figure"});
    figure.appendChild(el("figcaption", null, o.caption));
    figure.appendChild(svg);  // scaled down to the column when wider (tl-explainer.css): nothing to scroll
    figure.appendChild(numbersTable(v, o));
    return figure;
  }

  function numbersTable(v, o) {  // the heatmap's values, 3 decimals, in a table a screen reader can walk
    var details = el("details", {"class": "tlx-numbers"});
    details.appendChild(el("summary", null, say(v, "The numbers")));
    var wrap = el("div", {"class": "tlx-scroll", tabindex: "0", role: "region", "aria-label": o.caption});
    var table = el("table");
    table.appendChild(el("caption", null, o.caption));
    var head = el("tr");
    head.appendChild(el("th", {scope: "col"}, ""));
    o.m[0].forEach(function (_, j) { head.appendChild(tokenEl("th", {scope: "col"}, o.cols ? o.cols[j] : String(j))); });
    table.appendChild(head);
    o.m.forEach(function (row, i) {
      var tr = el("tr");
      tr.appendChild(tokenEl("th", {scope: "row"}, o.rows[i]));
      row.forEach(function (x, j) {
        tr.appendChild(el("td", null, o.blocked && o.blocked[i][j] ? "\u2212\u221e" : fmt(x, 3)));
      });
      table.appendChild(tr);
    });
    wrap.appendChild(table);
    details.appendChild(wrap);
    return details;
  }

  function valueTable(v, caption, head, rows) {  // a small table of labelled numbers: rows of [label, n, n, ...]
    var wrap = el("div", {"class": "tlx-scroll tlx-values", tabindex: "0", role: "region", "aria-label": caption});
    var table = el("table");
    table.appendChild(el("caption", null, caption));
    var tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", {scope: "col"}, h)); });
    table.appendChild(tr);
    rows.forEach(function (r) {
      var tr = el("tr");
      r.forEach(function (c, i) {
        tr.appendChild(i === 0 ? tokenEl("th", {scope: "row"}, c) : typeof c === "number" ? el("td", null, fmt(c))
                                 : tokenEl("td", null, c));
      });
      table.appendChild(tr);
    });
    wrap.appendChild(table);
    return wrap;
  }

  // chapter 5's Add & Norm: the norms of each token's vector before and after, and LayerNorm's mean and spread
  function addNorm(v, T, tokens, x, sub, summed, out) {
    var frag = document.createDocumentFragment(), mu = say(v, "mean"), sd = say(v, "standard deviation");
    var text = say(v, "Add & Norm: the sub-layer's output is added to its input (the residual), then LayerNorm brings " +
      "each row back to mean 0 and standard deviation 1 (before its \u03b3 and \u03b2). The norms of each token's vector:");
    frag.appendChild(para(text));
    frag.appendChild(valueTable(v, say(v, "norm"), [say(v, "token"), "\u2016x\u2016", "\u2016Sublayer(x)\u2016",
                                          "\u2016x + Sublayer(x)\u2016", "\u2016LayerNorm(\u2026)\u2016",
                                          mu + " (x + Sublayer(x))", sd + " (x + Sublayer(x))",
                                          mu + " (LayerNorm)", sd + " (LayerNorm)"],
      tokens.map(function (tok, i) {
        return [tok, norm(x[i]), norm(sub[i]), norm(summed[i]), norm(out[i]), mean(summed[i]), std(summed[i]),
                mean(out[i]), std(out[i])];
      })));
    return frag;
  }

  function headsSideBySide(v, weights, rows, cols, blocked) {
    var wrap = el("div", {"class": "tlx-heads"});
    weights.forEach(function (w, h) {
      wrap.appendChild(heatmap(v, {m: w, rows: rows, cols: cols, kind: "seq", numbers: false, blocked: blocked,
                                   caption: say(v, "head") + " " + (h + 1)}));
    });
    return wrap;
  }

  function alignment(v, w, src, tgt) {  // cross-attention as lines from each Chinese token to the English it reads
    var S = src.length, T = tgt.length, gap = 70, wS = Math.max(60, Math.max.apply(null, src.map(textWidth)) + 14);
    var wT = Math.max(40, Math.max.apply(null, tgt.map(textWidth)) + 14);
    var width = Math.max(S * wS, T * wT) + 20, height = 40 + gap + 30;
    var xs = function (s) { return 10 + (s + 0.5) * (width - 20) / S; };
    var xt = function (t) { return 10 + (t + 0.5) * (width - 20) / T; };
    var svg = svgEl("svg", {viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img",
                            "aria-label": say(v, "Each row of the table is one decoding step: the token it writes, " +
                                                 "and how much it reads from each English token."),
                            "class": "tlx-align"});
    var colour = css(colourAt("seq", 0.85));
    w.forEach(function (row, t) {
      row.forEach(function (a, s) {
        if (a < 0.02) return;
        svg.appendChild(svgEl("line", {x1: xt(t), y1: 40 + gap, x2: xs(s), y2: 28, stroke: colour,
                                       "stroke-width": (0.5 + 5 * a).toFixed(2), "stroke-opacity": Math.min(1, 0.15 + a).toFixed(2)}));
      });
    });
    src.forEach(function (s, i) {
      svg.appendChild(token(svgEl("text", {x: xs(i), y: 18, "text-anchor": "middle", "class": "tlx-label"}, s)));
    });
    tgt.forEach(function (s, i) {
      svg.appendChild(token(svgEl("text", {x: xt(i), y: 40 + gap + 22, "text-anchor": "middle", "class": "tlx-label"}, s)));
    });
    return svg;
  }

  // -- the steps ------------------------------------------------------------------------------------------------
  // Each: {id, title: [template, fields], chapters: [n], heads: uses the head selector, draw(v, T, head) -> node}
  function stepsOf(T) {
    var C = T.config, out = [];
    out.push({id: "tokens", title: [N("Tokens")], chapters: [1], draw: drawTokens});
    out.push({id: "embedding", title: [N("Embedding and positions")], chapters: [1, 2], draw: drawEmbedding});
    for (var l = 0; l < C.num_encoder_layers; l++) {
      var f = {layer: l + 1};
      [["qkv", N("Encoder layer {layer}: Q, K and V"), [3], true, drawQKV],
       ["scores", N("Encoder layer {layer}: scores"), [3], true, drawScores],
       ["scaled", N("Encoder layer {layer}: scaled scores"), [3], true, drawScaled],
       ["mask", N("Encoder layer {layer}: the mask"), [3, 7], true, drawEncoderMask],
       ["softmax", N("Encoder layer {layer}: softmax"), [3], true, drawSoftmax],
       ["weighted", N("Encoder layer {layer}: weighted sum of V"), [3], true, drawWeighted],
       ["heads", N("Encoder layer {layer}: the heads side by side"), [4], false, drawHeads],
       ["concat", N("Encoder layer {layer}: concatenation and W_O"), [4], false, drawConcat],
       ["norm1", N("Encoder layer {layer}: residual and LayerNorm"), [5], false, drawEncoderNorm],
       ["ffn", N("Encoder layer {layer}: feed-forward network"), [5], false, drawEncoderFFN]
      ].forEach(function (s) {
        out.push({id: "enc" + (l + 1) + "-" + s[0], title: [s[1], f], chapters: s[2], heads: s[3], layer: l, draw: s[4]});
      });
    }
    out.push({id: "memory", title: [N("The memory")], chapters: [8, 9], draw: drawMemory});
    for (l = 0; l < C.num_decoder_layers; l++) {
      f = {layer: l + 1};
      [["causal", N("Decoder layer {layer}: the causal mask"), [7], true, drawCausal],
       ["self", N("Decoder layer {layer}: masked self-attention"), [9], false, drawSelf],
       ["cross", N("Decoder layer {layer}: cross-attention"), [9], true, drawCross],
       ["ffn", N("Decoder layer {layer}: feed-forward network"), [9, 5], false, drawDecoderFFN]
      ].forEach(function (s) {
        out.push({id: "dec" + (l + 1) + "-" + s[0], title: [s[1], f], chapters: s[2], heads: s[3], layer: l, draw: s[4]});
      });
    }
    if (T.logit_lens) out.push({id: "lens", title: [N("The logit lens")], chapters: [9, 12], draw: drawLens});
    out.push({id: "next", title: [N("The next token")], chapters: [12], draw: drawNext});
    return out;
  }

  function drawTokens(v, T) {
    var frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "The model reads {n} tokens: your sentence in lower case, cut into words (and " +
      "punctuation), each looked up in its English vocabulary; a word it does not know becomes <unk>. A token's id " +
      "is its row in the embedding matrix.", {n: T.src_tokens.length})));
    var list = el("ol", {"class": "tlx-tokens"});
    T.src_tokens.forEach(function (w, i) {
      var li = el("li");
      li.appendChild(tokenEl(T.unknown.indexOf(w) >= 0 ? "mark" : "span", {"class": "tlx-token"}, w));
      li.appendChild(el("span", {"class": "tlx-id"}, say(v, "id") + " " + T.src_ids[i]));
      list.appendChild(li);
    });
    frag.appendChild(list);
    if (T.unknown.length) frag.appendChild(para(say(v, "Unknown to the model, read as <unk>: {words}.", {words: T.unknown.join(", ")})));
    frag.appendChild(withTokens(say(v, "Its greedy translation has {t} tokens: {words}", {t: T.tgt_tokens.length, words: ""}),
                                T.tgt_tokens.join(" ")));
    return frag;
  }

  function drawEmbedding(v, T) {
    var E = T.embedding, frag = document.createDocumentFragment(), toks = T.src_tokens;
    frag.appendChild(para(say(v, "Each token's row of the embedding matrix is multiplied by \u221ad_model = {scale}, " +
      "then the positional encoding of its position is added. The sum, one row of {d} numbers per token, is what the " +
      "first encoder layer reads.", {scale: fmt(T.config.embedding_scale, 3), d: T.config.d_model})));
    [["token", N("scaled embedding")], ["position", N("positional encoding")],
     ["sum", N("their sum: the encoder's input")]]
      .forEach(function (p) {
        frag.appendChild(heatmap(v, {m: E[p[0]], rows: toks, cols: null, kind: "div", caption: say(v, p[1])}));
      });
    var bars = function (text) { return "\u2016" + say(v, text) + "\u2016"; };
    frag.appendChild(valueTable(v, say(v, "norm"), [say(v, "token"), bars(N("scaled embedding")),
                                                    bars(N("positional encoding")), bars(N("their sum: the encoder's input"))],
      toks.map(function (t, i) { return [t, norm(E.token[i]), norm(E.position[i]), norm(E.sum[i])]; })));
    return frag;
  }

  function enc(T, step) { return T.encoder[step.layer]; }
  function layerInput(T, step) {  // what the encoder layer reads: the embedding's sum, or the previous layer's output
    return step.layer === 0 ? T.embedding.sum : T.encoder[step.layer - 1].norm2.output;
  }
  function decoderInput(T, step) {
    return step.layer === 0 ? T.target_embedding.sum : T.decoder[step.layer - 1].norm3.output;
  }

  function drawQKV(v, T, h, step) {
    var A = enc(T, step).attention_steps, frag = document.createDocumentFragment(), toks = T.src_tokens;
    frag.appendChild(para(say(v, "Step 1 of attention: the layer's input x (one row per token) is multiplied by W_Q, " +
      "W_K and W_V and split into {h} heads of {dh} numbers. Head {head}'s queries, keys and values:",
      {h: T.config.nhead, dh: T.config.head_dim, head: h + 1})));
    ["q", "k", "v"].forEach(function (name) {
      frag.appendChild(heatmap(v, {m: A[name][h], rows: toks, cols: null, kind: "div", numbers: false,
                                   caption: name.toUpperCase() + " \u00b7 " + say(v, "head") + " " + (h + 1)}));
    });
    return frag;
  }

  function square(v, T, m, caption, kind, blocked, tokens) {
    tokens = tokens || T.src_tokens;
    return heatmap(v, {m: m, rows: tokens, cols: tokens, kind: kind, caption: caption, blocked: blocked});
  }

  function drawScores(v, T, h, step) {
    var A = enc(T, step).attention_steps, frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "Step 2: each query is compared with every key by a dot product, q\u00b7k. Row = " +
      "query token, column = key token (head {head}).", {head: h + 1})));
    frag.appendChild(square(v, T, A.scores[h], "QK\u1d40 \u00b7 " + say(v, "head") + " " + (h + 1), "div"));
    return frag;
  }

  function drawScaled(v, T, h, step) {
    var A = enc(T, step).attention_steps, frag = document.createDocumentFragment(), dh = T.config.head_dim;
    frag.appendChild(para(say(v, "Step 3: the scores are divided by \u221ad_k = \u221a{dh} = {root}, so that their " +
      "spread does not grow with the width of a head (head {head}).", {dh: dh, root: fmt(Math.sqrt(dh), 3), head: h + 1})));
    frag.appendChild(square(v, T, A.scaled[h], "QK\u1d40/\u221ad_k \u00b7 " + say(v, "head") + " " + (h + 1), "div"));
    return frag;
  }

  function drawEncoderMask(v, T, h, step) {
    var A = enc(T, step).attention_steps, frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "Step 4: the mask. One English sentence has no padding, so the encoder blocks no " +
      "key: every token may read every token, before and after it.")));
    frag.appendChild(square(v, T, A.scaled[h], "QK\u1d40/\u221ad_k + mask \u00b7 " + say(v, "head") + " " + (h + 1),
                            "div", A.mask));
    return frag;
  }

  function drawSoftmax(v, T, h, step) {
    var E = enc(T, step), frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "Step 5: softmax along each row turns the scaled scores into weights that sum to 1: " +
      "how much each query token reads from each key token (head {head}).", {head: h + 1})));
    frag.appendChild(square(v, T, E.attention[h], "softmax \u00b7 " + say(v, "head") + " " + (h + 1), "seq"));
    return frag;
  }

  function drawWeighted(v, T, h, step) {
    var A = enc(T, step).attention_steps, frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "Step 6: each token's output is the weighted sum of the value vectors, weights " +
      "times V (head {head}).", {head: h + 1})));
    frag.appendChild(heatmap(v, {m: A.heads[h], rows: T.src_tokens, cols: null, kind: "div", numbers: false,
                                 caption: "softmax(QK\u1d40/\u221ad_k) V \u00b7 " + say(v, "head") + " " + (h + 1)}));
    return frag;
  }

  function drawHeads(v, T, h, step) {
    var frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "The {h} heads of this layer, each with its own W_Q, W_K and W_V, attend in their " +
      "own ways: each square is one head's weights.", {h: T.config.nhead})));
    frag.appendChild(headsSideBySide(v, enc(T, step).attention, T.src_tokens, T.src_tokens));
    return frag;
  }

  function drawConcat(v, T, h, step) {
    var A = enc(T, step).attention_steps, frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "The {h} heads' outputs are concatenated back to {d} numbers per token (one block " +
      "per head), then multiplied by W_O: the layer's attention output.", {h: T.config.nhead, d: T.config.d_model})));
    frag.appendChild(heatmap(v, {m: concatHeads(A.heads), rows: T.src_tokens, cols: null, kind: "div",
                                 groups: T.config.head_dim, caption: say(v, "concatenated heads")}));
    frag.appendChild(heatmap(v, {m: A.output, rows: T.src_tokens, cols: null, kind: "div", caption: say(v, "after W_O")}));
    return frag;
  }

  function drawEncoderNorm(v, T, h, step) {
    var E = enc(T, step);
    return addNorm(v, T, T.src_tokens, layerInput(T, step), E.attention_steps.output, E.norm1.input, E.norm1.output);
  }

  function ffn(v, T, F, tokens) {
    var frag = document.createDocumentFragment(), zeros = 0, all = 0;
    F.hidden.forEach(function (row) { row.forEach(function (x) { all++; if (x === 0) zeros++; }); });
    frag.appendChild(para(say(v, "The feed-forward network: the same two-layer network at every position, {d} \u2192 " +
      "{dff} \u2192 {d}. Its hidden activations after ReLU ({zero} % of them are 0):",
      {d: T.config.d_model, dff: T.config.dim_feedforward, zero: Math.round(100 * zeros / all)})));
    frag.appendChild(heatmap(v, {m: F.hidden, rows: tokens, cols: null, kind: T.config.activation === "relu" ? "seq" : "div",
                                 caption: "ReLU(x W\u2081 + b\u2081)"}));
    frag.appendChild(heatmap(v, {m: F.output, rows: tokens, cols: null, kind: "div", caption: say(v, "the FFN's output")}));
    return frag;
  }

  function drawEncoderFFN(v, T, h, step) {
    var E = enc(T, step), frag = ffn(v, T, E.ffn, T.src_tokens);
    frag.appendChild(addNorm(v, T, T.src_tokens, E.norm1.output, E.ffn.output, E.norm2.input, E.norm2.output));
    return frag;
  }

  function drawMemory(v, T) {
    var frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "The memory is the encoder's output, one vector of {d} numbers per English token. " +
      "Every cross-attention of the decoder reads it as its keys and values.", {d: T.config.d_model})));
    frag.appendChild(heatmap(v, {m: T.memory, rows: T.src_tokens, cols: null, kind: "div", caption: say(v, "The memory")}));
    return frag;
  }

  function drawCausal(v, T, h, step) {
    var A = T.decoder[step.layer].self_attention_steps, frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "The decoder reads <bos> and its own translation so far, one token per row. Head " +
      "{head}'s scaled scores with the causal mask:", {head: h + 1})));
    frag.appendChild(para(say(v, "Step 4: the causal mask. A grey cell is blocked (score \u2212\u221e): row t may read " +
      "the tokens up to t, never a later one, as when the decoder writes one token at a time (head {head}).", {head: h + 1})));
    frag.appendChild(square(v, T, A.scaled[h], "QK\u1d40/\u221ad_k + mask \u00b7 " + say(v, "head") + " " + (h + 1),
                            "div", A.mask, T.decoder_input_tokens));
    return frag;
  }

  function drawSelf(v, T, h, step) {
    var D = T.decoder[step.layer], frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "The masked self-attention's heads: each row t reads only the tokens up to t.")));
    frag.appendChild(headsSideBySide(v, D.self_attention, T.decoder_input_tokens, T.decoder_input_tokens,
                                     D.self_attention_steps.mask));
    frag.appendChild(addNorm(v, T, T.decoder_input_tokens, decoderInput(T, step), D.self_attention_steps.output,
                             D.norm1.input, D.norm1.output));
    return frag;
  }

  function drawCross(v, T, h, step) {
    var D = T.decoder[step.layer], w = D.cross_attention[h], frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "Cross-attention: queries from the decoder (the Chinese it is writing), keys and " +
      "values from the memory (the English). Each line links a Chinese token to the English tokens it reads; the " +
      "darker the line, the larger the weight.")));
    frag.appendChild(alignment(v, w, T.src_tokens, T.tgt_tokens));
    frag.appendChild(para(say(v, "Each row of the table is one decoding step: the token it writes, and how much it " +
      "reads from each English token.")));
    frag.appendChild(heatmap(v, {m: w, rows: T.tgt_tokens, cols: T.src_tokens, kind: "seq",
                                 caption: say(v, "cross-attention weights, layer {layer}", {layer: step.layer + 1}) +
                                          " \u00b7 " + say(v, "head") + " " + (h + 1) + " (" + say(v, "writes") +
                                          " \u2193 / " + say(v, "reads") + " \u2192)"}));
    frag.appendChild(addNorm(v, T, T.decoder_input_tokens, D.norm1.output, D.cross_attention_steps.output,
                             D.norm2.input, D.norm2.output));
    return frag;
  }

  function drawDecoderFFN(v, T, h, step) {
    var D = T.decoder[step.layer], frag = ffn(v, T, D.ffn, T.decoder_input_tokens);
    frag.appendChild(addNorm(v, T, T.decoder_input_tokens, D.norm2.output, D.ffn.output, D.norm3.input, D.norm3.output));
    return frag;
  }

  function drawLens(v, T) {
    var frag = document.createDocumentFragment();
    frag.appendChild(para(say(v, "The logit lens: each decoder layer's output read through the final projection onto " +
      "the vocabulary. Which token would the model write if it stopped after that layer? The right one appears when " +
      "a layer's top token becomes the greedy choice.")));
    var head = [say(v, "step")].concat(T.logit_lens.map(function (_, l) { return say(v, "after decoder layer {layer}", {layer: l + 1}); }));
    var rows = T.tgt_tokens.map(function (tok, t) {
      return [String(t + 1) + " \u00b7 " + tok].concat(T.logit_lens.map(function (layer) {
        return layer[t][0][0] + " " + fmt(layer[t][0][1], 3) + (layer[t][0][0] === tok ? " \u2713" : "");
      }));
    });
    frag.appendChild(valueTable(v, say(v, "The logit lens"), head, rows));
    return frag;
  }

  function drawNext(v, T) {
    var frag = document.createDocumentFragment(), k = T.steps[0].length;
    frag.appendChild(para(say(v, "At each step the decoder's output goes through the projection onto the Chinese " +
      "vocabulary and a softmax. These are the {k} most probable next tokens; greedy decoding writes the first.", {k: k})));
    var list = el("ol", {"class": "tlx-candidates"});
    T.steps.forEach(function (cands, t) {
      var li = el("li"), reads = el("span", {"class": "tlx-reads"}, say(v, "reads") + " ");
      reads.appendChild(tokenEl("span", null, T.decoder_input_tokens.slice(0, t + 1).join(" ")));
      li.appendChild(reads);
      var bars = el("ul", {"class": "tlx-bars"});
      cands.forEach(function (c, i) {
        var item = el("li", i === 0 ? {"class": "tlx-chosen"} : null);
        item.appendChild(tokenEl("span", {"class": "tlx-cand"}, c[0]));
        var bar = el("span", {"class": "tlx-bar"});
        bar.style.width = (100 * c[1]).toFixed(1) + "%";
        item.appendChild(bar);
        item.appendChild(el("span", {"class": "tlx-p"}, fmt(c[1], 3)));
        bars.appendChild(item);
      });
      li.appendChild(bars);
      list.appendChild(li);
    });
    frag.appendChild(list);
    var result = withTokens(say(v, "The translation: {words}", {words: ""}), T.tgt_tokens.join(" "));
    result.className = "tlx-result";
    frag.appendChild(result);
    if (T.beam_tokens) {  // chapter 12's beam search beside greedy: it keeps k hypotheses instead of one
      var beam = withTokens(say(v, "Beam search, k = {k}, keeps the {k} most probable prefixes at each step instead " +
                                "of one, and translates: {words}", {k: T.beam_size, words: ""}), T.beam_tokens.join(" "));
      beam.className = "tlx-beam";
      frag.appendChild(beam);
    }
    return frag;
  }

  // -- the view -------------------------------------------------------------------------------------------------
  function setStatus(v, text) { v.q(".tlx-status").textContent = text; }

  function titleOf(v, step) { return say(v, step.title[0], step.title[1]); }

  function render(v) {  // the current step, drawn again (a new step, another head, another colour mode)
    var step = v.steps[v.index], view = v.q(".tlx-view");
    view.textContent = "";
    view.dataset.step = step.id;
    view.appendChild(el("h2", {"class": "tlx-title"}, titleOf(v, step)));
    view.appendChild(step.draw(v, v.trace, v.head, step));
    var more = el("p", {"class": "tlx-more"});
    step.chapters.forEach(function (n, i) {
      if (i) more.appendChild(document.createTextNode(" \u00b7 "));
      more.appendChild(el("a", {href: v.settings.chapters[String(n)]}, say(v, "Read more: chapter {n}", {n: n})));
    });
    view.appendChild(more);
    v.q(".tlx-head-label").hidden = !step.heads;
  }

  function go(v, index) {
    v.index = Math.max(0, Math.min(v.steps.length - 1, index));
    var step = v.steps[v.index];
    render(v);
    v.q(".tlx-step-select").value = step.id;
    var prev = v.q(".tlx-prev"), next = v.q(".tlx-next");
    prev.disabled = v.index === 0;
    next.disabled = v.index === v.steps.length - 1;
    // a button disabled under the reader's focus would drop it to the page's top: it goes to the other one
    if (document.activeElement === prev && prev.disabled) next.focus();
    if (document.activeElement === next && next.disabled) prev.focus();
    setStatus(v, say(v, "Step {i} of {n}: {title}", {i: v.index + 1, n: v.steps.length, title: titleOf(v, step)}));
    remember(v);
  }

  function remember(v) {  // the sentence, step and translator in the address, so that it can be shared
    if (v.given) return;  // a notebook's address is the notebook's
    try {
      var params = new URLSearchParams(location.search);
      params.set("s", v.q(".tlx-input").value);
      params.set("step", v.steps[v.index].id);
      params.set("model", v.key);
      history.replaceState(history.state, "", "?" + params.toString() + location.hash);
    } catch (e) { /* a browser that refuses to change a file:// address: the page still works */ }
  }

  function stepOptions(v) {
    var select = v.q(".tlx-step-select");
    select.textContent = "";
    v.steps.forEach(function (s, i) { select.appendChild(el("option", {value: s.id}, (i + 1) + ". " + titleOf(v, s))); });
    var heads = v.q(".tlx-head"), H = v.trace.config.nhead;
    heads.textContent = "";
    for (var h = 0; h < H; h++) heads.appendChild(el("option", {value: String(h)}, String(h + 1)));
    v.head = Math.min(v.head, H - 1);
    heads.value = String(v.head);
  }

  function show(v, T, wanted, note) {  // draw trace T on the wanted step (an id), or the current one
    var was = v.steps ? v.steps[v.index].id : null, sep = v.settings.language === "zh" ? "" : " ";
    v.trace = T;
    v.steps = stepsOf(T);
    stepOptions(v);
    v.q(".tlx-nav").hidden = false;
    var want = wanted || was || v.steps[0].id, at = v.steps.findIndex(function (s) { return s.id === want; });
    go(v, at < 0 ? 0 : at);
    if (at < 0) note += sep + say(v, "The step {step} does not exist for this translator: showing the first step.", {step: want});
    setStatus(v, note + sep + v.q(".tlx-status").textContent);
    v.root.dataset.tlState = "ready";
  }

  // -- switching heads off: one box per head (checked: on), and the sentence traced again without the cleared ones,
  // as transformer_lite.book.explain.trace(key, text, heads_off=...) does
  var PART_LABELS = {encoder: N("encoder layer {layer}"), self: N("decoder layer {layer}, masked self-attention"),
                     cross: N("decoder layer {layer}, cross-attention")};

  function headsGrid(v) {  // the boxes for the trace's model, built again when the model changes
    var C = v.trace.config, box = v.q(".tlx-heads-off"), grid = v.q(".tlx-heads-grid");
    if (!box || grid.dataset.model === v.key) return;
    grid.dataset.model = v.key;
    grid.textContent = "";
    var table = el("table"), head = el("tr");
    table.appendChild(el("caption", null, say(v, "Clear a box to switch that head off (W_O no longer reads it); the " +
                                              "sentence is traced again.")));
    head.appendChild(el("th", {scope: "col"}, ""));
    for (var h = 0; h < C.nhead; h++) head.appendChild(el("th", {scope: "col"}, say(v, "head") + " " + (h + 1)));
    table.appendChild(head);
    [["encoder", C.num_encoder_layers], ["self", C.num_decoder_layers], ["cross", C.num_decoder_layers]]
      .forEach(function (part) {
        for (var l = 0; l < part[1]; l++) {
          var label = say(v, PART_LABELS[part[0]], {layer: l + 1}), tr = el("tr");
          tr.appendChild(el("th", {scope: "row"}, label));
          for (var h = 0; h < C.nhead; h++) {
            var td = el("td"), input = el("input", {type: "checkbox", "aria-label": label + ", " + say(v, "head") +
                                                    " " + (h + 1), "data-head": [part[0], l, h].join(":")});
            input.checked = true;
            input.addEventListener("change", function () {
              v.headsOff = Array.from(grid.querySelectorAll("input:not(:checked)")).map(function (i) {
                var d = i.dataset.head.split(":");
                return [d[0], +d[1], +d[2]];
              });
              run(v, null, true);
            });
            td.appendChild(input);
            tr.appendChild(td);
          }
          table.appendChild(tr);
        }
      });
    grid.appendChild(table);
    box.hidden = false;
  }

  function headsResult(v, T) {  // what switching heads off did to the translation
    var out = v.q(".tlx-heads-result");
    if (!out) return;
    out.textContent = "";
    if (!v.headsOff.length) return;
    var all = v.baseline[v.key + "\u0000" + T.text];
    out.appendChild(document.createTextNode(say(v, "Heads switched off: {n}. The translation:", {n: v.headsOff.length}) + " "));
    out.appendChild(tokenEl("span", {"class": "tlx-cand"}, T.tgt_tokens.join(" ")));
    if (all) {
      out.appendChild(document.createTextNode(" " + say(v, "With every head on:") + " "));
      out.appendChild(tokenEl("span", null, all.join(" ")));
    }
  }

  function run(v, wanted, keepHeads) {  // trace the sentence, then show the wanted step (an id), or the current one;
    // a new sentence or translator is traced with every head on (keepHeads: the boxes asked for this trace)
    if (!keepHeads && v.headsOff.length) {
      v.headsOff = [];
      v.root.querySelectorAll(".tlx-heads-grid input").forEach(function (i) { i.checked = true; });
    }
    var text = v.q(".tlx-input").value, key = v.key, seq = ++v.seq, off = v.headsOff.slice();
    if (!text.trim()) {
      setStatus(v, say(v, "text holds no words: type an English sentence"));
      v.root.dataset.tlState = "message";
      return Promise.resolve();
    }
    v.root.dataset.tlState = "loading";
    if (!v.ready[key]) setStatus(v, say(v, "Loading the translator and its explainer into your browser (once)\u2026"));
    var t0 = performance.now();
    return loadTranslator().then(function (api) { return api.trace(text, key, undefined, off); }).then(function (T) {
      if (seq !== v.seq) return;
      v.ready[key] = true;
      if (!off.length) v.baseline[key + "\u0000" + text] = T.tgt_tokens;
      v.ms = performance.now() - t0;
      v.timings.push(v.ms);
      var steps = stepsOf(T).length;
      show(v, T, wanted, say(v, "Explained in your browser in {ms} ms: {n} steps.", {ms: Math.round(v.ms), n: steps}));
      v.q(".tlx-start").textContent = say(v, "Explain this sentence");
      headsGrid(v);
      headsResult(v, T);
    }, function (e) {
      if (seq !== v.seq) return;
      if (e instanceof RangeError) {  // the reader's sentence: say what is wrong, keep what is shown
        // tl-translator.js's readEnglish names its message and fields in e.tl, one of
        //   N("text holds no words: type an English sentence")
        //   N("text has {n} words; the model reads at most {max_words}")
        var message = e.tl ? say(v, e.tl[0], e.tl[1]) : e.message;
        setStatus(v, message.charAt(0).toUpperCase() + message.slice(1) + (/[\u3400-\u9fff]$/.test(message) ? "\u3002" : "."));
        v.root.dataset.tlState = "message";
      } else {
        setStatus(v, say(v, "The explainer could not run here: {error}", {error: e.message}));
        v.root.dataset.tlState = "error";
      }
    });
  }

  function choose(v, key) {  // another translator: its examples, and its trace once started
    v.key = key;
    v.root.dataset.tlModel = key;
    v.root.querySelectorAll(".tlx-examples").forEach(function (e) { e.hidden = e.dataset.tlModel !== key; });
    v.q(".tlx-model").value = key;
  }

  function setup(root) {
    if (root.tlView) return;
    var v = {root: root, seq: 0, head: 0, index: 0, steps: null, trace: null, ready: {}, timings: [], headsOff: [],
             baseline: {},  // key + NUL + sentence -> its translation with every head on
             q: function (s) { return root.querySelector(s); }};
    v.settings = JSON.parse(root.querySelector("script.tlx-settings").textContent);
    v.key = v.settings.model;
    v.given = !!v.settings.trace;  // the kernel's trace (a notebook): drawn as it is, nothing to load
    root.tlView = v;
    var input = v.q(".tlx-input");
    var started = function () { return v.steps !== null || v.root.dataset.tlState === "loading"; };
    v.q(".tlx-start").addEventListener("click", function () { run(v); });
    input.addEventListener("keydown", function (e) { if (e.key === "Enter") run(v); });
    v.q(".tlx-model").addEventListener("change", function () {
      choose(v, v.q(".tlx-model").value);
      input.value = v.settings.models[v.key].examples[0];
      if (started()) run(v);
    });
    root.querySelectorAll(".tlx-example").forEach(function (b) {
      b.addEventListener("click", function () { input.value = b.textContent; if (started()) run(v); });
    });
    v.q(".tlx-prev").addEventListener("click", function () { go(v, v.index - 1); });
    v.q(".tlx-next").addEventListener("click", function () { go(v, v.index + 1); });
    v.q(".tlx-step-select").addEventListener("change", function () {
      go(v, v.steps.findIndex(function (s) { return s.id === v.q(".tlx-step-select").value; }));
    });
    v.q(".tlx-head").addEventListener("change", function () { v.head = +v.q(".tlx-head").value; render(v); });
    // the arrow keys step back and forth wherever the focus is in the view, but in the fields that use them
    root.addEventListener("keydown", function (e) {
      if (!v.steps || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      var t = e.target;
      if (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA") return;
      var to = {ArrowLeft: v.index - 1, ArrowRight: v.index + 1, Home: 0, End: v.steps.length - 1}[e.key];
      if (to === undefined) return;
      e.preventDefault();
      go(v, to);
    });
    var redraw = new MutationObserver(function () { if (v.steps) render(v); });
    redraw.observe(document.documentElement, {attributes: true, attributeFilter: ["data-theme"]});
    if (document.body) redraw.observe(document.body, {attributes: true, attributeFilter: ["data-jp-theme-light"]});
    if (v.given) {
      show(v, v.settings.trace, v.settings.step,
           say(v, "Traced in Python by transformer_lite.book.explain.trace: {n} steps.", {n: stepsOf(v.settings.trace).length}));
      return;
    }
    var params = new URLSearchParams(location.search);
    var key = params.get("model");
    if (key && v.settings.models[key]) choose(v, key);
    if (params.get("s")) input.value = params.get("s").slice(0, 2000);
    // a link that names a sentence or a step asks for it: the reader's click on it is the start
    if (params.get("s") || params.get("step")) run(v, params.get("step"));
  }

  function init() { document.querySelectorAll(".tl-explainer").forEach(setup); }
  // a script's own view, found from the script: a notebook may run an output's script before the output is in the
  // page (JupyterLab does), where no querySelector of the document finds it
  function adopt(script) {
    var root = script && script.closest ? script.closest(".tl-explainer") : null;
    if (root) setup(root);
    if (document.readyState !== "loading") init();
  }
  window.tlExplainerView = {
    views: function () {
      return Array.from(document.querySelectorAll(".tl-explainer")).map(function (e) { return e.tlView; });
    },
    adopt: adopt
  };
  adopt(me);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
})();

// The book's predictions and exercise checks on the static site (transformer_lite/book/check/page.py writes what
// this script reads into the build's outputs; bookbuild/sphinx_ext/checks.py adds it to every page).
//
// A prediction: the predict cell's field records the reader's guess; the reveal cell's button compares it with
// the value the build measured, by the prediction's declared rule (check/predictions.py), and writes the verdict
// that check.reveal writes in Jupyter into the cell's verdict (role="status": read out when it changes).
// An exercise: when the build's solution left what each answer is compared with (numbers, choices, shapes), the
// check cell gets a field per answer and a Check button that compares the same way; otherwise the check needs
// Python, and the cell links to the same cell in Colab.
// Every text comes from the page (the package's catalog, in the edition's language); nothing leaves the site.
(function () {
  "use strict";
  if (window.tlCheck) return;
  window.tlCheck = {guesses: {}};

  var COLOURS = {right: "#1a7f37", wrong: "#cf222e", todo: "#6e7781"};
  var MARKS = {right: "\u2713", wrong: "\u2717", todo: "\u2026"};
  var table = null;

  function say(english, fields) {
    if (table === null) {
      table = {};
      var holder = document.querySelector("script.tl-check-text");
      if (holder) { try { table = JSON.parse(holder.textContent); } catch (e) { table = {}; } }
    }
    var text = table[english] || english;
    return fill(text, fields);
  }
  function fill(text, fields) {
    return String(text).replace(/\{(\w+)\}/g, function (m, k) { return fields && k in fields ? String(fields[k]) : m; });
  }

  // Python's format(x, ".Ng") (check._show: .4g; check.number's message: g, i.e. .6g)
  function pyG(x, digits) {
    if (!isFinite(x)) return x > 0 ? "inf" : x < 0 ? "-inf" : "nan";
    if (x === 0) return (1 / x < 0) ? "-0" : "0";
    var exp = Math.floor(Math.log10(Math.abs(x)));
    var rounded = Number(x.toPrecision(digits));
    exp = Math.floor(Math.log10(Math.abs(rounded)));
    if (exp < -4 || exp >= digits) {
      var s = rounded.toExponential(digits - 1).split("e");
      var mant = s[0].indexOf(".") >= 0 ? s[0].replace(/0+$/, "").replace(/\.$/, "") : s[0];
      var e = parseInt(s[1], 10);
      return mant + "e" + (e < 0 ? "-" : "+") + (Math.abs(e) < 10 ? "0" : "") + Math.abs(e);
    }
    var fixed = rounded.toFixed(Math.max(0, digits - 1 - exp));
    return fixed.indexOf(".") >= 0 ? fixed.replace(/0+$/, "").replace(/\.$/, "") : fixed;
  }
  // two sentences, as check's translate_message joins them: a space in English, none after a Chinese full stop
  function join(a, b) { return !b ? a : !a ? b : /[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]$/.test(a) ? a + b : a + " " + b; }
  function pyRepr(s) { return "'" + String(s).replace(/\\/g, "\\\\").replace(/'/g, "\\'") + "'"; }
  function pyTuple(shape) { return "(" + shape.join(", ") + (shape.length === 1 ? ",)" : ")"); }
  // a guess as check._show shows it: an int as it is, a float with 4 significant digits, a str quoted
  function show(value, kind) {
    if (typeof value === "string") return pyRepr(value);
    if (kind === "count" || /^[-+]?\d+$/.test(String(value.typed || ""))) return String(Math.round(value.number));
    return pyG(value.number, 4);
  }

  function setVerdict(verdict, status, kind, number, message, hint) {
    if (!verdict) return;
    var text = MARKS[status] + " " + say(kind === "Prediction" ? "Prediction {number}: {message}" : "Exercise {number}: {message}",
                                         {number: number, message: message});
    if (hint) text += "\n  " + say("Hint: {hint}", {hint: hint});
    verdict.className = "tl-verdict tl-verdict-" + status;
    verdict.style.borderLeftColor = COLOURS[status];
    verdict.textContent = text;
  }
  function verdictOf(ask) {
    var v = ask.previousElementSibling;
    return v && v.classList.contains("tl-verdict") ? v : null;
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function data(node, name) {
    try { return JSON.parse(node.getAttribute(name)); } catch (e) { return null; }
  }
  function readNumber(text) {
    var t = String(text).trim();
    if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) return null;
    return {number: Number(t), typed: t};
  }

  // ---- predictions ------------------------------------------------------------------------------------------
  function readGuess(rule, field) {
    if (rule.kind === "choice") {
      var c = String(field.value).trim().toLowerCase();
      return rule.choices.indexOf(c) >= 0 ? c : null;
    }
    var n = readNumber(field.value);
    if (!n) return null;
    if (rule.kind === "count" && n.number !== Math.round(n.number)) return null;
    return n;
  }
  function same(rule, guess, measured) {
    if (rule.kind === "choice") return String(guess).trim().toLowerCase() === String(measured).trim().toLowerCase();
    var d = Math.abs(guess.number - measured);
    if (rule.rel !== null && rule.rel !== undefined) return d <= rule.rel * Math.abs(measured) + 1e-12;
    return d <= (rule.abs || 0) + 1e-9;
  }

  function setUpPredict(ask) {
    var number = ask.dataset.tlNumber, rule = data(ask, "data-tl-rule") || {};
    var field = ask.querySelector(".tl-ask-field"), button = ask.querySelector(".tl-ask-go");
    var verdict = verdictOf(ask), askText = data(ask, "data-tl-ask") || "", saidText = data(ask, "data-tl-said") || "";
    setVerdict(verdict, "todo", "Prediction", number, join(say("no prediction yet: write it here and press Record, then read on."), askText));
    function record() {
      var guess = readGuess(rule, field);
      if (guess === null) {
        delete window.tlCheck.guesses[number];
        setVerdict(verdict, "wrong", "Prediction", number, askText);
        field.setAttribute("aria-invalid", "true");
        return;
      }
      field.removeAttribute("aria-invalid");
      window.tlCheck.guesses[number] = guess;
      setVerdict(verdict, "right", "Prediction", number,
                 join(say("recorded: you predict {guess}. Read on; the button after the experiment reveals what the build measured.",
                          {guess: show(guess, rule.kind)}), saidText));
    }
    button.addEventListener("click", record);
    field.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); record(); } });
    ask.hidden = false;
  }

  function setUpReveal(ask) {
    var number = ask.dataset.tlNumber, m = data(ask, "data-tl-measured") || {};
    var verdict = verdictOf(ask), button = ask.querySelector(".tl-ask-go");
    setVerdict(verdict, "todo", "Prediction", number, say("press the button to compare your prediction with what the build measured."));
    button.addEventListener("click", function () {
      var guess = window.tlCheck.guesses[number];
      if (guess === undefined) {
        setVerdict(verdict, "todo", "Prediction", number,
                   say("the build measured {measured}; you had not recorded a prediction (the field above, before the experiment).",
                       {measured: m.shown}));
        return;
      }
      var right = same(m, guess, m.measured);
      setVerdict(verdict, right ? "right" : "wrong", "Prediction", number,
                 say("you predicted {guess}; the cell measured {measured}.", {guess: show(guess, m.kind), measured: m.shown}),
                 right ? null : say("the text after this cell explains the difference."));
    });
    ask.hidden = false;
  }

  // ---- exercises --------------------------------------------------------------------------------------------
  function findKey(number) {
    var sel = '.tl-exercise-key[data-tl-exercise="' + number.replace(/"/g, "") + '"]';
    var key = document.querySelector(sel);
    if (!key) {
      var templates = document.querySelectorAll("template.tl-lazy");
      for (var i = 0; i < templates.length && !key; i++) key = templates[i].content.querySelector(sel);
    }
    return key ? data(key, "data-tl-key") : null;
  }

  function parseArray(text) {  // "[1, 2]", "(2, 3)", "1 2 3", "0.5" -> nested arrays of numbers, or null
    var t = String(text).trim().replace(/\(/g, "[").replace(/\)/g, "]");
    if (!t) return null;
    if (!/^[\[\]\d\s.,eE+\-]*$/.test(t)) return null;
    if (!/^\[/.test(t)) t = /[,\s]/.test(t) ? "[" + t.split(/[\s,]+/).filter(Boolean).join(",") + "]" : t;
    t = t.replace(/,\s*\]/g, "]");
    try { return JSON.parse(t); } catch (e) { return null; }
  }
  function shapeOf(value) {
    var shape = [];
    while (Array.isArray(value)) { shape.push(value.length); value = value[0]; }
    return shape;
  }
  function flat(value) { return Array.isArray(value) ? [].concat.apply([], value.map(flat)) : [value]; }

  function checkAnswer(answer, field) {  // null when right, else [message, hint]
    for (var i = 0; i < answer.rules.length; i++) {
      var r = answer.rules[i], text = field.value;
      if (r.kind === "number") {
        var n = readNumber(text);
        if (!n) return [fill(r.not_number, {type: "str"}), null];
        if (Math.abs(n.number - r.expected) > Math.max(r.abs, r.rel * Math.abs(r.expected)))
          return [fill(r.wrong, {value: pyG(n.number, 6)}), r.hint];
      } else if (r.kind === "choice") {
        var c = String(text).trim().toLowerCase();
        if (r.choices.indexOf(c) < 0) return [fill(r.not_choice, {got: pyRepr(text)}), null];
        if (c !== r.expected) return [fill(r.wrong, {value: pyRepr(c)}), r.hint];
      } else if (r.kind === "exact") {  // a whole number, or a shape: as the solution's, exactly
        if (r.as === "number") {
          var w = readNumber(text);
          if (!w) return [fill(r.not_number, {type: "str"}), null];
          if (w.number !== r.expected) return [fill(r.wrong, {value: /^[-+]?\d+$/.test(w.typed) ? String(w.number) : pyG(w.number, 6)}), r.hint];
        } else {
          var got = parseArray(text), parts = got === null ? null : flat(Array.isArray(got) ? got : [got]);
          if (parts === null || parts.some(function (v) { return typeof v !== "number"; }))
            return [fill(r.wrong, {value: pyRepr(String(text).trim())}), r.hint];
          if (parts.length !== r.expected.length || parts.some(function (v, k) { return v !== r.expected[k]; }))
            return [fill(r.wrong, {value: pyTuple(parts.map(function (v) { return pyG(v, 6); }))}), r.hint];
        }
      } else if (r.kind === "tensor") {
        var a = parseArray(text);
        if (a === null) return [fill(r.not_tensor, {type: "str"}), null];
        var shape = shapeOf(a), values = flat(a);
        if (shape.join(",") !== r.shape.join(",") || values.some(function (v) { return typeof v !== "number"; }))
          return [fill(r.bad_shape, {shape: pyTuple(shape)}), null];
        var worst = 0, bad = false;
        values.forEach(function (v, k) {
          var e = r.expected[k], d = Math.abs(v - e);
          worst = Math.max(worst, d);
          if (d > r.atol + r.rtol * Math.abs(e)) bad = true;
        });
        if (bad) return [fill(r.wrong, {diff: pyG(worst, 3)}), r.hint];
      }
    }
    return null;
  }

  function setUpExercise(ask) {
    var number = ask.dataset.tlExercise, verdict = verdictOf(ask), key = findKey(number);
    if (!key) {
      setVerdict(verdict, "todo", "Exercise", number,
                 say("not answered yet: this check runs your code, which needs Python. Open this cell in Colab, or run the chapter in Jupyter."));
      var colab = document.querySelector('a[href^="https://colab.research.google.com/"]');
      if (colab) {
        var href = colab.getAttribute("href").split("#")[0] + "#scrollTo=" + encodeURIComponent(ask.dataset.tlCell);
        var link = el("a", {href: href, "class": "tl-ask-colab", target: "_blank", rel: "noopener"},
                      say("Open this cell in Colab"));
        ask.appendChild(link);
      }
      ask.hidden = !colab;
      return;
    }
    var fields = [];
    key.answers.forEach(function (answer, i) {
      var id = "tl-ex-" + number.replace(/\W/g, "-") + "-" + i;
      var row = el("span", {"class": "tl-ask-answer"});
      var label = el("label", {"for": id});
      label.appendChild(el("code", null, answer.name));
      row.appendChild(label);
      var choice = answer.rules.filter(function (r) { return r.kind === "choice"; })[0];
      var field;
      if (choice) {
        field = el("select", {id: id, "class": "tl-ask-field"});
        field.appendChild(el("option", {value: ""}, say("choose")));
        choice.choices.forEach(function (c) { field.appendChild(el("option", {value: c}, pyRepr(c))); });
      } else {
        var tensor = answer.rules.some(function (r) { return r.kind === "tensor"; });
        var shape = answer.rules.some(function (r) { return r.kind === "exact" && r.as === "tuple"; });
        field = el("input", {id: id, "class": "tl-ask-field", type: "text", autocomplete: "off", spellcheck: "false",
                             inputmode: tensor || shape ? "text" : "decimal", size: tensor ? "24" : shape ? "16" : "10",
                             placeholder: tensor ? say("numbers, e.g. [0.1, 0.2]") : shape ? say("a shape, e.g. (2, 3)") :
                                          say("a number")});
        field.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); run(); } });
      }
      row.appendChild(document.createTextNode(" "));
      row.appendChild(field);
      ask.appendChild(row);
      fields.push(field);
    });
    var button = el("button", {type: "button", "class": "tl-ask-go"}, say("Check"));
    ask.appendChild(button);
    function run() {
      for (var i = 0; i < key.answers.length; i++) {
        var wrong = checkAnswer(key.answers[i], fields[i]);
        fields[i].removeAttribute("aria-invalid");
        if (wrong) {
          fields[i].setAttribute("aria-invalid", "true");
          setVerdict(verdict, "wrong", "Exercise", number, wrong[0], wrong[1]);
          return;
        }
      }
      setVerdict(verdict, "right", "Exercise", number, key.message);
    }
    button.addEventListener("click", run);
    setVerdict(verdict, "todo", "Exercise", number, say("not answered yet: write your answer here and press Check."));
    ask.hidden = false;
  }

  function style() {
    var s = document.createElement("style");
    s.textContent =
      ".tl-ask{display:flex;flex-wrap:wrap;align-items:center;gap:.4em .8em;margin:.4em 0 .2em}" +
      ".tl-ask[hidden]{display:none}" +
      ".tl-ask-answer{display:inline-flex;align-items:center;gap:.3em}" +
      ".tl-ask .tl-ask-field{font:inherit;padding:.15em .4em;border:1px solid #6e7781;border-radius:4px;" +
      "background:var(--pst-color-background,#fff);color:var(--pst-color-text-base,#222)}" +
      ".tl-ask .tl-ask-field[aria-invalid=true]{border-color:#cf222e}" +
      ".tl-ask .tl-ask-go{font:inherit;padding:.15em .8em;border:1px solid var(--pst-color-primary,#0a6bc2);" +
      "border-radius:4px;background:var(--pst-color-background,#fff);color:var(--pst-color-primary,#0a6bc2);cursor:pointer}" +
      ".tl-ask .tl-ask-go:hover{text-decoration:underline}" +
      // the Colab link on the page's own colours (in dark mode the output area's link colour fell below 4.5:1)
      ".tl-ask .tl-ask-colab{color:var(--pst-color-link,#0a58ca);background:var(--pst-color-background,#fff)}" +
      ".tl-ask :focus-visible{outline:2px solid var(--pst-color-primary,#0a6bc2);outline-offset:2px}";
    document.head.appendChild(s);
  }

  function start() {
    var asks = document.querySelectorAll(".tl-ask");
    if (!asks.length) return;
    style();
    asks.forEach(function (ask) {
      if (ask.classList.contains("tl-ask-predict")) setUpPredict(ask);
      else if (ask.classList.contains("tl-ask-reveal")) setUpReveal(ask);
      else if (ask.classList.contains("tl-ask-exercise")) setUpExercise(ask);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

// The book's math, typeset at build time (bookbuild/sphinx_ext/tl_math.py starts this once per Sphinx build).
//
// MathJax 3.2.2 in Node (npm: mathjax-full, the same version as the `mathjax` package the site served
// before): TeX in, CommonHTML out, with the assistive MathML that tex-chtml.js adds in the browser, so a
// page shows the same formulas and screen readers read the same MathML, without any script at run time.
//
// One JSON object a line on stdin, one answer a line on stdout:
//   {"page": true}                      start a page (a new MathJax document: its stylesheet holds its own glyphs)
//   {"tex": "...", "display": false}    -> {"html": "<mjx-container ...>...</mjx-container>"} or {"error": "..."}
//   {"css": true}                       -> {"css": "..."} the page's stylesheet; fonts under FONT_URL
'use strict';
const readline = require('readline');
const {mathjax} = require('mathjax-full/js/mathjax.js');
const {TeX} = require('mathjax-full/js/input/tex.js');
const {CHTML} = require('mathjax-full/js/output/chtml.js');
const {liteAdaptor} = require('mathjax-full/js/adaptors/liteAdaptor.js');
const {RegisterHTMLHandler} = require('mathjax-full/js/handlers/html.js');
const {AssistiveMmlHandler} = require('mathjax-full/js/a11y/assistive-mml.js');
const {AllPackages} = require('mathjax-full/js/input/tex/AllPackages.js');

const FONT_URL = '@TL_MATH_FONTS@';  // replaced per page by the fonts' URL relative to that page
const adaptor = liteAdaptor();
AssistiveMmlHandler(RegisterHTMLHandler(adaptor));
// no \require/\autoload (everything is loaded), as the browser's autoload would give
// and no noundefined: an unknown macro is an error (tl_math.py: a build warning), not red text
const packages = AllPackages.filter((p) => !['autoload', 'require', 'noundefined', 'bussproofs'].includes(p));

let doc = null;
let chtml = null;

function newPage() {
  chtml = new CHTML({fontURL: FONT_URL});
  const tex = new TeX({packages, formatError: (jax, err) => { throw err; }});
  doc = mathjax.document('', {InputJax: tex, OutputJax: chtml});
}

// em/ex of the site's text: the pages' MathJax measured them in Chromium (body text 16px, x-height 9px),
// scaling every formula in running text to 127.3% (ex / MathJax's x-height .442em); the same scale here
const METRICS = {em: 16, ex: 9, containerWidth: 720, scale: 9 / (16 * .442)};

const rl = readline.createInterface({input: process.stdin, terminal: false});
rl.on('line', (line) => {
  let answer;
  try {
    const req = JSON.parse(line);
    if (req.page || doc === null) newPage();
    if (req.page) answer = {ok: true};
    else if (req.css) {
      // one rule a line, no indentation: a third of the bytes
      const css = adaptor.textContent(chtml.styleSheet(doc)).replace(/\n\s*/g, ' ').replace(/ ?([{};]) /g, '$1');
      answer = {css};
    }
    else {
      const node = doc.convert(req.tex, Object.assign({display: !!req.display}, METRICS));
      answer = {html: adaptor.outerHTML(node)};
    }
  } catch (err) {
    answer = {error: String(err && err.message || err)};
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
});

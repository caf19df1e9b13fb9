// The theme's stylesheet with only the rules some page or script of the site can match (bookbuild/slim_static.py).
//   node bookbuild/purge_css.mjs <site dir> <stylesheet>   (rewrites the stylesheet in place; prints its old and new size)
// PurgeCSS 8 (package.json) keeps a rule when the words of its selector occur in the site's pages or scripts: the
// class names Bootstrap's and the theme's scripts add at run time are words of those scripts. Kept besides, by name:
// the states and parts those scripts build from pieces (tooltip placements "bs-tooltip-" + side, "show", Popper's
// data-popper-placement...) and the colour modes; every @font-face and custom property stays.
import { PurgeCSS } from 'purgecss';
import fs from 'node:fs';
import path from 'node:path';

const [site, css] = process.argv.slice(2);
if (!site || !css) {
  console.error('usage: node bookbuild/purge_css.mjs <site dir> <stylesheet>');
  process.exit(2);
}
const glob = (p) => p.split(path.sep).join('/');
const before = fs.statSync(css).size;
const [result] = await new PurgeCSS().purge({
  content: [glob(path.join(site, '**', '*.html')), glob(path.join(site, '_static', '**', '*.js'))],
  css: [css],
  fontFace: false,
  variables: false,
  keyframes: true,
  safelist: {
    standard: [/^show$/, /^showing$/, /^hiding$/, /^active$/],
    greedy: [/data-bs/, /data-theme/, /data-mode/, /tooltip/, /popover/, /popper/, /^bs-/, /offcanvas/, /modal/,
             /dropdown/, /collaps/, /fade/],
  },
});
fs.writeFileSync(css, result.css);
console.log(JSON.stringify({ before, after: Buffer.byteLength(result.css) }));

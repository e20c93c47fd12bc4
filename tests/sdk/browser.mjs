// Taxbit's real client in Debian's headless Chromium, from a page on another
// origin than the API, so every call goes through CORS (docs/taxbit-sdk.md § 5).
//
//   node browser.mjs --api http://127.0.0.1:PORT --token BEARER --kind dps|w9|w8ben|w8bene
//                    --values FILE.json [--page-port N] [--timeout SECONDS]
//
// A small static server on http://localhost:PAGE_PORT (0: any free port; the
// API's --cors-origin must name it) serves the UMD builds of React 18 and the
// SDK and a page that swaps the SDK's origin for --api with a fetch wrapper,
// renders TaxbitQuestionnaire, and after onSuccess mounts useTaxbit (for a
// W-form it asks for the document URL). Chromium types the values of FILE as a
// person would. stdout: one JSON line like run.mjs's, plus pageOrigin and
// browser; exit 0 on success, 1 on failure, 2 on bad arguments.
// Chromium: $CHROMIUM, default /usr/bin/chromium-headless-shell.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import puppeteer from 'puppeteer-core';
import { TAXBIT_ORIGIN } from './origin.mjs';
import { walk, until } from './walk.mjs';

const KINDS = { dps: 'DPS', w9: 'W-FORM', w8ben: 'W-FORM', w8bene: 'W-FORM' };
const HERE = path.dirname(fileURLToPath(import.meta.url));
const NM = path.join(HERE, 'node_modules');

let opts;
try {
  ({ values: opts } = parseArgs({ options: {
    api: { type: 'string' }, token: { type: 'string' }, kind: { type: 'string' }, values: { type: 'string' },
    'page-port': { type: 'string', default: '0' }, timeout: { type: 'string', default: '60' } } }));
  if (!opts.api || opts.token === undefined || !KINDS[opts.kind] || !opts.values) throw new Error('missing');
} catch (e) {
  process.stderr.write('usage: node browser.mjs --api URL --token BEARER --kind dps|w9|w8ben|w8bene '
    + '--values FILE [--page-port N] [--timeout SECONDS]\n');
  process.exit(2);
}
const spec = JSON.parse(fs.readFileSync(opts.values, 'utf8'));
const apiOrigin = opts.api.replace(/\/+$/, '');

const result = { success: false, kind: opts.kind, clientData: null, statusData: null, serverData: null,
  documentUrl: null, errors: [], requests: [], pageOrigin: null, browser: null };
let browser = null;
let web = null;

async function finish(error) {
  if (error) result.error = String(error && error.message ? error.message : error);
  try { if (browser) result.requests = await Promise.race([page.evaluate('window.requests'), sleepMs(2000)]) || []; } catch (e) { /* page gone */ }
  try { if (browser) await Promise.race([browser.close(), sleepMs(5000)]); } catch (e) { /* already closed */ }
  if (browser && browser.process()) browser.process().kill('SIGKILL');
  if (web) web.close();
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(error ? 1 : 0));
}
const sleepMs = (ms) => new Promise((r) => setTimeout(r, ms));
const timer = setTimeout(() => finish(`timed out after ${opts.timeout} s at ${result.step || 'start'}`),
  Number(opts.timeout) * 1000);

// The page: the fetch wrapper (the same origin swap as origin.mjs), callbacks
// made once (an inline one makes the SDK refetch in a loop), the questionnaire,
// then the hook. Its state is read by the driver from window.*.
function pageHtml() {
  const props = { bearerToken: opts.token, questionnaire: KINDS[opts.kind] };
  if (spec.language) props.language = spec.language;
  return `<!doctype html><html><head><meta charset="utf-8"></head><body><div id="root"></div>
<script>window.process = {env: {NODE_ENV: 'production'}};</script>
<script src="/react.js"></script><script src="/react-dom.js"></script><script src="/sdk.js"></script>
<script>
const TAXBIT_ORIGIN = new RegExp(${JSON.stringify(TAXBIT_ORIGIN.source)});
const API = ${JSON.stringify(apiOrigin)};
const realFetch = window.fetch.bind(window);
window.requests = [];
window.fetch = async (input, init) => {
  const url = String(typeof input === 'string' ? input : input.url).replace(TAXBIT_ORIGIN, API);
  const u = new URL(url);
  const entry = {method: (init && init.method) || 'GET', path: u.pathname + u.search, status: 0, content_type: null};
  window.requests.push(entry);
  const resp = await realFetch(url, init);
  entry.status = resp.status;
  entry.content_type = resp.headers.get('content-type');
  return resp;
};
window.sdkErrors = []; window.clientData = null; window.stepId = null; window.hook = null;
const props = Object.assign(${JSON.stringify(props)}, {
  onSuccess: (d) => { window.clientData = d; },
  onError: (e) => { window.sdkErrors.push(String(e && e.message ? e.message : e)); },
  onProgress: (p) => { window.stepId = p.stepId; },
});
const T = TaxbitTaxDocumentation;
let root = ReactDOM.createRoot(document.getElementById('root'));
root.render(React.createElement(T.TaxbitQuestionnaire, props));
function Probe() {
  window.hook = T.useTaxbit({bearerToken: props.bearerToken, questionnaire: props.questionnaire, onError: props.onError});
  return null;
}
window.mountHook = () => {
  root.unmount();
  root = ReactDOM.createRoot(document.getElementById('root'));
  root.render(React.createElement(Probe));
};
</script></body></html>`;
}

const FILES = { '/react.js': 'react/umd/react.production.min.js',
  '/react-dom.js': 'react-dom/umd/react-dom.production.min.js',
  '/sdk.js': '@taxbit/react-sdk/dist/taxbit-react-sdk.umd.cjs' };

let page;
function puppeteerScreen() {
  const sel = (name) => `[name="${name}"]`;
  return {
    stepId: () => page.evaluate('window.stepId'),
    present: async (name) => Boolean(await page.$(sel(name))),
    async fill(name, value) {
      const kind = await page.$eval(sel(name), (el) => (el.tagName === 'SELECT' ? 'select' : el.type));
      if (kind === 'radio') {
        await page.click(`input${sel(name)}[value="${value}"]`);
      } else if (kind === 'checkbox') {
        if (await page.$eval(sel(name), (el) => el.checked) !== Boolean(value)) await page.click(sel(name));
      } else if (kind === 'select') {
        const got = await page.select(sel(name), String(value));
        if (!got.length) throw new Error(`select ${name} has no option ${JSON.stringify(value)}`);
      } else {
        await page.type(sel(name), String(value));
      }
    },
    buttons: () => page.$$eval('#root button', (bs) => bs.map((b) => b.textContent.trim())),
    async click(text) {
      const [b] = await page.$$(`xpath/.//button[normalize-space()=${JSON.stringify(text)}]`);
      if (!b) throw new Error(`no button "${text}"`);
      await b.click();
      await sleepMs(50);
    },
    errors: () => page.$$eval('#root [class*="error"]', (es) => es.map((e) => e.textContent.trim())
      .filter(Boolean).join(' | ')),
    inputNames: () => page.$$eval('#root [name]', (es) => [...new Set(es.map((e) => e.name))]),
  };
}

async function main() {
  const html = pageHtml();
  web = http.createServer((req, res) => {
    const file = FILES[req.url];
    if (file) {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      return res.end(fs.readFileSync(path.join(NM, file)));
    }
    if (req.url !== '/') { res.writeHead(404); return res.end(); }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    return res.end(html);
  });
  await new Promise((r) => web.listen(Number(opts['page-port']), '127.0.0.1', r));
  // localhost and 127.0.0.1 are different origins: every API call is cross-origin
  result.pageOrigin = `http://localhost:${web.address().port}`;

  browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium-headless-shell',
    headless: 'shell', args: ['--no-sandbox'], timeout: 20000 });
  result.browser = await browser.version();
  page = await browser.newPage();
  page.on('console', (m) => process.stderr.write(`console: ${m.text()}\n`));
  page.on('pageerror', (e) => process.stderr.write(`pageerror: ${e.message}\n`));
  await page.goto(result.pageOrigin + '/', { timeout: 15000 });

  result.step = 'loading';
  await until('the first step', () => page.evaluate('window.sdkErrors.length || window.stepId'), 15000);
  const errs = () => page.evaluate('window.sdkErrors');
  if ((await errs()).length) throw new Error(`SDK error while loading: ${(await errs()).join('; ')}`);

  await walk(puppeteerScreen(), spec.fields, async () => {
    await until('onSuccess or onError', () => page.evaluate('window.clientData || window.sdkErrors.length'), 20000);
    result.clientData = await page.evaluate('window.clientData');
    if (!result.clientData) throw new Error(`submission failed: ${(await errs()).join('; ')}`);
  }, result);

  result.step = 'useTaxbit';
  const before = (await errs()).length;
  await page.evaluate('window.mountHook()');
  const failed = async () => (await errs()).length > before;
  await until('useTaxbit status', async () => (await failed()) || page.evaluate('window.hook && window.hook.statusData'), 15000);
  if (await failed()) throw new Error(`useTaxbit: ${(await errs()).slice(before).join('; ')}`);
  result.statusData = await page.evaluate('window.hook.statusData');
  await until('serverData', () => page.evaluate('window.hook.serverData'), 10000);
  result.serverData = await page.evaluate('window.hook.serverData');
  if (KINDS[opts.kind] === 'W-FORM') {
    await until('canGetDocumentUrl', () => page.evaluate('window.hook.canGetDocumentUrl'), 10000);
    await page.evaluate('window.hook.generateDocumentUrl()');
    await until('documentUrl', async () => (await failed()) || page.evaluate('window.hook.documentUrl'), 20000);
    result.documentUrl = await page.evaluate('window.hook.documentUrl');
    if (!result.documentUrl) throw new Error(`generateDocumentUrl: ${(await errs()).slice(before).join('; ')}`);
  }
  result.errors = await errs();
}

try {
  await main();
  result.success = true;
  delete result.step;
  clearTimeout(timer);
  await finish(null);
} catch (e) {
  clearTimeout(timer);
  try { result.errors = await page.evaluate('window.sdkErrors'); } catch (e2) { /* no page */ }
  await finish(e);
}

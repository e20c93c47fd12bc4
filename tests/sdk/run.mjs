// Taxbit's real client against a server, in Node with jsdom (docs/taxbit-sdk.md § 5).
//
//   node run.mjs --api http://127.0.0.1:PORT --token BEARER --kind dps|w9|w8ben|w8bene
//                --values FILE.json [--timeout SECONDS]
//
// Renders TaxbitQuestionnaire (React 18) with the owner's bearer token, fills
// each step from FILE ({"fields": {inputName: value, ...}, "language"?}),
// submits, and waits for onSuccess. Then mounts useTaxbit alone; for a W-form
// it calls generateDocumentUrl() and waits for the document URL. The SDK's
// hard-coded origin is swapped for --api by a fetch wrapper; nothing else.
//
// stdout: one JSON line {success, kind, clientData, statusData, serverData,
// documentUrl, errors, requests: [{method, path, status, content_type}]}; exit
// 0 on success, 1 on failure (with "error"), 2 on bad arguments. Everything
// the SDK or React print goes to stderr. Gives up after --timeout (default 60 s).
import { parseArgs } from 'node:util';
import fs from 'node:fs';

const KINDS = { dps: 'DPS', w9: 'W-FORM', w8ben: 'W-FORM', w8bene: 'W-FORM' };
const FORM_OF = { w9: 'W-9', w8ben: 'W-8BEN', w8bene: 'W-8BEN-E' };

let opts;
try {
  ({ values: opts } = parseArgs({ options: {
    api: { type: 'string' }, token: { type: 'string' }, kind: { type: 'string' },
    values: { type: 'string' }, timeout: { type: 'string', default: '60' } } }));
  if (!opts.api || opts.token === undefined || !KINDS[opts.kind] || !opts.values) throw new Error('missing');
} catch (e) {
  process.stderr.write('usage: node run.mjs --api URL --token BEARER --kind dps|w9|w8ben|w8bene '
    + '--values FILE [--timeout SECONDS]\n');
  process.exit(2);
}

// stdout carries exactly one JSON line: whatever else is printed goes to stderr
const toStderr = (...a) => process.stderr.write(a.map(String).join(' ') + '\n');
console.log = console.info = console.warn = console.error = console.debug = toStderr;

const requests = [];
const sdkErrors = [];
const result = { success: false, kind: opts.kind, clientData: null, statusData: null, serverData: null,
  documentUrl: null, errors: sdkErrors, requests };

function finish(error) {
  if (error) result.error = String(error && error.message ? error.message : error);
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(error ? 1 : 0));
}

const timer = setTimeout(() => finish(`timed out after ${opts.timeout} s at ${result.step || 'start'}`),
  Number(opts.timeout) * 1000);

await import('./env.mjs');
const { swapOrigin } = await import('./origin.mjs');
const { jsdomScreen } = await import('./drive.mjs');
const { walk, until: waitFor } = await import('./walk.mjs');
const React = (await import('react')).default;
const { createRoot } = await import('react-dom/client');
const { TaxbitQuestionnaire, useTaxbit } = await import('@taxbit/react-sdk');

swapOrigin(opts.api.replace(/\/+$/, ''), requests);

const spec = JSON.parse(fs.readFileSync(opts.values, 'utf8'));
const questionnaire = KINDS[opts.kind];

// Callbacks are made once: the SDK's effects depend on their identity, and an
// inline callback makes it refetch in a loop (docs/taxbit-sdk.md § 6.8).
let progress = null;
let succeeded = false;
const callbacks = {
  onSuccess: (data) => { succeeded = true; result.clientData = data; },
  onError: (e) => { sdkErrors.push(String(e && e.message ? e.message : e)); },
  onProgress: (p) => { progress = p; },
};

async function questionnaireRun() {
  const root = createRoot(document.getElementById('root'));
  const props = { bearerToken: opts.token, questionnaire, ...callbacks };
  if (spec.language) props.language = spec.language;
  root.render(React.createElement(TaxbitQuestionnaire, props));
  const screen = jsdomScreen(() => progress.stepId);
  result.step = 'loading';
  await waitFor('the first step', () => sdkErrors.length || (progress && screen.inputNames().length), 15000);
  if (sdkErrors.length) throw new Error(`SDK error while loading: ${sdkErrors.join('; ')}`);

  await walk(screen, spec.fields, async () => {
    await waitFor('onSuccess or onError', () => succeeded || sdkErrors.length, 20000);
    if (!succeeded) throw new Error(`submission failed: ${sdkErrors.join('; ')}`);
  }, result);
  root.unmount();
}

async function hookRun() {
  result.step = 'useTaxbit';
  let api = null;
  function Probe() {
    api = useTaxbit({ bearerToken: opts.token, questionnaire, onError: callbacks.onError });
    return null;
  }
  const before = sdkErrors.length;
  const root = createRoot(document.getElementById('root'));
  root.render(React.createElement(Probe));
  await waitFor('useTaxbit status', () => sdkErrors.length > before || (api && api.statusData), 15000);
  if (sdkErrors.length > before) throw new Error(`useTaxbit: ${sdkErrors.slice(before).join('; ')}`);
  result.statusData = api.statusData;
  if (FORM_OF[opts.kind]) {
    await waitFor('canGetDocumentUrl', () => api.canGetDocumentUrl && api.serverData, 10000);
    result.serverData = api.serverData;
    api.generateDocumentUrl();
    // the SDK asks for the document 3 s after creating it (docs/taxbit-sdk.md § 1.2)
    await waitFor('documentUrl', () => sdkErrors.length > before || api.documentUrl, 20000);
    if (!api.documentUrl) throw new Error(`generateDocumentUrl: ${sdkErrors.slice(before).join('; ')}`);
    result.documentUrl = api.documentUrl;
  } else {
    await waitFor('serverData', () => api.serverData, 10000);
    result.serverData = api.serverData;
    if (api.canGetDocumentUrl) throw new Error('useTaxbit offers a document for DPS');
  }
  root.unmount();
}

try {
  await questionnaireRun();
  await hookRun();
  result.success = true;
  delete result.step;
  clearTimeout(timer);
  finish(null);
} catch (e) {
  clearTimeout(timer);
  finish(e);
}

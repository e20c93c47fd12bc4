// A stand-in for taxd's SDK routes, answering as docs/taxbit-sdk.md § 1.2 and
// § 6.1 say taxd must: it documents the protocol the drivers (run.mjs,
// browser.mjs) expect, and lets tests check the drivers without taxd.
//
//   node mock.mjs [--port N] [--cors-origin ORIGIN]...
//
// prints {"port": N} on stdout once listening and serves until SIGTERM/SIGINT.
// State is per bearer token (each token stands for one account owner). Besides
// the SDK's routes it answers GET /_mock/log: every request seen, as
// {method, path, origin, content_type, content_length, authorization, body}.
import http from 'node:http';
import crypto from 'node:crypto';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

const V1 = '/v1/';
const json = (status, body, extra = {}) => ({ status, body: JSON.stringify(body), headers:
  { 'content-type': 'application/json', ...extra } });
const error = (status, message) => json(status, { error: http.STATUS_CODES[status], message });

// The form a W-FORM submission is (docs/taxbit-sdk.md § 2, sdk.js `Ne`).
export function formOf(doc) {
  if (doc.questionnaire === 'DPS') return 'DPS';
  const ah = doc.account_holder || {};
  const dre = ah.us_account_type === 'DISREGARDED_ENTITY' || ah.foreign_account_type === 'DISREGARDED_ENTITY'
    || (ah.us_account_type === 'SM_LLC' && ah.us_smllc_election === false);
  const p = dre ? doc.regarded_owner || {} : ah;
  if (p.us_account_type) return 'W-9';
  if (p.foreign_account_type === 'INDIVIDUAL') return 'W-8BEN';
  if (p.foreign_account_type) return 'W-8BEN-E';
  return null;
}

// A tiny one-page PDF naming the form and the holder (Latin-1 text only).
function tinyPdf(lines) {
  const text = lines.map((l, i) => `BT /F1 12 Tf 72 ${720 - 18 * i} Td (${
    l.replace(/[^\x20-\x7e]/g, '?').replace(/[()\\]/g, '\\$&')}) Tj ET`).join('\n');
  const objs = ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${text.length} >>\nstream\n${text}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'];
  let out = '%PDF-1.4\n';
  const offsets = objs.map((o, i) => { const at = out.length; out += `${i + 1} 0 obj\n${o}\nendobj\n`; return at; });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n`
    + offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')
    + `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

export function createMock({ corsOrigins = [] } = {}) {
  const owners = new Map();   // bearer token -> {submissions: {DPS: [], 'W-FORM': []}}
  const documents = new Map(); // id -> {token, doc}
  const log = [];
  const owner = (token) => {
    if (!owners.has(token)) owners.set(token, { submissions: { DPS: [], 'W-FORM': [] } });
    return owners.get(token);
  };

  function status(o) {
    const out = {};
    const dps = o.submissions.DPS[0];
    if (dps) {
      out.dps_questionnaire = { data_collection_status: 'COMPLETE',
        vat_status: dps.account_holder?.vatin_not_required ? 'NOT_REQUIRED' : 'VALID' };
    }
    const w = o.submissions['W-FORM'][0];
    if (w) {
      const type = formOf(w);
      out.w_form_questionnaire = { data_collection_status: 'COMPLETE', type, needs_resubmission: false,
        tin_status: type === 'W-9' ? 'PENDING' : 'FOREIGN' };
    }
    return out;
  }

  function route(req, url, body, token, base) {
    const o = owner(token);
    const path = url.pathname.slice(V1.length);
    if (req.method === 'GET' && path === 'tax-documentation-status') return json(200, status(o));
    if (path === 'tax-documentation/submissions' && req.method === 'POST') {
      let doc;
      try { doc = JSON.parse(body); } catch (e) { return error(400, 'Request body is not valid JSON'); }
      if (doc.document_type !== 'COMPREHENSIVE' || !(doc.questionnaire in o.submissions) || !formOf(doc)) {
        return error(400, 'Not a COMPREHENSIVE DPS or W-FORM submission');
      }
      const id = crypto.randomUUID();
      o.submissions[doc.questionnaire].unshift(doc);
      return json(201, { data: { tax_documentation_id: id, type: formOf(doc) } });
    }
    if (path === 'tax-documentation/submissions' && req.method === 'GET') {
      const q = url.searchParams.get('questionnaire');
      if (!(q in o.submissions)) return error(400, "questionnaire must be 'DPS' or 'W-FORM'");
      const doc = o.submissions[q][0];
      return json(200, { data: doc ? [doc] : [] }, { 'cache-control': 'no-store' });
    }
    if (path === 'tax-documentation/document' && req.method === 'POST') {
      const w = o.submissions['W-FORM'][0];
      if (!w) return error(404, 'No W-form on file');
      const id = crypto.randomUUID();
      documents.set(id, { token, doc: w });
      return json(201, { id, status: 'FINISHED' });
    }
    const m = /^tax-documentation\/document\/([0-9a-f-]{36})(\/download)?$/.exec(path);
    if (m && req.method === 'GET' && !m[2]) {
      const d = documents.get(m[1]);
      if (!d || d.token !== token) return error(404, 'Document not found');
      const sig = crypto.randomBytes(8).toString('hex');
      return json(200, { id: m[1], status: 'FINISHED',
        url: `${base}/v1/tax-documentation/document/${m[1]}/download?expires=0&nonce=${sig}&signature=${sig}` });
    }
    return error(404, 'Not found');
  }

  const server = http.createServer((req, resp) => {
    let chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url, 'http://mock');
      const h = req.headers;
      if (url.pathname !== '/_mock/log') {
        log.push({ method: req.method, path: url.pathname + url.search, origin: h.origin || null,
          content_type: h['content-type'] || null, content_length: h['content-length'] || null,
          authorization: h.authorization || null, body });
      }
      const cors = {};
      if (h.origin && corsOrigins.includes(h.origin)) {
        Object.assign(cors, { 'access-control-allow-origin': h.origin, vary: 'Origin',
          'access-control-expose-headers': 'x-request-id, x-ratelimit-limit, x-ratelimit-remaining, Retry-After' });
      }
      let out;
      if (url.pathname === '/_mock/log') {
        out = json(200, log);
      } else if (req.method === 'OPTIONS') {
        if (cors['access-control-allow-origin']) {
          Object.assign(cors, { 'access-control-allow-methods': 'GET, POST',
            'access-control-allow-headers': 'Authorization, Content-Type', 'access-control-max-age': '600' });
        }
        out = { status: 204, body: '', headers: {} };
      } else if (/\/download$/.test(url.pathname)) {
        const d = documents.get(url.pathname.split('/')[4]);
        out = d ? { status: 200, body: tinyPdf([formOf(d.doc), d.doc.account_holder?.name || '']),
          headers: { 'content-type': 'application/pdf' } } : error(404, 'Document not found');
      } else {
        const m = /^Bearer (\S+)$/.exec(h.authorization || '');
        out = m ? route(req, url, body, m[1], `http://${h.host}`)
          : json(401, { error: 'Unauthorized', message: 'Invalid token' });
      }
      resp.writeHead(out.status, { ...out.headers, ...cors });
      resp.end(out.body);
    });
  });
  return { server, log };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '0' },
    'cors-origin': { type: 'string', multiple: true, default: [] } } });
  const { server } = createMock({ corsOrigins: values['cors-origin'] });
  server.listen(Number(values.port), '127.0.0.1', () => {
    process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

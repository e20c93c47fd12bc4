// The only change made to Taxbit's client: its hard-coded origin
// (docs/taxbit-sdk.md § 1.1) becomes taxd's. The request itself (method,
// headers, body, and so the browser's own text/plain content type) passes
// through untouched.
export const TAXBIT_ORIGIN = /^https:\/\/api\.multi1\.enterprise(-staging)?\.taxbit\.com/;

// Replaces globalThis.fetch; every call the SDK makes is recorded in `log` as
// {method, path, status, content_type} (the answer's content type; status 0
// when the call failed on the network).
export function swapOrigin(target, log) {
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const url = String(typeof input === 'string' || input instanceof URL ? input : input.url);
    const swapped = url.replace(TAXBIT_ORIGIN, target);
    const u = new URL(swapped);
    const entry = { method: (init && init.method) || 'GET', path: u.pathname + u.search, status: 0,
      content_type: null };
    log.push(entry);
    const resp = await realFetch(swapped, init);
    entry.status = resp.status;
    entry.content_type = resp.headers.get('content-type');
    return resp;
  };
}

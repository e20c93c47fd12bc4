// Drives the questionnaire rendered under #root the way a person would, by
// the DOM `name`s of its inputs (docs/taxbit-sdk.md § 2) and the texts of its
// buttons. React tracks input values itself, so a value is set through the
// prototype's native setter and announced with the event React listens to.
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const root = () => document.getElementById('root');

function setNative(el, value) {
  const proto = el.tagName === 'SELECT' ? HTMLSelectElement.prototype
    : el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, value);
}

// Sets input `name` to `value`: a radio's value to click, a checkbox's
// wanted state (true/false), a select's option value, or text to type.
export async function fill(name, value) {
  const el = root().querySelector(`[name="${name}"]`);
  if (!el) throw new Error(`no input named ${name}`);
  if (el.type === 'radio') {
    const r = root().querySelector(`[name="${name}"][value="${value}"]`);
    if (!r) throw new Error(`input ${name} has no choice ${JSON.stringify(value)}`);
    r.click();
  } else if (el.type === 'checkbox') {
    if (el.checked !== Boolean(value)) el.click();
  } else if (el.tagName === 'SELECT') {
    if (![...el.options].some((o) => o.value === String(value))) {
      throw new Error(`select ${name} has no option ${JSON.stringify(value)}`);
    }
    setNative(el, String(value));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  } else {
    setNative(el, String(value));
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }
  await sleep(20);
}

// Fills every input of `values` ({name: value}, in order) present on the
// screen and not filled yet; again while new inputs appear (an answer may
// reveal the next question). Returns the names filled.
export async function fillScreen(values, filled) {
  const now = [];
  for (let round = 0; round < 6; round++) {
    let progress = false;
    for (const [name, value] of Object.entries(values)) {
      if (filled.has(name) || !root().querySelector(`[name="${name}"]`)) continue;
      await fill(name, value);
      filled.add(name);
      now.push(name);
      progress = true;
    }
    if (!progress) break;
  }
  return now;
}

export function buttons() {
  return [...root().querySelectorAll('button')].map((b) => b.textContent.trim());
}

export async function click(text) {
  const b = [...root().querySelectorAll('button')].find((x) => x.textContent.trim() === text);
  if (!b) throw new Error(`no button "${text}" (buttons: ${buttons().join(' | ')})`);
  b.click();
  await sleep(50);
}

// Names (never values: some are TINs) of the inputs on the screen.
export function inputNames() {
  const seen = new Set();
  for (const el of root().querySelectorAll('input[name],select[name],textarea[name]')) seen.add(el.name);
  return [...seen];
}

// The validation texts shown ("Required", "Invalid", ...).
export function errors() {
  return [...root().querySelectorAll('[class*="error"]')].map((e) => e.textContent.trim())
    .filter(Boolean).join(' | ');
}

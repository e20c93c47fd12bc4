// The questionnaire under #root of the jsdom document, as a `screen` for
// walk.mjs. React tracks input values itself, so a value is set through the
// prototype's native setter and announced with the event React listens to.
import { sleep } from './walk.mjs';

const root = () => document.getElementById('root');

function setNative(el, value) {
  const proto = el.tagName === 'SELECT' ? HTMLSelectElement.prototype
    : el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, value);
}

async function fill(name, value) {
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

const buttons = () => [...root().querySelectorAll('button')].map((b) => b.textContent.trim());

// stepId: a function answering the last onProgress stepId.
export function jsdomScreen(stepId) {
  return {
    stepId,
    fill,
    buttons,
    present: (name) => Boolean(root().querySelector(`[name="${name}"]`)),
    async click(text) {
      const b = [...root().querySelectorAll('button')].find((x) => x.textContent.trim() === text);
      if (!b) throw new Error(`no button "${text}" (buttons: ${buttons().join(' | ')})`);
      b.click();
      await sleep(50);
    },
    errors: () => [...root().querySelectorAll('[class*="error"]')].map((e) => e.textContent.trim())
      .filter(Boolean).join(' | '),
    inputNames: () => [...new Set([...root().querySelectorAll('input[name],select[name],textarea[name]')]
      .map((el) => el.name))],
  };
}

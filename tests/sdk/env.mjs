// jsdom globals for react-dom in Node. Imported (for its side effects) before
// React or the SDK, which read `window` and `document` when they load.
// Node's own fetch and Headers stay: jsdom has none, and the SDK's calls must
// really leave the process.
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body><div id="root"></div></body></html>',
  { url: 'http://localhost/', pretendToBeVisual: true });
const w = dom.window;
const names = ['window', 'document', 'navigator', 'HTMLElement', 'HTMLInputElement', 'HTMLSelectElement',
  'HTMLTextAreaElement', 'HTMLButtonElement', 'Node', 'Element', 'Event', 'MouseEvent', 'KeyboardEvent',
  'FocusEvent', 'CustomEvent', 'getComputedStyle', 'requestAnimationFrame', 'cancelAnimationFrame',
  'MutationObserver'];
for (const k of names) {
  // navigator is a getter on Node 21+; define over it rather than assign
  Object.defineProperty(globalThis, k, { value: w[k], configurable: true, writable: true });
}
// React's act() is not used: the driver waits for observable states instead.
globalThis.IS_REACT_ACT_ENVIRONMENT = false;

export { dom };

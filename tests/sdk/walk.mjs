// Walks Taxbit's questionnaire from its first step to Submit, whatever drives
// the page (jsdom in run.mjs, Chromium in browser.mjs). `screen` offers:
//   stepId()            the last onProgress stepId
//   present(name)       whether an input of that name is on the screen
//   fill(name, value)   a radio's value to click, a checkbox's wanted state,
//                       a select's option, or text to type
//   buttons()           the texts of the buttons shown
//   click(text)         clicks the button with that text
//   errors()            the validation texts shown
//   inputNames()        the names of the inputs shown (never their values)
// `fields` is {inputName: value} in the order to fill: an answer may reveal
// the next question (the U.S.-person radio, the account type...), so each
// screen is filled again while new inputs appear. Every field must be shown
// at some step: one never filled means the values file tests nothing.
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function until(what, fn, ms) {
  for (const end = Date.now() + ms; Date.now() < end;) {
    const v = await fn();
    if (v) return v;
    await sleep(25);
  }
  throw new Error(`gave up waiting for ${what}`);
}

async function fillScreen(screen, fields, filled) {
  for (let round = 0; round < 6; round++) {
    let progress = false;
    for (const [name, value] of Object.entries(fields)) {
      if (filled.has(name) || !(await screen.present(name))) continue;
      await screen.fill(name, value);
      filled.add(name);
      progress = true;
    }
    if (!progress) return;
  }
}

// Fills and pages through every step, clicks Submit, and returns once
// `submitted()` resolves (it waits for onSuccess or throws).
export async function walk(screen, fields, submitted, where = {}) {
  const filled = new Set();
  for (let screens = 0; screens < 12; screens++) {
    const step = await screen.stepId();
    where.step = step;
    await fillScreen(screen, fields, filled);
    if ((await screen.buttons()).includes('Submit')) {
      await screen.click('Submit');
      await submitted();
      const unused = Object.keys(fields).filter((n) => !filled.has(n));
      if (unused.length) throw new Error(`inputs never shown: ${unused.join(', ')}`);
      return;
    }
    await screen.click('Next');
    try {
      await until('the next step', async () => (await screen.stepId()) !== step || (await screen.errors()), 5000);
    } catch (e) { /* reported below */ }
    await sleep(50);
    if ((await screen.stepId()) === step) {
      const names = await screen.inputNames();
      throw new Error(`stuck on step ${step}: ${(await screen.errors()) || 'no message'}; inputs on screen: `
        + `${names.join(', ')}; not in the values file: ${names.filter((n) => !(n in fields)).join(', ') || '-'}`);
    }
  }
  throw new Error('more than 12 screens: the questionnaire loops');
}

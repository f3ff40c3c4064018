// A presenter's clicker sends PageDown/PageUp (or the arrow keys): they press the page's Next/Previous buttons.
// __NEXT__ and __PREV__ are replaced by the buttons' keys (pages_app/common/_ui.py step_keys).
(() => {
  if (window.__bvlStepKeys) return;
  window.__bvlStepKeys = true;
  const buttons = {ArrowRight: "__NEXT__", PageDown: "__NEXT__", ArrowLeft: "__PREV__", PageUp: "__PREV__"};
  const HOLD_MS = 5000;  // a press waits this long for its button (drawn after this script) or the connection
  const connected = () => document.querySelector('[data-testid="stApp"]')
    ?.getAttribute("data-test-connection-state") === "CONNECTED";
  const ready = key => connected() ? document.querySelector(`.st-key-${key} button`) : null;
  const press = (key, until) => {
    const button = ready(key);
    if (button) { if (!button.disabled) button.click(); return; }
    if (performance.now() < until) setTimeout(() => press(key, until), 50);
  };
  document.addEventListener("keydown", event => {
    const typing = event.target.closest && event.target.closest("input, textarea, [contenteditable], [role=slider]");
    const key = buttons[event.key];
    if (!key || typing || event.altKey || event.ctrlKey || event.metaKey) return;
    if (ready(key)?.disabled) return;  // the first or last step: the key does what it does on any page (PageDown scrolls)
    event.preventDefault();
    press(key, performance.now() + HOLD_MS);
  }, true);  // capture: the app's scroll container would otherwise see the key first
})();

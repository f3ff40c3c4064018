// A presenter's clicker sends PageDown/PageUp (or the arrow keys): they press the page's Next/Previous buttons.
// __NEXT__ and __PREV__ are replaced by the buttons' keys (pages_app/common/_ui.py step_keys).
(() => {
  if (window.__bvlStepKeys) return;
  window.__bvlStepKeys = true;
  const buttons = {ArrowRight: "__NEXT__", PageDown: "__NEXT__", ArrowLeft: "__PREV__", PageUp: "__PREV__"};
  document.addEventListener("keydown", event => {
    const typing = event.target.closest && event.target.closest("input, textarea, [contenteditable], [role=slider]");
    const key = buttons[event.key];
    if (!key || typing || event.altKey || event.ctrlKey || event.metaKey) return;
    const button = document.querySelector(`.st-key-${key} button`);
    if (button && !button.disabled) { event.preventDefault(); button.click(); }
  }, true);  // capture: the app's scroll container would otherwise see the key first
})();
